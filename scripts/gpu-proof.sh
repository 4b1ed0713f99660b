#!/usr/bin/env bash
# The GPU proof behind docs/PERFORMANCE.md, in one call on a machine with 2+
# GPUs: the seed's run (configs/ch7.toml on NP ranks) timed end to end, then
# the bad-input paths that only a GPU machine can show. Writes under OUT.
#   scripts/gpu-proof.sh [NP]
set -uo pipefail
np=${1:-2}
out=${OUT:-/tmp/rsag-proof}
mkdir -p "$out"
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}
mpirun=(mpirun --allow-run-as-root --bind-to none)
step() { echo; echo "=== $*"; }

step machine
date -u; hostname; nvidia-smi -L; nvidia-smi topo -m; ./rsag -version; mpirun --version | head -1

for i in 1 2 3; do
  step "ch7 run $i: $np ranks, default sizes"
  rm -rf "$out/ch7-$i"
  start=$(date +%s%N)
  timeout 300 "${mpirun[@]}" -np "$np" ./rsag -config configs/ch7.toml -set required_ranks="$np" -output-dir "$out/ch7-$i"
  rc=$?
  end=$(date +%s%N)
  echo "ch7 run $i: exit $rc, wall $(( (end - start) / 1000000 )) ms"
done

step "symbols bound at load (LD_BIND_NOW=1), smoke config on nccl"
LD_BIND_NOW=1 timeout 120 "${mpirun[@]}" -np "$np" ./rsag -config configs/smoke.toml -backend nccl -output-dir "$out/smoke" | tail -3

step "bad input: payload larger than free device memory"
timeout 120 "${mpirun[@]}" -np "$np" ./rsag -config configs/smoke.toml -backend nccl -set 'memory.payload_bytes="400G"' -set timing.enabled=false -output-dir "$out/big"; echo "exit $?"

step "bad input: more ranks than GPUs"
timeout 120 "${mpirun[@]}" --oversubscribe -np $((np + 1)) ./rsag -config configs/smoke.toml -backend nccl -output-dir "$out/over"; echo "exit $?"

step "bad input: RSAG_NCCL_LIBRARY names a missing file"
timeout 120 "${mpirun[@]}" -np "$np" -x RSAG_NCCL_LIBRARY=/nonexistent/libnccl.so.2 ./rsag -config configs/smoke.toml -backend nccl -output-dir "$out/nolib"; echo "exit $?"

tar czf "$out/results.tgz" -C "$out" ch7-1 ch7-2 ch7-3 smoke 2>/dev/null
rm -rf "$out"/ch7-* "$out/smoke" "$out/big" "$out/over" "$out/nolib"
