#!/usr/bin/env bash
# rsag's AllReduce against IMB-MPI1's Allreduce, side by side, on
# any number of MPI ranks: ROUNDS paired rounds, each running both (which
# goes first alternates; rsag launches once per timing method, so that
# each tool's timed loop starts with its own launch), each tool's figures
# reduced both ways, then the median over the rounds of the per-round
# ratios. It builds nothing of IMB;
# point it at an IMB-MPI1 binary (intel/mpi-benchmarks, built with mpicc
# after dropping -Werror from src_cpp/Makefile).
#
#   scripts/bench-imb.sh [-n RANKS] [-b BINDING] [path/to/IMB-MPI1]
#   scripts/bench-imb.sh --self-test
#   scripts/bench-imb.sh --reduce RSAG_OUTPUT_DIR [METHOD]
#
# -n: the world size for both tools (default 2; rsag gets
# -set required_ranks=RANKS). -b: mpirun's --bind-to for both (core, none,
# socket, ...; default: mpirun's own, which for Open MPI is core up to 2
# ranks and NUMA or socket above). --self-test checks the reductions below
# on fixed samples; --reduce prints an rsag output dir's direct samples of
# METHOD (default barrier) reduced IMB's way (size t_avg t_max) and its
# median.
#
# Environment: IMB (the IMB-MPI1 path, if not given as the argument), RSAG
# (the rsag binary, default ./rsag from `make build`), ROUNDS (default 5),
# CONFIG (default configs/bench-imb.toml: one case per size), IMB_ITER
# (IMB's repetitions per size; default as many operations as rsag times
# and keeps, (cycles - discard) x batch, read from the first rsag run),
# IMB_LEVELS (the thread levels IMB runs at, default "single funneled"),
# MPIRUN_ARGS (more mpirun arguments for both tools, e.g. "-x
# GOMAXPROCS=2"), KEEP (a directory: each round's rsag output and both
# tools' logs are kept there), SIZES (the message sizes in bytes, default
# "1024 1048576"), RSAG_ARGS (more rsag arguments, e.g. "-set
# timing.batch=10 -set timing.cycles=22" for sizes whose 3800 operations
# take minutes; IMB follows, with as many operations), CLOOP (a
# bench-cloop binary, built from scripts/bench-cloop.c with mpicc: rsag's
# timed loop in plain C, run in each round as a third tool, so that what
# rsag adds above the machine and MPI shows apart from what IMB does
# differently).
#
# Why as many operations: a machine stalls every rank at once now and
# then (a few per second on 16 ranks of 16 cores, 2 to 4 ms each, seen in
# a plain C loop as in both tools), and a mean (t_avg) takes in every
# stall its run spans. A tool that runs a quarter as long escapes them in
# most rounds, and the median of per-round ratios then favours it; with
# the same operations both are exposed alike.
#
# Both time float32 sums out of place on a hot buffer, and the two reduce
# their samples differently:
#   - IMB times each operation alone (a barrier between operations, by
#     default) and reports, per rank, the mean over its repetitions; t_avg
#     is the mean of that over the ranks and t_max its maximum.
#   - rsag's barrier method times each of a sample's `batch` operations
#     alone, after an untimed barrier, as IMB does, and sums them; its
#     batched method times them back to back, as nccl-tests and the C
#     loop do. Its figure is the median over cycles of the slowest rank's
#     sample (summary.json's median_us). IMB is set against the barrier
#     method, the C loop against the batched one: like with like. (The
#     barrier matters at 16 ranks on 16 cores, where a stall of one rank
#     between back-to-back operations holds up all: docs/PERFORMANCE.md.)
# So each round prints rsag's per-rank samples (timings.csv) reduced IMB's
# way, as t_avg and t_max, beside rsag's own median; the ratios compare
# like with like: rsag's t_avg with IMB's t_avg, rsag's t_max with IMB's
# t_max. IMB runs twice per round: as it starts by default, with MPI_Init
# (MPI_THREAD_SINGLE), and with -thread_level funneled, the
# MPI_Init_thread(MPI_THREAD_FUNNELED) that rsag must ask for (the Go
# runtime has threads of its own), which costs Open MPI 4.1 locks on every
# operation: the funneled columns are the like-for-like ones. Below the
# table, each ratio's median again with its 95% interval (distribution-
# free, from the rounds' order statistics; 6 rounds at least): at small
# sizes the rounds swing by tens of percent, and a median above a bound
# whose interval holds 1.00 is not a measured difference.
set -euo pipefail
cd "$(dirname "$0")/.."

