#!/usr/bin/env bash
# The reliability proof on GPUs (issue 6), in one call on a machine with 2+
# GPUs and Open MPI: the NCCL backend's watchdog with a stalled rank, a rank
# killed mid-timing, SIGTERM to mpirun, and the payload-too-large refusal.
# Every run is bounded with timeout; logs and run.json files go under $OUT.
# Each step ends with a PASS or FAIL line; the last line counts them.
#   OUT=/tmp/rsag-rel scripts/gpu-reliability.sh [NP]
# BACKEND=mpi runs steps 1-3 and 5 on CPUs (a dry run of the script itself).
set -uo pipefail
np=${1:-2}
out=${OUT:-/tmp/rsag-reliability}
mkdir -p "$out"
bin=${RSAG:-}
if [ -z "$bin" ]; then
  if [ -x ./bin/rsag ]; then bin=./bin/rsag; else bin=./rsag; fi
fi
backend=${BACKEND:-nccl}
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}
mpirun=(mpirun --allow-run-as-root --bind-to none -np "$np")
[ "$(nproc)" -lt "$np" ] && mpirun+=(--oversubscribe)
pass=0 fail=0
step() { echo; echo "=== $*"; }
verdict() { # verdict NAME CONDITION-TEXT && ... ; prints PASS/FAIL
  if [ "$2" = ok ]; then echo "PASS: $1"; pass=$((pass + 1)); else echo "FAIL: $1 ($2)"; fail=$((fail + 1)); fi
}
status_of() { sed -n 's/.*"status": *"\([a-z]*\)".*/\1/p' "$1/run.json" 2>/dev/null; }
ms_since() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
# rank_pid R: the pid of this job's rsag process of rank R (Open MPI puts the
# rank in each process's environment).
rank_pid() {
  for p in $(pgrep -x "$(basename "$bin")"); do
    tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$1" && { echo "$p"; return; }
  done
}
# unfolded FILE: rsag's stderr with its folded lines joined again (rsag folds
# what it says at 120 columns, each continuation indented by two), so that a
# grep sees each message whole.
unfolded() { awk 'NR > 1 && /^  [^ ]/ { l = l " " substr($0, 3); next } NR > 1 { print l } { l = $0 } END { if (NR) print l }' "$1"; }
# wait_for FILE TEXT SECONDS: wait until FILE contains TEXT.
wait_for() {
  for _ in $(seq $(( $3 * 10 ))); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
  return 1
}

step machine
date -u; hostname; nvidia-smi -L 2>/dev/null; "$bin" -version; mpirun --version | head -1

# 1. Rank 1 is stopped from outside (SIGSTOP) in the middle of timing at
# 65536 bytes; the other waits in the NCCL collective. Within timeout_s=10
# the watchdog names the step, ncclCommAbort ends the wait ("communicator
# aborted"), the rank exits 3 and mpirun ends the job (Open MPI sends the
# stopped rank SIGCONT before its SIGTERM). Bound: 10 s + abort + launcher,
# well under 60 s from the stop.
step "watchdog: rank 1 stopped mid-timing at 65536 bytes, timeout_s=10, backend $backend"
d="$out/watchdog"; rm -rf "$d"
timeout 180 "${mpirun[@]}" -x NCCL_NVLS_ENABLE "$bin" -config configs/ch7.toml -backend "$backend" -set required_ranks="$np" \
  -set memory.enabled=false -set timeout_s=10 -set timing.cycles=50000000 -set 'timing.sizes_bytes=[65536]' \
  -output-dir "$d" >"$out/watchdog.out" 2>"$out/watchdog.err" &
job=$!
t0=$(date +%s%N)
if wait_for "$out/watchdog.out" "contracts: 5 held" 120; then
  sleep 2; victim=$(rank_pid 1); echo "stopping rank 1 (pid $victim)"; t0=$(date +%s%N); kill -STOP "$victim"
fi
wait "$job"; rc=$?; took=$(ms_since "$t0")
[ -z "${victim:-}" ] || kill -KILL "$victim" 2>/dev/null # should the launcher have left it stopped
cat "$out/watchdog.err"; cat "$d/run.json" 2>/dev/null
echo "exit $rc, $took ms after the stop"
why=ok
[ -n "${victim:-}" ] || why="rank 1 not found or the run never reached timing"
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || why="exit $rc"
grep -Eq 'watchdog: timing [a-z +-]+( at 65536 bytes)? did not finish within 10s \(waited [0-9.]+s\); aborting the job' <(unfolded "$out/watchdog.err") || why="no watchdog message"
[ "$backend" != nccl ] || grep -q "communicator aborted" <(unfolded "$out/watchdog.err") || why="no ncclCommAbort on the waiting rank"
[ "$(status_of "$d")" = failed ] || why="run.json status '$(status_of "$d")'"
[ "$took" -lt 60000 ] || why="took $took ms"
verdict "watchdog fires on a stopped rank, names the timing step at 65536 bytes, aborts NCCL, exits non-zero" "$why"

