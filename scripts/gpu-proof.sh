#!/usr/bin/env bash
# The GPU proof behind docs/PERFORMANCE.md ("one shared GPU"), in one call on
# any machine with one GPU (or more): NP ranks (default 4) share GPU 0 in
# rsag's shared mode (gpu.sharing = true: each rank its own NCCL_HOSTID, NCCL
# over sockets on lo), and run
#   - why small collectives are slow there: 4 KiB and 64 KiB per-op, with the
#     GPU time-sliced between the ranks' processes (the default), with
#     RSAG_WAIT=block, and under CUDA's MPS (kernels of every rank at once);
#   - configs/ch7.toml: contracts, timing, the five memory modes;
#   - the soak (configs/soak.toml, SOAK_S seconds);
#   - every NCCL dtype and op at a small size, all three timing methods
#     (configs/sweep.toml at 4 KiB, fewer cycles);
#   - the hierarchy (configs/hierarchy.toml, groups of 2);
#   - a rank stopped (SIGSTOP) in the soak's collectives: the job must end
#     (timeout_s 20) naming it, leave no process behind, and the next run
#     must start clean;
#   - the GPU's own faults, through ncclx/testdata/ncclfault.c (FAULTLIB,
#     built against libnccl.so.2; built here with gcc when absent) in place
#     of NCCL: one rank's ReduceScatter
#     output corrupted, a rank stopped inside an AllReduce, a rank slowed
#     (locate), and the soak clean with the injector loaded.
#   - side by side (PIECES=sidebyside), ROUNDS rounds, each running both
#     tools one after the other: nccl-tests' all_reduce_perf and
#     reduce_scatter_perf (NCCL_TESTS: its source, built here with nvcc
#     against the NCCL rsag loads) beside rsag's batched method, and the
#     seed (SEED: ch7_allreduce_vs_rsag.py, started by mpirun, each rank
#     LOCAL_RANK=0 and its own NCCL_HOSTID) beside rsag's per-op ch7;
#     sidebyside.txt gets the medians of the paired ratios.
# PIECES picks: "proof faults" (the default), "sidebyside", or any of them.
# SHARE picks how the ranks share the GPU for the last four: mps (CUDA's MPS,
# started here with a pipe directory of its own, and stopped at the end),
# timeslice (the driver's default), or auto (the default: mps when the MPS
# probe above passed). Writes proof.log, results.tgz and table.txt under OUT.
# Each launch has a time limit; the whole has BUDGET_S (540 s).
#   RSAG=gpubin/rsag OUT=/tmp/proof scripts/gpu-proof.sh [NP]
set -uo pipefail
np=${1:-4}
out=${OUT:-/tmp/rsag-proof}
rsag=${RSAG:-./rsag}
share=${SHARE:-auto}
soak_s=${SOAK_S:-20}
budget=${BUDGET_S:-540} # the whole script's seconds: a step that cannot fit is skipped, and says so
began=$(date +%s)
mkdir -p "$out/runs"
exec > >(tee -a "$out/proof.log") 2>&1
export NCCL_NVLS_ENABLE=0 # NVLink multicast stays off on shared machines (KINDS.md)
mpirun=(mpirun --allow-run-as-root --bind-to none --oversubscribe -x NCCL_NVLS_ENABLE)
shared=(-set gpu.sharing=true)
table="$out/table.txt"
: >"$table"
step() { echo; echo "=== $(date -u +%T) $*"; }

# If the loader cannot find NCCL, take the one PyTorch's wheel brings.
if ! ldconfig -p | grep -q 'libnccl\.so\.2 ' && [ -z "${RSAG_NCCL_LIBRARY:-}" ]; then
  lib=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib", "libnccl.so.2"))' 2>/dev/null)
  [ -n "$lib" ] && [ -e "$lib" ] && export RSAG_NCCL_LIBRARY=$lib
fi
[ -n "${RSAG_NCCL_LIBRARY:-}" ] && mpirun+=(-x RSAG_NCCL_LIBRARY)