# imb_way DISCARD METHOD < timings.csv prints "size t_avg t_max" per size
# of the direct mode timed with METHOD: each rank's mean over its samples
# of cycle >= DISCARD (the ones summary.json keeps), then the mean and the
# maximum over the ranks. Columns are found by name in the header; a CR
# before the newline (the seed's per-rank CSVs) is ignored.
imb_way() {
  awk -F, -v discard="$1" -v method="$2" '
    { sub(/\r$/, "") }
    NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
    $col["mode"] == "direct" && $col["method"] == method && $col["cycle"] + 0 >= discard {
      k = $col["size_bytes"] SUBSEP $col["rank"]
      if (!(k in n)) { ranks[$col["size_bytes"]]++ }
      sum[k] += $col["duration_us"]; n[k]++; sizes[$col["size_bytes"]] = 1
    }
    END {
      for (k in n) {
        split(k, p, SUBSEP); m = sum[k] / n[k]
        tot[p[1]] += m; if (!(p[1] in mx) || m > mx[p[1]]) mx[p[1]] = m
      }
      for (s in sizes) printf "%s %.4f %.4f\n", s, tot[s] / ranks[s], mx[s]
    }' | sort -n
}

# imb_rows TOOL < IMB's log prints "TOOL size t_avg t_max" for the rows
# under "Benchmarking Allreduce" (bytes, repetitions, t_min, t_max, t_avg).
imb_rows() {
  awk -v tool="$1" '/Benchmarking Allreduce/ {on = 1} on && NF == 5 && $1 ~ /^[0-9]+$/ {print tool, $1, $5, $4}'
}