# 2. SIGKILL of rank 1 in the middle of NCCL timing: mpirun ends the job at
# once; run.json must not say complete.
step "SIGKILL of rank 1 mid-timing, backend $backend"
d="$out/kill"; rm -rf "$d"
timeout 180 "${mpirun[@]}" -x NCCL_NVLS_ENABLE "$bin" -config configs/smoke.toml -backend "$backend" -set timing.cycles=50000000 \
  -set 'timing.sizes_bytes=[1048576]' -set memory.enabled=false -output-dir "$d" >"$out/kill.out" 2>"$out/kill.err" &
job=$!
if wait_for "$out/kill.out" "contracts: 5 held" 120; then
  sleep 2; victim=$(rank_pid 1); echo "killing rank 1 (pid $victim)"; t0=$(date +%s%N); kill -KILL "$victim"
fi
wait "$job"; rc=$?; took=$(ms_since "${t0:-$(date +%s%N)}")
tail -5 "$out/kill.err"; cat "$d/run.json" 2>/dev/null
echo "exit $rc, $took ms after the kill"
why=ok
[ -n "${victim:-}" ] || why="rank 1 not found or the run never reached timing"
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || why="exit $rc"
[ "$(status_of "$d")" != complete ] || why="run.json says complete"
[ "$took" -lt 30000 ] || why="took $took ms"
verdict "a killed rank ends the NCCL job promptly, non-zero, nothing claims completeness" "$why"

# 3. SIGTERM to mpirun (Slurm's time limit, scancel): every rank stops,
# run.json says failed with reason "signal SIGTERM".
step "SIGTERM to mpirun mid-timing, backend $backend"
d="$out/term"; rm -rf "$d"
timeout 180 "${mpirun[@]}" -x NCCL_NVLS_ENABLE "$bin" -config configs/smoke.toml -backend "$backend" -set timing.cycles=50000000 \
  -set 'timing.sizes_bytes=[1048576]' -set memory.enabled=false -output-dir "$d" >"$out/term.out" 2>"$out/term.err" &
job=$!
t0=$(date +%s%N)
if wait_for "$out/term.out" "contracts: 5 held" 120; then
  sleep 2; mp=$(pgrep -P "$job" -x mpirun || echo "$job"); echo "SIGTERM to mpirun (pid $mp)"; t0=$(date +%s%N); kill -TERM "$mp"
fi
wait "$job"; rc=$?; took=$(ms_since "$t0")
tail -6 "$out/term.err"; cat "$d/run.json" 2>/dev/null
echo "exit $rc, $took ms after SIGTERM"
why=ok
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || why="exit $rc"
[ "$(status_of "$d")" = failed ] && grep -q '"reason": "signal SIGTERM"' "$d/run.json" || why="run.json is not failed/signal SIGTERM"
[ "$took" -lt 30000 ] || why="took $took ms"
verdict "SIGTERM stops the NCCL job cleanly: failed, signal SIGTERM, non-zero" "$why"

# 4. A payload larger than free device memory is refused on every rank
# before any collective, and the output dir gets nothing.
if [ "$backend" = nccl ]; then
step "payload too large (400G), backend $backend"
d="$out/big"; rm -rf "$d"
timeout 120 "${mpirun[@]}" -x NCCL_NVLS_ENABLE "$bin" -config configs/smoke.toml -backend "$backend" -set 'memory.payload_bytes="400G"' \
  -set timing.enabled=false -output-dir "$d" >"$out/big.out" 2>"$out/big.err"
rc=$?
grep "^rsag:" <(unfolded "$out/big.err"); echo "exit $rc"; ls -A "$d" 2>/dev/null
why=ok
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || why="exit $rc"
[ "$(grep -c 'payload too large on rank(s)' <(unfolded "$out/big.err"))" -ge "$np" ] || why="not every rank named the payload"
[ ! -e "$d/run.json" ] || why="run.json was written for a refused input"
verdict "payload too large: refused on every rank, nothing written" "$why"
fi

# 5. Results are never overwritten silently; -overwrite replaces them.
step "second run into the same dir, then -overwrite, backend $backend"
d="$out/again"; rm -rf "$d"
args=("$bin" -config configs/smoke.toml -backend "$backend" -output-dir "$d")
timeout 120 "${mpirun[@]}" -x NCCL_NVLS_ENABLE "${args[@]}" >/dev/null 2>"$out/again1.err"; rc1=$?
timeout 120 "${mpirun[@]}" -x NCCL_NVLS_ENABLE "${args[@]}" >/dev/null 2>"$out/again2.err"; rc2=$?
timeout 120 "${mpirun[@]}" -x NCCL_NVLS_ENABLE "${args[@]}" -overwrite >/dev/null 2>"$out/again3.err"; rc3=$?
grep "^rsag:" "$out/again2.err"; echo "exits $rc1 $rc2 $rc3"
why=ok
[ "$rc1" = 0 ] && [ "$rc2" != 0 ] && [ "$rc3" = 0 ] || why="exits $rc1 $rc2 $rc3, want 0, non-zero, 0"
grep -q "already holds results of an earlier run" "$out/again2.err" || why="no refusal message"
[ "$(status_of "$d")" = complete ] || why="run.json after -overwrite: '$(status_of "$d")'"
verdict "an earlier run's results are refused without -overwrite and replaced with it" "$why"

step "GPU processes left over (should be none)"
nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv 2>/dev/null || echo "no nvidia-smi"

echo; echo "reliability on $np GPUs: $pass passed, $fail failed"
[ "$fail" = 0 ]
