#!/usr/bin/env bash
# Run on a lent multi-GPU machine (device tool): the GPUs' topology, the link suite between them,
# every GPU dissected by its own process (run --gpus all) and through torchrun (cluster path), and
# the per-GPU deviation table; everything packed into $OUT/$NAME.tgz (the tool returns 8 files at most).
# Usage: NAME=link-x2 [MODE=--full] [FLEET_BENCH="bandwidth wgmma_power"] bash scripts/device_run_gpus.sh
set -uo pipefail
export PYTHONPATH=src PYTHONUNBUFFERED=1 GPUDISSECT_CACHE=/tmp/gd-cache
# the lent machine has no package index: dependencies it lacks (pydantic) travel as wheels in .whl/
# (carry .whl; see the device tool's README for how they are downloaded)
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site:src
fi
# NVLink multicast stays off (KINDS.md): a program using it can take the host's shared GPUs down.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
OUT=${OUT:-out}; NAME=${NAME:-link-multi}; MODE=${MODE:-}
STAGE=$(mktemp -d); mkdir -p "$OUT"
FLEET_BENCH=${FLEET_BENCH:-bandwidth wgmma_power}
benches=(); for b in $FLEET_BENCH; do benches+=(--bench "$b"); done
gd() { python3 -m gpudissect.cli "$@"; }

{ nvidia-smi -L; nvidia-smi topo -m; nvidia-smi nvlink -s; nvidia-smi -q -d CLOCK,POWER; } > "$STAGE/topology.txt" 2>&1
gd doctor > "$STAGE/doctor.txt" 2>&1

# 1. between the GPUs: the link suite in one process that sees them all
timeout --signal=INT "${LINK_TIMEOUT:-300}" python3 -m gpudissect.cli run --db /tmp/link.sqlite --suite link $MODE 2>&1 \
  | tee "$STAGE/$NAME.log"
gd export --db /tmp/link.sqlite -o "$STAGE/$NAME.json"

# 2. every GPU by its own process, one store, one group; then which GPU deviates
timeout --signal=INT "${FLEET_TIMEOUT:-150}" python3 -m gpudissect.cli run --gpus all "${benches[@]}" --db /tmp/fleet.sqlite 2>&1 \
  | tee "$STAGE/fleet.log"
group=$(gd runs --db /tmp/fleet.sqlite --json | python3 -c "import json,sys; r=json.load(sys.stdin); print(r[0]['selection']['group'] if r else '')")
gd compare --gpus "$group" --db /tmp/fleet.sqlite > "$STAGE/fleet-compare.md" 2>&1
for id in $(gd runs --db /tmp/fleet.sqlite --json | python3 -c "import json,sys; print(' '.join(str(r['id']) for r in json.load(sys.stdin)))"); do
  gd export "$id" --db /tmp/fleet.sqlite -o "$STAGE/fleet-run$id.json"
done

# 3. the cluster path: torchrun, a rank per GPU, rank 0 gathers into one store
ngpu=$(nvidia-smi -L | wc -l)
timeout --signal=INT "${TORCHRUN_TIMEOUT:-120}" python3 -m torch.distributed.run --standalone --nproc-per-node "$ngpu" \
  -m gpudissect.cluster "${benches[@]}" --db /tmp/cluster.sqlite --group torchrun-x"$ngpu" > "$STAGE/torchrun.log" 2>&1
gd compare --gpus torchrun-x"$ngpu" --db /tmp/cluster.sqlite >> "$STAGE/torchrun.log" 2>&1

tar czf "$OUT/$NAME.tgz" -C "$STAGE" .