# summarize < rows prints the table: rows are "round tool size t_avg t_max
# median" (median "-" for IMB); per size, each figure's median over the
# rounds, and the median over the rounds of rsag / IMB for t_avg and t_max.
# Tool rsag is rsag's barrier method, IMB's way of timing, set against
# IMB; rsagb is its batched one, set against the C loop, which is that
# loop in plain C.
summarize() {
  awk '
    function median(a, n,    i, j, t) {
      for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
      return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2
    }
    # med(tool, size, col): median over the rounds of column col (4 t_avg,
    # 5 t_max, 6 median); ratio(num, tool, size, col): median over the
    # rounds that have both of num / tool.
    function med(t, s, c,    r, a, n) {
      n = 0; for (r = 1; r <= rounds; r++) if ((r, t, s) in v4) a[++n] = (c == 4 ? v4[r, t, s] : c == 5 ? v5[r, t, s] : v6[r, t, s])
      return n ? median(a, n) : -1
    }
    # f(x, p): x with p decimals, or "-" for a figure that is not there.
    function f(x, p) { return x < 0 ? "-" : sprintf("%." p "f", x) }
    # ratios(u, t, s, c, a): fills a with the per-round ratios num / tool
    # of the rounds that have both, and returns how many.
    function ratios(u, t, s, c, a,    r, n) {
      n = 0
      for (r = 1; r <= rounds; r++) if ((r, t, s) in v4 && (r, u, s) in v4)
        a[++n] = c == 4 ? v4[r, u, s] / v4[r, t, s] : v5[r, u, s] / v5[r, t, s]
      return n
    }
    function ratio(u, t, s, c,    a, n) {
      n = ratios(u, t, s, c, a)
      return n ? median(a, n) : -1
    }
    # band(u, t, s, c): the same ratios'"'"' median with the interval that holds
    # the true median with at least 95% probability whatever their
    # distribution: the k-th smallest and k-th largest of the n ratios, k
    # the largest with 1 - 2 P(Binomial(n, 1/2) < k) >= 0.95 (fewer than 6
    # rounds have none). The rounds swing by tens of percent at small
    # sizes, so a median of 1.06 may be 1.00 measured.
    function band(u, t, s, c,    a, n, m, k, p, tail) {
      if (!(n = ratios(u, t, s, c, a))) return "-"
      m = median(a, n)  # sorts a
      k = 0; p = 0.5 ^ n; tail = p
      while (k + 1 <= n / 2 && 1 - 2 * tail >= 0.95) { k++; p *= (n - k + 1) / k; tail += p }
      if (!k) return sprintf("%.3f [-]", m)
      return sprintf("%.3f [%.3f, %.3f]", m, a[k], a[n + 1 - k])
    }
    { v4[$1, $2, $3] = $4; v5[$1, $2, $3] = $5; v6[$1, $2, $3] = $6; if ($1 > rounds) rounds = $1; sizes[$3] = 1
      if ($2 == "cloop") have_cloop = 1 }
    END {
      printf "%-8s | %-26s | %-17s | %-17s | %-23s | %-23s\n", "bytes", "rsag t_avg t_max median",
        "IMB t_avg t_max", "IMBf t_avg t_max", "rsag/IMB t_avg t_max", "rsag/IMBf t_avg t_max"
      n = 0; for (s in sizes) order[++n] = s + 0
      median(order, n)  # sorts
      for (i = 1; i <= n; i++) {
        s = order[i]
        printf "%-8d | %8s %8s %8s | %8s %8s | %8s %8s | %11s %11s | %11s %11s\n", s,
          f(med("rsag", s, 4), 2), f(med("rsag", s, 5), 2), f(med("rsag", s, 6), 2), f(med("imb", s, 4), 2), f(med("imb", s, 5), 2),
          f(med("imbf", s, 4), 2), f(med("imbf", s, 5), 2), f(ratio("rsag", "imb", s, 4), 3), f(ratio("rsag", "imb", s, 5), 3),
          f(ratio("rsag", "imbf", s, 4), 3), f(ratio("rsag", "imbf", s, 5), 3)
      }
      printf "(rsag: its barrier method; medians over %d rounds; each ratio is the median of the per-round ratios)\n", rounds
      for (l = 1; l <= 2; l++) {
        lv = l == 1 ? "imb" : "imbf"
        if (ratio("rsag", lv, order[1], 4) < 0) continue
        printf "%-8s | %-33s | %-33s\n", "bytes", "rsag/" (l == 1 ? "IMB" : "IMBf") " t_avg [95% interval]", "t_max [95% interval]"
        for (i = 1; i <= n; i++)
          printf "%-8d | %33s | %33s\n", order[i], band("rsag", lv, order[i], 4), band("rsag", lv, order[i], 5)
      }
      if (!have_cloop) exit
      printf "%-8s | %-26s | %-26s | %-23s\n", "bytes", "rsag batched t_avg t_max med", "C loop t_avg t_max median",
        "rsag/C loop t_avg t_max"
      for (i = 1; i <= n; i++) {
        s = order[i]
        printf "%-8d | %8s %8s %8s | %8s %8s %8s | %11s %11s\n", s, f(med("rsagb", s, 4), 2), f(med("rsagb", s, 5), 2),
          f(med("rsagb", s, 6), 2), f(med("cloop", s, 4), 2), f(med("cloop", s, 5), 2),
          f(med("cloop", s, 6), 2), f(ratio("rsagb", "cloop", s, 4), 3), f(ratio("rsagb", "cloop", s, 5), 3)
      }
    }'
}

