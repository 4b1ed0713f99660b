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
# size, default 1000).
#
# Both time float32 sums out of place on a hot buffer. rsag's figure is its
# median over cycles of the slowest rank's time per operation (batch
# operations between two clock reads); IMB's is t_avg, the mean over ranks
# of each rank's time per operation over IMB_ITER repetitions (t_max is
# printed beside it).
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

# Each run appends "tool size microseconds [t_max]" lines to $work/rows.
run_rsag() {
  scripts/mpirun.sh 2 "$rsag" -config "$config" -set "timing.sizes_bytes=[$list]" \
    -output-dir "$work/rsag" -overwrite >"$work/rsag.log" 2>&1 ||
    { cat "$work/rsag.log" >&2; echo "bench-imb.sh: rsag failed" >&2; exit 1; }
  jq -r '.timing[] | select(.mode == "direct") | "rsag \(.size_bytes) \(.median_us)"' \
    "$work/rsag/summary.json" >>"$work/rows"
}
run_imb() {
  scripts/mpirun.sh 2 "$imb" Allreduce -npmin 2 -msgsize "$list" -iter "$iter" -iter_policy off \
    -zero_size off -red_data_type float >"$work/imb.log" 2>&1 ||
    { cat "$work/imb.log" >&2; echo "bench-imb.sh: IMB-MPI1 failed" >&2; exit 1; }
  # The rows under "Benchmarking Allreduce": bytes, repetitions, t_min,
  # t_max, t_avg.
  awk '/Benchmarking Allreduce/ {on = 1} on && NF == 5 && $1 ~ /^[0-9]+$/ {print "imb", $1, $5, $4}' \
    "$work/imb.log" >>"$work/rows"
}

: >"$work/rows"
for round in $(seq 1 "$rounds"); do
  if [ $((round % 2)) = 1 ]; then run_rsag; run_imb; else run_imb; run_rsag; fi
  echo "bench-imb.sh: round $round of $rounds done" >&2
done

# The median over rounds of each tool's figure per size, its range, and
# rsag's median over IMB's.
awk -v sizes="${sizes[*]}" '
  function median(a, n,    i, j, t) {
    for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
    return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2
  }
  { k = $1 " " $2; v[k, ++n[k]] = $3; if ($1 == "imb") x[$2, n[k]] = $4 }
  END {
    printf "%-9s %-30s %-32s %-10s %-9s %s\n", "size (B)", "rsag us: median [min..max]", "IMB t_avg us: median [min..max]", "IMB t_max", "rsag/IMB", "rsag/IMB per round"
    split(sizes, s, " ")
    for (i = 1; i in s; i++) {
      r = "rsag " s[i]; m = "imb " s[i]
      lo = 1e300; hi = 0; for (j = 1; j <= n[r]; j++) { a[j] = v[r, j]; lo = (a[j] < lo ? a[j] : lo); hi = (a[j] > hi ? a[j] : hi) }
      mr = median(a, n[r]); rlo = lo; rhi = hi
      lo = 1e300; hi = 0; for (j = 1; j <= n[m]; j++) { a[j] = v[m, j]; lo = (a[j] < lo ? a[j] : lo); hi = (a[j] > hi ? a[j] : hi) }
      mi = median(a, n[m])
      for (j = 1; j <= n[m]; j++) a[j] = x[s[i], j]
      mx = median(a, n[m])
      per = ""; for (j = 1; j <= n[r] && j <= n[m]; j++) per = per sprintf(" %.2f", v[r, j] / v[m, j])
      printf "%-9d %8.2f [%8.2f..%8.2f]     %8.2f [%8.2f..%8.2f]       %8.2f   %8.3f %s\n", s[i], mr, rlo, rhi, mi, lo, hi, mx, mr / mi, per
    }
  }' "$work/rows"
