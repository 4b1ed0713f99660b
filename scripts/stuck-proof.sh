#!/usr/bin/env bash
# The time-to-name proof behind docs/failure-behaviour.md ("A stuck rank is
# named early"), for a machine with many cores and no Go: a prebuilt rsag
# ($RSAG), Open MPI's mpirun, mpicc (for e2e/testdata/spin.c) and bash 5. No
# GPU: the MPI backend. NP ranks (default 16) on this host, timeout_s = 180
# unless TIMEOUT_S says otherwise. Pieces (PIECES picks, in this order):
#   stop   SIGSTOP of one random non-zero rank a second or two into timing
#          (STOP_RUNS runs, default 20) and into the soak (as many), with
#          end_on_stuck_rank on: seconds from the kill to the first line
#          that names the rank and its pid, and to the job's end; and
#          whether run.json, summary.json, junit.xml and rsag.prom say why
#   kill   SIGKILL of one random non-zero rank in timing (KILL_RUNS, 5)
#   spin   one random non-zero rank spins after an MPI_Allreduce in timing
#          (e2e/testdata/spin.c), alive, its heartbeat fresh, never reaching
#          the next collective (SPIN_RUNS, 5); a run not ended SPIN_CAP_S
#          (40) after the spin began is ended here, and says so
#   rank0  rank 0 stopped in timing, in the soak and in locate (RANK0_RUNS
#          each, 5): named every time (issue 57, item 4)
#   clean  CLEAN_RUNS (20) clean runs beside a CPU hog (HOG busy `yes`
#          processes, default NP, killed after): any early naming is false
# Every line of every launch is stamped with the time it came ($EPOCHREALTIME)
# into OUT/runs/*.log. OUT/stuck.txt gets the table (fault, phase, runs,
# named, p50 and p95 seconds to name, p50 to the end, what the outputs say),
# one raw line a run and the naming lines; OUT/runs.tgz, every run's stamped
# log and dir.
# Each launch runs under `timeout`; the whole has BUDGET_S (520 s): a run that
# cannot fit is skipped, and stuck.txt says so. Two calls of the 16-rank proof:
#   RSAG=/path/rsag OUT=/tmp/stuck PIECES="stop kill" scripts/stuck-proof.sh
#   RSAG=/path/rsag OUT=/tmp/stuck PIECES="spin rank0 clean" scripts/stuck-proof.sh
# (the second adds to the first's stuck.txt when OUT is kept between them). Locally,
# e.g. NP=4 STOP_RUNS=2 KILL_RUNS=1 SPIN_RUNS=1 RANK0_RUNS=1 CLEAN_RUNS=2.
set -uo pipefail
export LC_ALL=C
np=${NP:-16}
out=${OUT:-/tmp/rsag-stuck-proof}
rsag=${RSAG:-./rsag}
pieces=${PIECES:-stop kill spin rank0 clean}
timeout_s=${TIMEOUT_S:-180}
budget=${BUDGET_S:-520}
here=$(cd "$(dirname "$0")/.." && pwd)
configs=$here/configs
began=$(date +%s)
mkdir -p "$out/runs"
raw="$out/raw.txt"   # every piece's per-run lines, kept across calls
touch "$raw"
if [ "${BASH_VERSINFO[0]}" -lt 5 ]; then echo "stuck-proof.sh: needs bash 5 (EPOCHREALTIME)" >&2; exit 2; fi
command -v mpirun >/dev/null || { echo "stuck-proof.sh: no mpirun" >&2; exit 2; }
[ -x "$rsag" ] || { echo "stuck-proof.sh: RSAG=$rsag is not an executable" >&2; exit 2; }
mpirun=(mpirun --bind-to none -np "$np")
[ "$(id -u)" = 0 ] && mpirun+=(--allow-run-as-root)
mpirun+=(--oversubscribe)
say() { echo "$(date -u +%T) $*" | tee -a "$out/stuck.log"; }

