#!/usr/bin/env bash
# Run on the lent GPU machine (device tool): the dissection into $OUT, from the tree, no install.
# Usage: bash scripts/device_run.sh [gpudissect run args...]
set -uo pipefail
export PYTHONPATH=src PYTHONUNBUFFERED=1 GPUDISSECT_CACHE=/tmp/gd-cache
OUT=${OUT:-out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv | tee "$OUT/nvidia-smi.txt"
python3 -m gpudissect.cli doctor 2>&1 | tee "$OUT/doctor.txt"
timeout --signal=INT "${RUN_TIMEOUT:-500}" python3 -m gpudissect.cli run --db "$OUT/gpudissect.sqlite" "$@" 2>&1 | tee "$OUT/run.log"
python3 -m gpudissect.cli export --db "$OUT/gpudissect.sqlite" -o "$OUT/export.json"