# medians FILE: per-op direct AllReduce and ReduceScatter medians by size, us.
medians() {
  python3 - "$1" <<'EOF' 2>/dev/null || echo "  (no summary.json)"
import json, sys
d = json.load(open(sys.argv[1]))
print("  gpu_shared:", d.get("gpu_shared", "(absent)"))
for t in d["timing"]:
    if (t["method"], t["placement"], t["dtype"], t["op"]) == ("per-op", "out-of-place", "float32", "sum") \
            and t["mode"] in ("direct", "decomposed"):
        print(f"  {t['run']:>8} {t['mode']:>11} {t['size_bytes']:>10} B  median {t['median_us']:>11.1f} us  "
              f"p90 {t['p90_us']:>11.1f}  samples {t['samples']}")
EOF
}

# run NAME TIMEOUT ENV... -- ARGS...: one rsag launch on np ranks, timed,
# its output dir kept for results.tgz; its line goes into the table.
run() {
  local name=$1 limit=$2
  shift 2
  local left=$(( began + budget - $(date +%s) - 15 ))
  if [ "$left" -lt 30 ]; then
    echo "$name: skipped, $left s left of BUDGET_S=$budget" | tee -a "$table"
    return 124
  fi
  [ "$limit" -gt "$left" ] && limit=$left
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  local xs=()
  for kv in "${envs[@]}"; do xs+=(-x "${kv%%=*}"); done
  step "$name: ${envs[*]} $rsag $*"
  rm -rf "$out/runs/$name"
  local start end rc
  start=$(date +%s%N)
  env "${envs[@]}" timeout -k 10 "$limit" "${mpirun[@]}" "${mps_x[@]}" "${xs[@]}" -np "$np" "$rsag" "$@" -output-dir "$out/runs/$name"
  rc=$?
  end=$(date +%s%N)
  local wall=$(( (end - start) / 1000000 ))
  echo "$name: exit $rc, wall $wall ms"
  printf '%-22s exit %3d  wall %8d ms  %s\n' "$name" "$rc" "$wall" "${envs[*]}" >>"$table"
  [ -f "$out/runs/$name/summary.json" ] && medians "$out/runs/$name/summary.json" | tee -a "$table"
  # Nothing of the run may stay on the GPU.
  sleep 1
  echo "$name: rsag processes left: $(pgrep -c -x rsag); on the GPU (MPS's server aside): $(nvidia-smi \
    --query-compute-apps=process_name --format=csv,noheader | grep -v mps-server | grep -c .)" | tee -a "$table"
  return $rc
}

mps_x=()
mps_dir=$(mktemp -d /tmp/rsag-mps.XXXXXX)
mps_start() {
  command -v nvidia-cuda-mps-control >/dev/null || { echo "no nvidia-cuda-mps-control here"; return 1; }
  export CUDA_MPS_PIPE_DIRECTORY=$mps_dir/pipe CUDA_MPS_LOG_DIRECTORY=$mps_dir/log
  mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
  nvidia-cuda-mps-control -d || return 1
  mps_x=(-x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY)
  sleep 1
  echo "MPS control daemon started (pipe $CUDA_MPS_PIPE_DIRECTORY)"
}
mps_stop() {
  [ -n "${CUDA_MPS_PIPE_DIRECTORY:-}" ] || return 0
  echo quit | nvidia-cuda-mps-control
  sleep 1
  unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
  mps_x=()
  cp -r "$mps_dir/log" "$out/runs/mps-log" 2>/dev/null
}
finish() {
  mps_stop
  tar czf "$out/results.tgz" -C "$out" runs 2>/dev/null
  rm -rf "$out/runs" "$mps_dir"
  step "table"
  cat "$table"
}
trap finish EXIT

step machine
date -u; hostname; nproc; nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,compute_mode,memory.total --format=csv
"$rsag" -version; mpirun --version | head -1; echo "RSAG_NCCL_LIBRARY=${RSAG_NCCL_LIBRARY:-unset: the loader finds libnccl.so.2}"

want() { [[ " ${PIECES:-proof faults} " == *" $1 "* ]]; }

# Why small collectives are slow on a shared GPU: per-op AllReduce and
# ReduceScatter + AllGather at 4 and 64 KiB, 1 warm-up and 3 cycles.
small=(-config configs/ch7.toml "${shared[@]}" -set required_ranks="$np" -set contracts.enabled=false
  -set memory.enabled=false -set 'timing.sizes_bytes=[4096,65536]' -set timing.warmups=1 -set timing.cycles=3)