left() { echo $((budget - ($(date +%s) - began))); }

# stamp: every line of stdin with the time it came.
stamp() { local l; while IFS= read -r l; do printf '%s %s\n' "$EPOCHREALTIME" "$l"; done; }
# unfolded LOG...: stamped logs with rsag's folded lines joined again (rsag
# folds what it says at 120 columns, each continuation indented by two), each
# message on one line under its first line's stamp, so that a grep sees it
# whole.
unfolded() {
  awk '{ text = substr($0, index($0, " ") + 1) }
    NR > 1 && text ~ /^  [^ ]/ { l = l " " substr(text, 3); next }
    NR > 1 { print l }
    { l = $0 }
    END { if (NR) print l }' "$@"
}

# beat DIR RANK: rank RANK's entry of node 0's heartbeat file ("" until it has one).
beat() {
  grep -o "\"rank\":$2,\"host\":\"[^\"]*\",\"pid\":[0-9]*,\"written\":\"[^\"]*\",\"step\":{[^}]*}" "$1/.rsag-beat-node0" 2>/dev/null | head -1
}
field() { sed -n "s/.*\"$2\":\"\{0,1\}\([^\",}]*\).*/\1/p" <<<"$1"; }

# start NAME ARGS...: starts rsag on NP ranks in a new dir OUT/runs/NAME.d, its
# output stamped into OUT/runs/NAME.log, under timeout LIMIT (set by the caller).
start() {
  local name=$1; shift
  dir="$out/runs/$name.d" log="$out/runs/$name.log"
  rm -rf "$dir"
  timeout -k 5 "$limit" "${mpirun[@]}" "${pre[@]}" "$rsag" -output-dir "$dir" "$@" > >(stamp >"$log") 2>&1 &
  job=$!
}

