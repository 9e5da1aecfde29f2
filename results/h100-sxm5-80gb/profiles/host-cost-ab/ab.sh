#!/bin/bash
# A/B of the host cost per call after the new runner: A = tree, B = no os._exit on retire, C = no spares
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 GPUDISSECT_CACHE=/tmp/gd-cache
mkdir -p $OUT/ab; cp -r src /tmp/srcB && sed -i 's/                os._exit(0)/                pass/' /tmp/srcB/gpudissect/worker.py
grep -n "os._exit\|                pass" /tmp/srcB/gpudissect/worker.py | head -3
run() {  # name pythonpath env...
  local name=$1 pp=$2; shift 2
  env "$@" PYTHONPATH=/tmp/site:$pp timeout 200 python3 -m gpudissect.cli run --db /tmp/$name.sqlite --bench ladder --bench vs_cublas --bench api_vs_cublas > $OUT/$name.log 2>&1
  PYTHONPATH=/tmp/site:$pp python3 -m gpudissect.cli export --db /tmp/$name.sqlite -o $OUT/ab/$name.json.gz
  for k in gemm.api.host_us_per_call gemm.api.torch_host_us_per_call gemm.api.host_us_per_call_2048; do
    v=$(PYTHONPATH=/tmp/site:$pp python3 -m gpudissect.cli show $k --db /tmp/$name.sqlite --json 2>/dev/null | python3 -c "import json,sys; d=json.load(sys.stdin); print(d[0]['value'] if isinstance(d,list) else d.get('value'))" 2>&1 | tail -1)
    echo "$name $k $v"
  done
}
PYTHONPATH=/tmp/site:src python3 -m gpudissect.cli run --db /tmp/warm.sqlite --bench ladder --bench vs_cublas --bench api_vs_cublas > $OUT/warm.log 2>&1
for i in 1 2; do
  run A$i src
  run B$i /tmp/srcB
  run C$i src GPUDISSECT_NO_SPARE=1
done
cd $OUT && tar czf ab.tgz ab *.log && rm -rf ab *.log