# self_test checks the reductions on samples whose answers are known.
self_test() {
  local got want
  # Two ranks, discard 1: cycle 0 and the decomposed rows are left out.
  # 1024: rank 0 mean (2+4)/2 = 3, rank 1 (5+7)/2 = 6: t_avg 4.5, t_max 6.
  # 2048: rank 0 10, rank 1 (20+40)/2 = 30: t_avg 20, t_max 30.
  # The batched rows are another method's, and left out too.
  got=$(printf '%s\r\n' \
    rank,size_bytes,mode,method,cycle,duration_us,correct,run \
    0,1024,direct,barrier,0,100,True,default 0,1024,direct,barrier,1,2,True,default 0,1024,direct,barrier,2,4,True,default \
    1,1024,direct,barrier,0,100,True,default 1,1024,direct,barrier,1,5,True,default 1,1024,direct,barrier,2,7,True,default \
    0,1024,decomposed,barrier,1,99,True,default 1,2048,decomposed,barrier,2,99,True,default \
    0,1024,direct,batched,1,99,True,default 1,2048,direct,batched,2,99,True,default \
    0,2048,direct,barrier,1,10,True,default 0,2048,direct,barrier,2,10,True,default \
    1,2048,direct,barrier,1,20,True,default 1,2048,direct,barrier,2,40,True,default | imb_way 1 barrier)
  want=$'1024 4.5000 6.0000\n2048 20.0000 30.0000'
  [ "$got" = "$want" ] || { printf 'bench-imb.sh: self-test: imb_way gave\n%s\nwant\n%s\n' "$got" "$want" >&2; return 1; }
  got=$(printf '%s\n' '# Benchmarking Allreduce' '# #processes = 4' \
    '       #bytes #repetitions  t_min[usec]  t_max[usec]  t_avg[usec]' \
    '         1024         1000         0.55         0.58         0.56' | imb_rows imbf)
  want='imbf 1024 0.56 0.58'
  [ "$got" = "$want" ] || { printf 'bench-imb.sh: self-test: imb_rows gave %q, want %q\n' "$got" "$want" >&2; return 1; }
  # Three rounds; rsag / IMB per round: t_avg 1.1, 0.9, 1.3 (median 1.1),
  # t_max 2, 1, 3 (median 2).
  got=$(printf '%s\n' '1 rsag 1024 1.1 2 1.5' '1 imb 1024 1 1 -' '1 imbf 1024 1 1 -' \
    '2 rsag 1024 0.9 2 1.4' '2 imb 1024 1 2 -' '2 imbf 1024 1 2 -' \
    '3 rsag 1024 2.6 9 1.6' '3 imb 1024 2 3 -' '3 imbf 1024 2 3 -' | summarize | sed -n 2p)
  want='1024     |     1.10     2.00     1.50 |     1.00     2.00 |     1.00     2.00 |       1.100       2.000 |       1.100       2.000'
  [ "$got" = "$want" ] || { printf 'bench-imb.sh: self-test: summarize gave\n%s\nwant\n%s\n' "$got" "$want" >&2; return 1; }
  # The interval: 10 rounds of ratios 1.0 to 1.9 in any order hold the
  # median between the 2nd and 9th (97.9%; the 3rd and 8th hold 89%);
  # 3 rounds have none.
  got=$(for r in 1 2 3 4 5 6 7 8 9 10; do
    printf '%s\n' "$r rsag 64 1.$(( (r * 3) % 10 )) 2 1" "$r imbf 64 1 1 -"; done | summarize | sed -n '$p')
  want='64       |              1.450 [1.100, 1.800] |              2.000 [2.000, 2.000]'
  [ "$got" = "$want" ] || { printf 'bench-imb.sh: self-test: the interval gave\n%s\nwant\n%s\n' "$got" "$want" >&2; return 1; }
  got=$(printf '%s\n' '1 rsag 8 1.1 2 1' '1 imbf 8 1 1 -' '2 rsag 8 1 2 1' '2 imbf 8 1 1 -' '3 rsag 8 1 2 1' '3 imbf 8 1 1 -' |
    summarize | sed -n '$p')
  want='8        |                         1.000 [-] |                         2.000 [-]'
  [ "$got" = "$want" ] || { printf 'bench-imb.sh: self-test: the interval of 3 rounds gave\n%s\nwant\n%s\n' "$got" "$want" >&2; return 1; }
  # The C loop is set against rsag's batched rows (rsagb), not its barrier
  # ones: 3 / 2 and 6 / 4.
  got=$(printf '%s\n' '1 rsag 1024 9 9 9' '1 rsagb 1024 3 6 2.5' '1 cloop 1024 2 4 1.9' | summarize | tail -1)
  want='1024     |     3.00     6.00     2.50 |     2.00     4.00     1.90 |       1.500       1.500'
  [ "$got" = "$want" ] || { printf 'bench-imb.sh: self-test: summarize (C loop) gave\n%s\nwant\n%s\n' "$got" "$want" >&2; return 1; }
  echo "bench-imb.sh: self-test passed"
}

# reduce DIR METHOD prints, for an rsag output dir, "size t_avg t_max
# median" of the direct mode timed with METHOD: its samples IMB's way, and
# its own median.
reduce() {
  local discard
  discard=$(jq -r '.config.timing.discard' "$1/summary.json")
  imb_way "$discard" "$2" <"$1/timings.csv" >"$work/imbway"
  jq -r --arg m "$2" '.timing[] | select(.mode == "direct" and .method == $m) | "\(.size_bytes) \(.median_us)"' "$1/summary.json" |
    awk 'NR == FNR {m[$1] = $2; next} {print $1, $2, $3, ($1 in m ? m[$1] : "-")}' - "$work/imbway"
}