mps_ok=false
if want proof; then
  run why-timeslice 90 RSAG_WAIT=poll -- "${small[@]}"
  run why-block 90 RSAG_WAIT=block -- "${small[@]}"
  if mps_start; then
    run why-mps 90 RSAG_WAIT=poll -- "${small[@]}" && mps_ok=true
    mps_stop
  fi
elif [ "$share" = auto ]; then
  mps_ok=true # no probe asked for: MPS where it starts
fi
if [ "$share" = mps ] || { [ "$share" = auto ] && $mps_ok; }; then
  mps_start && share=mps
else
  share=timeslice
fi
echo "the ranks share the GPU by: $share" | tee -a "$table"

if want proof; then
  run ch7 240 RSAG_WAIT=poll -- -config configs/ch7.toml "${shared[@]}" -set required_ranks="$np"
  run soak 180 RSAG_WAIT=poll -- -config configs/soak.toml "${shared[@]}" -set soak.duration_s="$soak_s"
  # Every NCCL dtype and op (configs/sweep.toml's three runs) at 4 KiB, both
  # placements, per-op, batched and graph; numerics at 4 KiB.
  run sweep 300 RSAG_WAIT=poll -- -config configs/sweep.toml "${shared[@]}" -set 'timing.sizes_bytes=["4K"]' \
    -set 'run.nccl-tests.sizes_bytes=["4K"]' -set timing.warmups=1 -set timing.cycles=2 -set run.nccl-tests.cycles=2 \
    -set timing.batch=2 -set timing.discard=0 -set 'numerics.sizes_bytes=["4K"]'
  run hierarchy 240 RSAG_WAIT=poll -- -config configs/hierarchy.toml "${shared[@]}" -set hierarchy.group_size=2
fi

# said NAME PATTERN: what the last run said that matches, into the table;
# rsag's folded lines (at 120 columns, each continuation indented by two)
# joined again, so that a message is matched and shown whole.
said() {
  echo "$1: it said:" >>"$table"
  sed -n "/=== .* $1: /,\$p" "$out/proof.log" |
    awk 'NR > 1 && /^  [^ ]/ { l = l " " substr($0, 3); next } NR > 1 { print l } { l = $0 } END { if (NR) print l }' |
    grep -E "$2" | head -4 | cut -c1-400 | tee -a "$table"
}

# gone PID: a process the job left behind is named and killed.
gone() {
  if [ -n "$1" ] && kill -0 "$1" 2>/dev/null; then
    echo "pid $1 ($(ps -o stat= -p "$1")) was still there after the job: killed" | tee -a "$table"
    kill -KILL "$1"
  fi
}

# A rank stopped inside the soak's collectives (SIGSTOP to the second rsag
# process 8 s in): the job ends, naming it.
stop_a_rank() {
  run stopped 150 RSAG_WAIT=poll -- -config configs/soak.toml "${shared[@]}" -set soak.duration_s=60 -set timeout_s=20 &
  local bg=$! victim=
  for _ in $(seq 40); do
    sleep 0.5
    [ "$(pgrep -c -x rsag)" -ge "$np" ] && break
  done
  sleep 8
  victim=$(pgrep -x rsag | sort -n | sed -n 2p)
  echo "stopping rsag pid $victim at $(date -u +%T)"
  [ -n "$victim" ] && kill -STOP "$victim"
  wait $bg
  said stopped "^rsag: "
  gone "$victim"
}