# reach PHASE [MINROUND]: waits (up to 90 s) until rank R's beat says PHASE
# (timing: cycle MINROUND or later); sets pid. Fails when the job ended first.
reach() {
  local b rd
  for _ in $(seq 900); do
    b=$(beat "$dir" "$R")
    rd=$(field "$b" round) # a step outside any cycle has none
    if [ -n "$b" ] && [ "$(field "$b" phase)" = "$1" ] && [ "${rd:-0}" -ge "${2:-0}" ] 2>/dev/null; then
      pid=$(field "$b" pid)
      return 0
    fi
    kill -0 "$job" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

# finish: waits for the job (it is under timeout), then ends what is left of
# this run's ranks (a stopped one first woken to die).
finish() {
  wait "$job"; code=$?
  t_end=$EPOCHREALTIME
  sleep 0.3 # the stamper's last lines
  local p
  for p in $(grep -o '"pid":[0-9]*' "$dir/.rsag-beat-node0" 2>/dev/null | cut -d: -f2 | sort -u); do
    if [ -d "/proc/$p" ] && grep -qa "$rsag_base" "/proc/$p/cmdline" 2>/dev/null; then
      kill -KILL "$p" 2>/dev/null; kill -CONT "$p" 2>/dev/null
    fi
  done
}
rsag_base=$(basename "$rsag")

# named: the stamped time of the first line of rsag's, at or after the
# fault (and before named_cut, when set), that names rank R with its pid;
# "" when none does.
named() {
  awk -v t0="$t_fault" -v t1="${named_cut:-9e18}" -v r="$R" -v p="$pid" '
    $1 >= t0 && $1 < t1 && index($0, " rsag: ") && (index($0, "rank " r " on ") || index($0, "rank " r " (")) && index($0, "pid " p ")") { print $1; exit }' <(unfolded "$log")
}

# outputs: what each output says of the rank: run.json failed naming rank R
# and its pid; summary.json, junit.xml and rsag.prom present and naming it
# (y), present without it (n), absent (-).
outputs() {
  local rj=n f s
  if grep -q '"status": "failed"' "$dir/run.json" 2>/dev/null && grep -q "rank $R on [^ ]* (pid $pid)" "$dir/run.json"; then rj=y; fi
  s="run.json=$rj"
  for f in summary.json junit.xml rsag.prom; do
    if [ ! -e "$dir/$f" ]; then s+=" $f=-"
    elif grep -q "rank $R on [^ ]* (pid $pid)" "$dir/$f"; then s+=" $f=y"
    else s+=" $f=n"; fi
  done
  echo "$s"
}

# record PIECE PHASE RUN: one raw line for the run just ended.
record() {
  local tn dn de early
  tn=$(named)
  dn=- de=-
  [ -n "$tn" ] && dn=$(awk -v a="$t_fault" -v b="$tn" 'BEGIN { printf "%.2f", b - a }')
  de=$(awk -v a="$t_fault" -v b="$t_end" 'BEGIN { printf "%.2f", b - a }')
  early=$(grep -c "stuck rank, named early" <(unfolded "$log"))
  local line="$1 phase=$2 run=$3 rank=$R pid=$pid named_s=$dn end_s=$de exit=$code early_lines=$early $(outputs) log=runs/$(basename "$log")"
  echo "$line" >>"$raw"
  say "$line"
}

# fits SECONDS: whether a run of about that long fits what is left.
fits() {
  if [ "$(left)" -lt "$1" ]; then
    echo "$piece phase=$phase run=$i skipped: $(left) s left of BUDGET_S, a run takes about $1 s" >>"$raw"
    say "skipped $piece $phase run $i: $(left) s left"
    return 1
  fi
}

common=(-backend mpi -set "timeout_s=$timeout_s" -set startup_timeout_s=60 -set end_on_stuck_rank=true)
timing=(-config "$configs/smoke.toml" "${common[@]}" -set contracts.enabled=false -set timing.cycles=50000000
  -set 'timing.sizes_bytes=[4096]' -set memory.enabled=false)
soak=(-config "$configs/soak.toml" "${common[@]}" -set contracts.enabled=false)
locate=(-config "$configs/locate.toml" "${common[@]}" -set locate.repeats=6)

# fault KIND PHASE RUN R: one run of a fault in a phase: start, reach the
# phase, a second or two later the fault, then the job's end.
fault() {
  local kind=$1 ph=$2 i=$3
  local -n a=$ph
  pre=() limit=${LIMIT_S:-60}
  start "$piece-$ph-$i" "${a[@]}"
  local min=0
  [ "$ph" = timing ] && min=1
  if ! reach "$ph" "$min"; then
    t_fault=$EPOCHREALTIME pid=0
    finish
    echo "$kind phase=$ph run=$i rank=$R not-reached exit=$code log=runs/$(basename "$log")" >>"$raw"
    say "$kind $ph run $i: rank $R never reached $ph (exit $code)"
    return
  fi
  # A second or two in; locate's steps on one host are short, so a moment.
  if [ "$ph" = locate ]; then sleep "0.$((RANDOM % 5))"; else sleep "$((1 + RANDOM % 2)).$((RANDOM % 10))"; fi
  case $kind in
  stop) kill -STOP "$pid" ;;
  kill) kill -KILL "$pid" ;;
  esac
  t_fault=$EPOCHREALTIME
  finish
  record "$kind" "$ph" "$i"
}