case ${1:-} in
  --self-test) self_test; exit ;;
  --reduce)
    [ -f "${2:-}/summary.json" ] || { echo "usage: bench-imb.sh --reduce RSAG_OUTPUT_DIR [METHOD]" >&2; exit 2; }
    work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
    reduce "$2" "${3:-barrier}"; exit ;;
esac

np=${NP:-2}
bind=${BIND:-}
while getopts n:b: opt; do
  case $opt in
    n) np=$OPTARG ;;
    b) bind=$OPTARG ;;
    *) echo "usage: bench-imb.sh [-n RANKS] [-b BINDING] [path/to/IMB-MPI1] | --self-test" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))

imb=${1:-${IMB:-}}
rsag=${RSAG:-./rsag}
rounds=${ROUNDS:-5}
config=${CONFIG:-configs/bench-imb.toml}
iter=${IMB_ITER:-}
levels=${IMB_LEVELS:-single funneled}
read -ra sizes <<<"${SIZES:-1024 1048576}"
read -ra rsag_args <<<"${RSAG_ARGS:-}"
cloop=${CLOOP:-}

[[ $np =~ ^[0-9]+$ ]] && [ "$np" -ge 2 ] || { echo "bench-imb.sh: -n $np: give at least 2 ranks" >&2; exit 2; }
[ -n "$imb" ] || { echo "bench-imb.sh: give the IMB-MPI1 binary as the argument or in IMB" >&2; exit 2; }
[ -x "$imb" ] || { echo "bench-imb.sh: $imb is not an executable IMB-MPI1" >&2; exit 2; }
[ -x "$rsag" ] || { echo "bench-imb.sh: $rsag is not an executable rsag (make build, or set RSAG)" >&2; exit 2; }
[ -z "$cloop" ] || [ -x "$cloop" ] ||
  { echo "bench-imb.sh: CLOOP=$cloop is not an executable (mpicc -O2 -o bench-cloop scripts/bench-cloop.c)" >&2; exit 2; }