# The GPU's own faults, from outside rsag: FAULTLIB (ncclx/testdata/ncclfault.c,
# built against libnccl.so.2) stands in for NCCL and passes every call on.
faultlib=${FAULTLIB:-gpubin/libncclfault.so}
faults() {
  local lib=(RSAG_NCCL_LIBRARY="$(realpath "$faultlib")")
  # One rank's ReduceScatter output, one element, in one soak iteration.
  run corrupt 120 RSAG_WAIT=poll "${lib[@]}" NCCL_FAULT=corrupt NCCL_FAULT_COLL=ncclReduceScatter NCCL_FAULT_RANK=2 \
    NCCL_FAULT_AT=40 NCCL_FAULT_ELEMENT=3 -- -config configs/soak.toml "${shared[@]}" -set soak.duration_s="$soak_s"
  said corrupt "^(rsag: |ncclfault)"
  # A rank that stops (SIGSTOP) inside its 100th AllReduce.
  run nccl-stop 120 RSAG_WAIT=poll "${lib[@]}" NCCL_FAULT=stop NCCL_FAULT_COLL=ncclAllReduce NCCL_FAULT_RANK=1 \
    NCCL_FAULT_AT=100 -- -config configs/soak.toml "${shared[@]}" -set soak.duration_s=60 -set timeout_s=20
  said nccl-stop "^(rsag: |ncclfault)"
  gone "$(sed -n '/=== .* nccl-stop: /,$p' "$out/proof.log" | grep -o -m1 'ncclfault: pid [0-9]*' | grep -o '[0-9]*$')"
  run after-nccl-stop 60 RSAG_WAIT=poll -- "${small[@]}" # the next run starts clean
  # A rank whose collectives are slowed (5 ms before each): locate's rank pairs.
  run locate-slow 150 RSAG_WAIT=poll "${lib[@]}" NCCL_FAULT=slow NCCL_FAULT_RANK=3 NCCL_FAULT_SLOW_US=5000 -- \
    -config configs/locate.toml "${shared[@]}"
  said locate-slow "(^rsag: |suspect|slow|inconclusive)"
  # And with the injector loaded but no fault asked for, nothing is named.
  run clean-soak 120 RSAG_WAIT=poll "${lib[@]}" -- -config configs/soak.toml "${shared[@]}" -set soak.duration_s="$soak_s"
}