for piece in $pieces; do
  case $piece in
  stop)
    for phase in timing soak; do
      for i in $(seq "${STOP_RUNS:-20}"); do
        fits 20 || break
        R=$((1 + RANDOM % (np - 1)))
        fault stop "$phase" "$i"
      done
    done ;;
  kill)
    phase=timing
    for i in $(seq "${KILL_RUNS:-5}"); do
      fits 15 || break
      R=$((1 + RANDOM % (np - 1)))
      fault kill timing "$i"
    done ;;
  rank0)
    for phase in timing soak locate; do
      for i in $(seq "${RANK0_RUNS:-5}"); do
        fits 25 || break
        R=0
        fault stop "$phase" "$i"
      done
    done ;;
  spin)
    phase=timing
    lib="$out/libspin.so"
    if ! mpicc -shared -fPIC -O2 -o "$lib" "$here/e2e/testdata/spin.c"; then
      echo "spin skipped: mpicc could not build e2e/testdata/spin.c" >>"$raw"; continue
    fi
    cap=${SPIN_CAP_S:-40}
    for i in $(seq "${SPIN_RUNS:-5}"); do
      fits $((cap + 15)) || break
      R=$((1 + RANDOM % (np - 1)))
      pre=(-x "LD_PRELOAD=$lib" -x "SPIN_RANK=$R" -x SPIN_CALL=Allreduce -x SPIN_BYTES=4096 -x "SPIN_AFTER_S=$((2 + RANDOM % 2))")
      limit=$((cap + 30))
      start "spin-timing-$i" "${timing[@]}"
      pid=0
      reach timing 0 || true
      # The fault's time is the stamp of spin.c's line.
      t_fault=
      for _ in $(seq 300); do
        t_fault=$(awk '/ spin\.c: rank /{ print $1; exit }' "$log")
        [ -n "$t_fault" ] || ! kill -0 "$job" 2>/dev/null && break
        sleep 0.1
      done
      if [ -z "$t_fault" ]; then
        t_fault=$EPOCHREALTIME; finish
        echo "spin phase=timing run=$i rank=$R no-spin exit=$code log=runs/$(basename "$log")" >>"$raw"; continue
      fi
      ended_here=n named_cut=
      while kill -0 "$job" 2>/dev/null; do
        if [ -n "$(named)" ] || awk -v a="$t_fault" -v b="$EPOCHREALTIME" -v c="$cap" 'BEGIN { exit !(b - a > c) }'; then
          # mpirun's own SIGTERM, once (timeout's child beside the stamper):
          # timeout would pass one to its whole process group, and mpirun
          # kills its ranks outright on a second.
          sleep 1; kill -0 "$job" 2>/dev/null && { ended_here=y; named_cut=$EPOCHREALTIME; kill -TERM $(pgrep -P "$job" -x 'mpirun|orterun|mpiexec') 2>/dev/null; }
          break
        fi
        sleep 0.2
      done
      finish
      record spin timing "$i"
      named_cut=
      tn=$(named)
      [ -n "$tn" ] && tn=$(awk -v a="$t_fault" -v b="$tn" 'BEGIN { printf "%.2f", b - a }')
      sed -i '$ s/$/ ended_by_script='"$ended_here"' named_any_s='"${tn:--}"'/' "$raw"
    done ;;
  clean)
    phase=timing
    hog=()
    for _ in $(seq "${HOG:-$np}"); do yes >/dev/null & hog+=($!); done
    for i in $(seq "${CLEAN_RUNS:-20}"); do
      fits 30 || break
      R=-1 pid=-1
      pre=() limit=120
      start "clean-$i" -config "$configs/smoke.toml" "${common[@]}" -set timing.cycles=200 -set 'timing.sizes_bytes=[4096]' -set memory.enabled=false
      t_fault=$EPOCHREALTIME
      finish
      early=$(grep -c "stuck rank, named early\|no rank is behind" <(unfolded "$log"))
      st=$(grep -o '"status": "[a-z]*"' "$dir/run.json" 2>/dev/null | cut -d'"' -f4)
      line="clean phase=timing run=$i exit=$code status=${st:-none} early_lines=$early stuck_in_run_json=$(grep -c '"stuck"' "$dir/run.json" 2>/dev/null) s=$(awk -v a="$t_fault" -v b="$t_end" 'BEGIN { printf "%.1f", b - a }') log=runs/$(basename "$log")"
      echo "$line" >>"$raw"; say "$line"
    done
    kill "${hog[@]}" 2>/dev/null; wait "${hog[@]}" 2>/dev/null ;;
  *) echo "stuck-proof.sh: no piece $piece (stop kill spin rank0 clean)" >&2 ;;
  esac
