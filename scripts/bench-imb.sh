#!/usr/bin/env bash
# rsag's batched AllReduce against IMB-MPI1's Allreduce on 2 MPI ranks, side
# by side: ROUNDS rounds, each running both (which goes first alternates),
# then a table of both medians over the rounds, their spread and the ratio.
# It builds nothing of IMB; point it at an IMB-MPI1 binary (intel/
# mpi-benchmarks, built with mpicc after dropping -Werror from
# src_cpp/Makefile).
#
#   scripts/bench-imb.sh [path/to/IMB-MPI1]
#
# Environment: IMB (the IMB-MPI1 path, if not given as the argument), RSAG
# (the rsag binary, default ./rsag from `make build`), ROUNDS (default 5),
# CONFIG (default configs/bench-imb.toml), IMB_ITER (IMB's repetitions per
# size, default 1000), MPIRUN_ARGS (more mpirun arguments for both tools,
# e.g. "-x GOMAXPROCS=2" or "--bind-to none").
#
# Both time float32 sums out of place on a hot buffer. rsag's figure is its
# median over cycles of the slowest rank's time per operation (batch
# operations between two clock reads); IMB's is t_avg, the mean over ranks
# of each rank's time per operation over IMB_ITER repetitions (t_max is
# printed beside it). IMB runs twice per round: as it starts by default,
# with MPI_Init (MPI_THREAD_SINGLE), and with -thread_level funneled, the
# MPI_Init_thread(MPI_THREAD_FUNNELED) that rsag must ask for (the Go
# runtime has threads of its own), which costs Open MPI 4.1 locks on every
# operation.
set -euo pipefail
cd "$(dirname "$0")/.."

imb=${1:-${IMB:-}}
rsag=${RSAG:-./rsag}
rounds=${ROUNDS:-5}
config=${CONFIG:-configs/bench-imb.toml}
iter=${IMB_ITER:-1000}
sizes=(1024 1048576)

[ -n "$imb" ] || { echo "bench-imb.sh: give the IMB-MPI1 binary as the argument or in IMB" >&2; exit 2; }
[ -x "$imb" ] || { echo "bench-imb.sh: $imb is not an executable IMB-MPI1" >&2; exit 2; }
[ -x "$rsag" ] || { echo "bench-imb.sh: $rsag is not an executable rsag (make build, or set RSAG)" >&2; exit 2; }
command -v jq >/dev/null || { echo "bench-imb.sh: needs jq to read summary.json" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
list=$(IFS=,; echo "${sizes[*]}")
# Open MPI 4 makes one session directory per user with a race between jobs
# that start at once (other users of the machine); each job here gets its
# own. Other MPIs ignore the variable.
export OMPI_MCA_orte_tmpdir_base="$work"

read -ra extra <<<"${MPIRUN_ARGS:-}"

# Each run appends "tool size microseconds [t_max]" lines to $work/rows.
run_rsag() {
  scripts/mpirun.sh 2 "${extra[@]}" "$rsag" -config "$config" -set "timing.sizes_bytes=[$list]" \
    -output-dir "$work/rsag" -overwrite >"$work/rsag.log" 2>&1 ||
    { cat "$work/rsag.log" >&2; echo "bench-imb.sh: rsag failed" >&2; exit 1; }
  jq -r '.timing[] | select(.mode == "direct") | "rsag \(.size_bytes) \(.median_us)"' \
    "$work/rsag/summary.json" >>"$work/rows"
}
# run_imb TOOL THREAD_LEVEL
run_imb() {
  scripts/mpirun.sh 2 "${extra[@]}" "$imb" Allreduce -npmin 2 -msgsize "$list" -iter "$iter" -iter_policy off \
    -zero_size off -red_data_type float -thread_level "$2" >"$work/imb.log" 2>&1 ||
    { cat "$work/imb.log" >&2; echo "bench-imb.sh: IMB-MPI1 failed" >&2; exit 1; }
  # The rows under "Benchmarking Allreduce": bytes, repetitions, t_min,
  # t_max, t_avg.
  awk -v tool="$1" '/Benchmarking Allreduce/ {on = 1} on && NF == 5 && $1 ~ /^[0-9]+$/ {print tool, $1, $5, $4}' \
    "$work/imb.log" >>"$work/rows"
}
run_both_imb() { run_imb imb single; run_imb imbf funneled; }

: >"$work/rows"
for round in $(seq 1 "$rounds"); do
  if [ $((round % 2)) = 1 ]; then run_rsag; run_both_imb; else run_both_imb; run_rsag; fi
  echo "bench-imb.sh: round $round of $rounds done" >&2
done

# Per size: each tool's median over the rounds and its range, IMB's t_max,
# and rsag's median over each IMB's, with the ratio of every round.
awk -v sizes="${sizes[*]}" '
  function median(a, n,    i, j, t) {
    for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
    return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2
  }
  # stat sets m (median), lo and hi of column col (3: time, 4: t_max) of key k.
  function stat(k, col,    j, a) {
    lo = 1e300; hi = 0
    for (j = 1; j <= n[k]; j++) { a[j] = v[k, j, col]; if (a[j] < lo) lo = a[j]; if (a[j] > hi) hi = a[j] }
    m = median(a, n[k])
  }
  { k = $1 " " $2; n[k]++; v[k, n[k], 3] = $3; v[k, n[k], 4] = $4 }
  END {
    printf "%-8s | %-24s | %-24s %-7s | %-24s %-7s | %-8s %-8s | %s\n", "bytes", "rsag us, median [range]",
      "IMB us (MPI_Init)", "t_max", "IMB us (FUNNELED)", "t_max", "rsag/IMB", "rsag/IMBf", "rsag/IMB per round"
    split(sizes, s, " ")
    for (i = 1; i in s; i++) {
      r = "rsag " s[i]; a = "imb " s[i]; f = "imbf " s[i]
      stat(r, 3); mr = m; line = sprintf("%-8d | %7.2f [%6.2f..%7.2f] |", s[i], m, lo, hi)
      stat(a, 3); ma = m; line = line sprintf(" %7.2f [%6.2f..%7.2f]", m, lo, hi)
      stat(a, 4); line = line sprintf(" %7.2f |", m)
      stat(f, 3); mf = m; line = line sprintf(" %7.2f [%6.2f..%7.2f]", m, lo, hi)
      stat(f, 4); line = line sprintf(" %7.2f |", m)
      per = ""; for (j = 1; j <= n[r] && j <= n[a]; j++) per = per sprintf(" %.2f", v[r, j, 3] / v[a, j, 3])
      printf "%s %8.3f %8.3f  |%s\n", line, mr / ma, mr / mf, per
    }
  }' "$work/rows"
