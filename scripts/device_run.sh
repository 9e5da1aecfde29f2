#!/usr/bin/env bash
# Run on the lent GPU machine (device tool): the dissection into $OUT, from the tree, no install.
# Usage: NAME=quick bash scripts/device_run.sh [gpudissect run args...]
set -uo pipefail
export PYTHONPATH=src PYTHONUNBUFFERED=1 GPUDISSECT_CACHE=${GPUDISSECT_CACHE:-/tmp/gd-cache}
# the lent machine has no package index: dependencies it lacks (pydantic) travel as wheels in .whl/
# (carry .whl; see the device tool's README for how they are downloaded)
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site:src
fi
OUT=${OUT:-out}; NAME=${NAME:-run}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv > "$OUT/nvidia-smi.txt"
[ -f "$OUT/doctor.txt" ] || python3 -m gpudissect.cli doctor > "$OUT/doctor.txt" 2>&1
timeout --signal=INT "${RUN_TIMEOUT:-500}" python3 -m gpudissect.cli run --db "/tmp/$NAME.sqlite" "$@" 2>&1 | tee "$OUT/$NAME.log"
python3 -m gpudissect.cli export --db "/tmp/$NAME.sqlite" -o "$OUT/$NAME.json.gz"  # gzip: the device tool returns files of 16 MiB at most