done

# The table, from every raw line so far (both calls).
{
  echo "# stuck-proof.sh at $(date -u +%FT%TZ) on $(hostname), $(nproc) cores, NP=$np, timeout_s=$timeout_s, rsag: $("$rsag" -version 2>&1 | head -1)"
  echo "# seconds from the fault to the first line naming the rank and its pid, and to the job's end; percentiles by nearest rank"
  printf '%-8s %-7s %5s %6s %8s %8s %8s  %s\n' fault phase runs named p50_name p95_name p50_end outputs
  awk '
    function pct(list, p,    n, a, i, j, t, k) {
      n = split(list, a, " ")
      if (n == 0) return "-"
      for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
      k = int(p * n); if (k < p * n) k++; if (k < 1) k = 1
      return a[k]
    }
    / skipped: / { next }
    $1 == "clean" { cr++; if ($0 ~ /early_lines=0 / && $0 ~ /stuck_in_run_json=0 /) ok++; else bad++; if ($0 ~ / exit=0 /) z++; next }
    $4 !~ /^rank=/ { next }
    {
      k = $1 " " substr($2, 7)
      if ($4 == "rank=0") k = "stop-r0 " substr($2, 7)
      if (!(k in runs)) order[++nk] = k
      runs[k]++
      for (f = 1; f <= NF; f++) { split($f, kv, "="); v[kv[1]] = kv[2] }
      if ($0 ~ /not-reached|no-spin/) { nr[k]++; next }
      if (v["named_s"] != "-") { named[k]++; nl[k] = nl[k] " " v["named_s"] }
      el[k] = el[k] " " v["end_s"]
      o = "run.json=" v["run.json"] " summary=" v["summary.json"] " junit=" v["junit.xml"] " prom=" v["rsag.prom"]
      outs[k, o]++
      if (!((k, o) in seen)) { seen[k, o] = 1; ol[k] = ol[k] (ol[k] ? "; " : "") o }
    }
    END {
      for (i = 1; i <= nk; i++) {
        k = order[i]; split(k, kp, " ")
        s = ol[k]
        printf "%-8s %-7s %5d %6d %8s %8s %8s  %s%s\n", kp[1], kp[2], runs[k], named[k], pct(nl[k], 0.5), pct(nl[k], 0.95), pct(el[k], 0.5), s,
          (nr[k] ? sprintf(" (%d never reached the phase)", nr[k]) : "")
      }
      if (cr) printf "%-8s %-7s %5d %6s %8s %8s %8s  %d with an early naming or a no-rank-behind line, %d exit 0\n", "clean", "timing", cr, "-", "-", "-", "-", bad, z
    }' "$raw"
  sk=$(grep -c ' skipped: ' "$raw")
  [ "$sk" -gt 0 ] && echo "# $sk run(s) skipped: BUDGET_S ran out (raw lines below)"
  echo
  echo "# outputs: y names the rank and its pid, n present without it, - absent (run.json: failed and naming it)"
  echo "# spin: ended_by_script=y: the job was ended here (SIGTERM to mpirun) a second after the naming or SPIN_CAP_S after the spin"
  echo "#   began; only a line before that SIGTERM counts as named (named_any_s: the first line naming it,"
  echo "#   the SIGTERM's hang line included)"
  echo
  echo "# raw, one line a run"
  cat "$raw"
  echo
  echo "# the naming lines"
  unfolded "$out"/runs/*.log 2>/dev/null | grep " rsag: .*\(named early\|hang: \|no rank is behind\)" | cut -c1-400 | head -200
} >"$out/stuck.txt"
# Every run's dir and stamped log in one file; the dirs themselves go.
tar czf "$out/runs.tgz" -C "$out" runs && rm -rf "$out"/runs/*.d
say "wrote $out/stuck.txt and runs.tgz ($(left) s of BUDGET_S left)"