command -v jq >/dev/null || { echo "bench-imb.sh: needs jq to read summary.json" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
list=$(IFS=,; echo "${sizes[*]}")
# Open MPI 4 makes one session directory per user with a race between jobs
# that start at once (other users of the machine); each job here gets its
# own. Other MPIs ignore the variable.
export OMPI_MCA_orte_tmpdir_base="$work"

read -ra extra <<<"${MPIRUN_ARGS:-}"
[ -z "$bind" ] || extra+=(--bind-to "$bind")

keep() { [ -z "${KEEP:-}" ] || { mkdir -p "$KEEP/$1" && cp -r "${@:2}" "$KEEP/$1/"; }; }

# Each run appends "round tool size t_avg t_max median" lines to $work/rows.
# run_rsag ROUND METHOD TOOL: one launch of rsag timing METHOD alone, so
# that, like IMB and the C loop, its timed loop starts with its launch:
# a machine's slow first seconds (docs/PERFORMANCE.md: up to 8 s of some
# launches at 16 MiB on the 16-core machine) then fall on each tool alike,
# not on whichever method a launch times first.
run_rsag() {
  local out=$work/$3
  rm -rf "$out"
  scripts/mpirun.sh "$np" "${extra[@]}" "$rsag" -config "$config" -set "required_ranks=$np" \
    -set "timing.sizes_bytes=[$list]" -set "timing.methods=[\"$2\"]" "${rsag_args[@]}" -output-dir "$out" >"$out.log" 2>&1 ||
    { cat "$out.log" >&2; echo "bench-imb.sh: rsag failed" >&2; exit 1; }
  reduce "$out" "$2" | awk -v r="$1" -v t="$3" '{print r, t, $0}' >>"$work/rows"
  [ -n "$iter" ] || iter=$(jq -r '.config.timing | (.cycles - .discard) * .batch' "$out/summary.json")
  # The C loop takes the same batch, warm-ups, cycles and discard.
  [ -n "${loop_args:-}" ] || loop_args=$(jq -r '.config.timing | "\(.batch) \(.warmups) \(.cycles) \(.discard)"' "$out/summary.json")
  keep "round$1" "$out" "$out.log"
}
# run_cloop ROUND: the C loop's "size t_avg t_max median" rows.
run_cloop() {
  [ -n "$cloop" ] || return 0
  local a
  read -ra a <<<"$loop_args"
  scripts/mpirun.sh "$np" "${extra[@]}" "$cloop" "${a[@]}" "${sizes[@]}" >"$work/cloop.log" 2>&1 ||
    { cat "$work/cloop.log" >&2; echo "bench-imb.sh: bench-cloop failed" >&2; exit 1; }
  awk -v r="$1" 'NF == 4 && $1 ~ /^[0-9]+$/ {print r, "cloop", $0}' "$work/cloop.log" >>"$work/rows"
  keep "round$1" "$work/cloop.log"
}
# IMB truncates every size above 2^msglog (default 22, 4 MiB) to that
# cap, and gives up on a size once its run passes (msglog - 1) x -time
# seconds: raise the cap to the largest size asked for, and the time limit
# out of the way, so that every size is run as asked.
msglog=0
while [ $((1 << msglog)) -lt "$(printf '%s\n' "${sizes[@]}" | sort -n | tail -1)" ]; do msglog=$((msglog + 1)); done
[ "$msglog" -ge 22 ] || msglog=22
# run_imb ROUND TOOL THREAD_LEVEL
run_imb() {
  scripts/mpirun.sh "$np" "${extra[@]}" "$imb" Allreduce -npmin "$np" -msgsize "$list" -msglog "$msglog" -time 100000 \
    -iter "$iter" -iter_policy off -zero_size off -red_data_type float -thread_level "$3" >"$work/$2.log" 2>&1 ||
    { cat "$work/$2.log" >&2; echo "bench-imb.sh: IMB-MPI1 failed" >&2; exit 1; }
  ! grep -q "truncated to" "$work/$2.log" ||
    { grep "truncated to" "$work/$2.log" >&2; echo "bench-imb.sh: IMB-MPI1 ran another size than asked" >&2; exit 1; }
  imb_rows "$2" <"$work/$2.log" | awk -v r="$1" '{print r, $1, $2, $3, $4, "-"}' >>"$work/rows"
  keep "round$1" "$work/$2.log"
}
run_both_imb() {
  local level
  for level in $levels; do
    case $level in
      single) run_imb "$1" imb single ;;
      funneled) run_imb "$1" imbf funneled ;;
      *) echo "bench-imb.sh: IMB_LEVELS: $level: use single, funneled or both" >&2; exit 2 ;;
    esac
  done
}

echo "bench-imb.sh: $np ranks, binding ${bind:-"mpirun's default"}, $rounds rounds, IMB at ${levels// /, }, ${iter:-"as many as rsag keeps"} operations per size" >&2
: >"$work/rows"
for round in $(seq 1 "$rounds"); do
  # rsag's barrier method beside IMB, its batched one beside the C loop;
  # which of a pair goes first alternates.
  if [ $((round % 2)) = 1 ]; then
    run_rsag "$round" barrier rsag; run_both_imb "$round"
    [ -z "$cloop" ] || { run_rsag "$round" batched rsagb; run_cloop "$round"; }
  else
    [ -z "$cloop" ] || { run_cloop "$round"; run_rsag "$round" batched rsagb; }
    run_both_imb "$round"; run_rsag "$round" barrier rsag
  fi
  # This round: rsag's samples IMB's way (t_avg, t_max) beside its own
  # median, and IMB's t_avg, t_max at both thread levels.
  awk -v r="$round" '$1 == r { f[$3, $2] = sprintf("t_avg %.2f t_max %.2f", $4, $5); if ($2 == "rsag") m[$3] = $6; s[$3] = 1 }
    END {
      for (z in s) printf "  round %d, %d bytes: rsag %s (its median %.2f)%s%s%s\n", r, z, f[z, "rsag"], m[z],
        (f[z, "imb"] == "" ? "" : " | IMB " f[z, "imb"]), (f[z, "imbf"] == "" ? "" : " | IMB funneled " f[z, "imbf"]),
        (f[z, "cloop"] == "" ? "" : " | rsag batched " f[z, "rsagb"] " | C loop " f[z, "cloop"])
    }' "$work/rows" | sort -t, -k2n >&2
  echo "bench-imb.sh: round $round of $rounds done" >&2
done
summarize <"$work/rows"
[ -z "${KEEP:-}" ] || cp "$work/rows" "$KEEP/rows"