# Side by side: each round runs the peer, then rsag, at the same sizes,
# on the same shared GPU; sidebyside.py pairs them.
sidebyside() {
  local src=${NCCL_TESTS:-gpubin/nccl-tests} seed=${SEED:-gpubin/seed/ch7_allreduce_vs_rsag.py} rounds=${ROUNDS:-5}
  local sizes=(4096 65536 1048576 16777216) dir=$out/sidebyside
  mkdir -p "$dir"
  local nccl=${RSAG_NCCL_LIBRARY:-$(ldconfig -p | awk '/libnccl\.so\.2 /{print $NF; exit}')}
  nccl=$(realpath "$nccl")
  # nccl-tests links -lnccl and includes nccl.h: a home of links to this NCCL.
  local home=$mps_dir/nccl-home mpihome=$mps_dir/mpi-home bin=$mps_dir/nccl-tests
  mkdir -p "$home/lib" "$mpihome"
  ln -sf "$nccl" "$home/lib/libnccl.so"
  local inc
  for inc in "$(dirname "$nccl")/../include" /usr/include /usr/local/cuda/include; do
    [ -f "$inc/nccl.h" ] && break
  done
  ln -sfn "$(realpath "$inc")" "$home/include"
  ln -sfn "$(mpicc --showme:incdirs | cut -d' ' -f1)" "$mpihome/include"
  ln -sfn "$(mpicc --showme:libdirs | cut -d' ' -f1)" "$mpihome/lib"
  step "building nccl-tests from $src against $nccl ($inc/nccl.h)"
  if [ ! -d "$src/src" ] || ! make -s -C "$src/src" -j"$(nproc)" MPI=1 MPI_HOME="$mpihome" NCCL_HOME="$home" \
      NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" BUILDDIR="$bin" "$bin/all_reduce_perf" "$bin/reduce_scatter_perf"; then
    echo "sidebyside: nccl-tests did not build from $src: not run" | tee -a "$table"
    return 1
  fi
  local list
  list=$(IFS=,; echo "${sizes[*]}")
  # Every rank its own NCCL host id and GPU 0, as rsag's shared mode gives them.
  local own=(sh -c 'NCCL_HOSTID=sbs-$OMPI_COMM_WORLD_RANK exec "$@"' sh)
  local peer=("${mpirun[@]}" "${mps_x[@]}" -x NCCL_SOCKET_IFNAME=lo -x NCCL_TESTS_DEVICE=0 -np "$np")
  local r
  for r in $(seq "$rounds"); do
    for coll in all_reduce reduce_scatter; do
      step "round $r: nccl-tests ${coll}_perf"
      timeout -k 10 120 "${peer[@]}" "${own[@]}" "$bin/${coll}_perf" -b 4K -e 16M -f 16 -g 1 -w 20 -n 200 -c 0 \
        >"$dir/nt-$coll-$r.txt" 2>&1 || echo "round $r: ${coll}_perf exit $?" | tee -a "$table"
    done
    # rsag's batched loop, 10 samples of 20 operations: the same 200.
    run "rsag-batched-$r" 180 RSAG_WAIT=poll -- -config configs/ch7.toml "${shared[@]}" -set required_ranks="$np" \
      -set contracts.enabled=false -set memory.enabled=false -set "timing.sizes_bytes=[$list]" \
      -set 'timing.methods=["batched"]' -set 'timing.modes=["direct","reduce-scatter"]' -set timing.batch=20 \
      -set timing.warmups=1 -set timing.cycles=10
    cp "$out/runs/rsag-batched-$r/summary.json" "$dir/rsag-batched-$r.json" 2>/dev/null
    # And 5 samples of 200 back-to-back operations: nccl-tests' -n 200 between two syncs.
    run "rsag-batched200-$r" 180 RSAG_WAIT=poll -- -config configs/ch7.toml "${shared[@]}" -set required_ranks="$np" \
      -set contracts.enabled=false -set memory.enabled=false -set "timing.sizes_bytes=[$list]" \
      -set 'timing.methods=["batched"]' -set 'timing.modes=["direct","reduce-scatter"]' -set timing.batch=200 \
      -set timing.warmups=1 -set timing.cycles=5
    cp "$out/runs/rsag-batched200-$r/summary.json" "$dir/rsag-batched200-$r.json" 2>/dev/null
    if [ -f "$seed" ]; then
      step "round $r: the seed"
      rm -rf "$dir/seed-$r"
      timeout -k 10 240 "${peer[@]}" -x MASTER_ADDR=127.0.0.1 -x MASTER_PORT=$((29500 + r)) -x LOCAL_RANK=0 \
        sh -c 'RANK=$OMPI_COMM_WORLD_RANK WORLD_SIZE=$OMPI_COMM_WORLD_SIZE NCCL_HOSTID=seed-$OMPI_COMM_WORLD_RANK exec "$@"' sh \
        python3 "$seed" --output-dir "$dir/seed-$r" --sizes-bytes "$list" --warmups 3 --cycles 10 \
        >"$dir/seed-$r.log" 2>&1 || echo "round $r: the seed exit $? ($(tail -1 "$dir/seed-$r.log"))" | tee -a "$table"
      run "rsag-ch7-$r" 240 RSAG_WAIT=poll -- -config configs/ch7.toml "${shared[@]}" -set required_ranks="$np" \
        -set "timing.sizes_bytes=[$list]"
      mkdir -p "$dir/rsag-ch7-$r" && cp "$out/runs/rsag-ch7-$r"/rank*_*.csv "$dir/rsag-ch7-$r/" 2>/dev/null
    fi
  done
  python3 scripts/sidebyside.py "$dir" "$rounds" | tee "$out/sidebyside.txt" | tee -a "$table"
}

if want sidebyside; then
  sidebyside
fi
if want proof; then
  stop_a_rank
  run after-stop 60 RSAG_WAIT=poll -- "${small[@]}"
fi
if want faults; then
  if [ ! -f "$faultlib" ] && command -v gcc >/dev/null; then
    # Built here against the NCCL rsag loads (its soname, and its directory on the run path).
    real=${RSAG_NCCL_LIBRARY:-$(ldconfig -p | awk '/libnccl\.so\.2 /{print $NF; exit}')}
    faultlib=$mps_dir/libncclfault.so
    gcc -shared -fPIC -O2 -o "$faultlib" ncclx/testdata/ncclfault.c -ldl -Wl,--no-as-needed "$real" \
      -Wl,-rpath,"$(dirname "$(realpath "$real")")" && echo "built $faultlib against $real"
  fi
  if [ -f "$faultlib" ]; then faults; else echo "faults: no $faultlib, not run" | tee -a "$table"; fi
fi
