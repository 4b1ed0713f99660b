#!/usr/bin/env bash
# judge-proof.sh measures how often the judge (rsag check, rsag compare) is
# wrong on real runs, as issue 58 asks, and writes the counts to
# $OUT/judge.txt (and prints them):
#
#  (a) identical runs: PAIRS+1 runs of configs/smoke.toml in a row on the MPI
#      backend (NP ranks), each checked against the run before it (a baseline
#      of one run) and, from the 6th on, against the last 5 runs of a history
#      and then appended to it (nightly order: a flagged run leaves later
#      baselines). At smoke's 4 cycles and at 10 (-set timing.cycles=10), on
#      the machine as it is ("idle") and beside HOGS busy loops (yes >/dev/null).
#      Each check is counted as flagged (exit 1), inconclusive (3), ok (0) or
#      error (anything else: a bug; its output is kept under $OUT/logs).
#  (b) the planted 1.4x slowdown: e2e/testdata/slow.c (a PMPI interposer,
#      built here with mpicc) puts a 20 ms floor under every timed collective
#      of 3360 and 215040 bytes on rank 0; 5 runs with the floor are appended
#      to a history, then NIGHTS runs with the 210K direct AllReduce at 28 ms
#      (1.4x) are each checked against the last 5 and appended. Every night
#      should be flagged: a flagged run is no baseline, so the slowdown never
#      becomes its own.
#
# No Go needed: RSAG is a prebuilt rsag. Open MPI's mpirun and mpicc on PATH.
#   RSAG=/path/to/rsag OUT=/tmp/judge scripts/judge-proof.sh
# Knobs (environment): NP=4 PAIRS=20 NIGHTS=5 HOGS=4 BUDGET_S=500. The budget
# is split in five shares (four identical series, the planted one), each
# series' end at START + k/5 of it, so time one leaves over goes to the
# next; a series stops starting runs when the next (as long as its slowest
# so far) would overrun its end, and says so in the table, so the whole
# fits in about BUDGET_S seconds.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
: "${RSAG:?set RSAG to a prebuilt rsag binary}"
RSAG=$(cd "$(dirname "$RSAG")" && pwd)/$(basename "$RSAG")
OUT=${OUT:-$PWD/judge-proof-out}
NP=${NP:-4}
PAIRS=${PAIRS:-20}
NIGHTS=${NIGHTS:-5}
HOGS=${HOGS:-4}
BUDGET_S=${BUDGET_S:-500}
[ -x "$RSAG" ] || { echo "judge-proof: $RSAG is not an executable" >&2; exit 2; }
mkdir -p "$OUT/logs" "$OUT/runs" || exit 2
rm -rf "${OUT:?}/runs/"* "$OUT/logs/"* "$OUT"/*.db
TABLE=$OUT/judge.txt
START=$(date +%s)
deadline() { echo $((START + BUDGET_S * $1 / 5)); } # the end of piece $1 of 5

hogs=()
stop_hogs() {
	for pid in "${hogs[@]}"; do kill "$pid" 2>/dev/null; done
	for pid in "${hogs[@]}"; do wait "$pid" 2>/dev/null; done
	hogs=()
}
trap stop_hogs EXIT
trap 'stop_hogs; exit 130' INT TERM

load() { cut -d' ' -f1 /proc/loadavg; }
now() { date +%s; }

# rsag_run DIR [mpirun and rsag args...]: one smoke run on NP ranks; its
# output is kept in the logs. Returns rsag's exit status.
rsag_run() {
	local dir=$1; shift
	timeout 120 "$ROOT/scripts/mpirun.sh" "$NP" "$@" -config "$ROOT/configs/smoke.toml" -backend mpi -output-dir "$dir" \
		>"$OUT/logs/$(basename "$(dirname "$dir")")-$(basename "$dir").log" 2>&1
}

# judge NAME ARGS...: rsag check ARGS, counted into the counters named
# NAME_flagged, NAME_unsure, NAME_ok, NAME_error.
judge() {
	local name=$1; shift
	local log=$OUT/logs/check-$name-$((++checks)).log
	"$RSAG" check "$@" >"$log" 2>&1
	case $? in
		0) eval "((${name}_ok++))" ;;
		1) eval "((${name}_flagged++))" ;;
		3) eval "((${name}_unsure++))" ;;
		*) eval "((${name}_error++))"; echo "judge-proof: error: rsag check $* (see $log)" >&2 ;;
	esac
}
checks=0

# series NAME CYCLES HOGS DEADLINE: the identical-run series.
rows=()
series() {
	local name=$1 cycles=$2 nhogs=$3
	local deadline=$4 dir=$OUT/runs/$name db=$OUT/$name.db slowest=5 i t0 took cut=""
	mkdir -p "$dir"
	pair_ok=0 pair_flagged=0 pair_unsure=0 pair_error=0 hist_ok=0 hist_flagged=0 hist_unsure=0 hist_error=0
	local l0 l1 runs=0 failed=0
	for ((k = 0; k < nhogs; k++)); do
		yes >/dev/null &
		hogs+=($!)
	done
	sleep 1
	l0=$(load)
	for ((i = 1; i <= PAIRS + 1; i++)); do
		if (( $(now) + slowest > deadline || $(now) + slowest > START + BUDGET_S )); then
			cut=" (cut at $((i - 1)) runs by BUDGET_S)"
			break
		fi
		t0=$(now)
		if ! rsag_run "$dir/run$i" "$RSAG" -set "timing.cycles=$cycles"; then
			failed=$((failed + 1))
			echo "judge-proof: $name run $i failed (see $OUT/logs/$name-run$i.log)" >&2
			continue
		fi
		runs=$((runs + 1))
		took=$(( $(now) - t0 + 1 ))
		(( took > slowest )) && slowest=$took
		local prev=$dir/run$((i - 1))
		[ -f "$prev/run.json" ] && grep -q '"complete"' "$prev/run.json" && judge pair -baseline "$prev" "$dir/run$i"
		(( runs > 5 )) && judge hist -baseline "$db" -last 5 "$dir/run$i"
		"$RSAG" history -append "$dir/run$i" "$db" >>"$OUT/logs/$name-append.log" 2>&1 ||
			echo "judge-proof: $name run $i not appended (see $OUT/logs/$name-append.log)" >&2
	done
	l1=$(load)
	stop_hogs
	local pairs=$((pair_ok + pair_flagged + pair_unsure + pair_error)) hist=$((hist_ok + hist_flagged + hist_unsure + hist_error))
	rows+=("$(printf '%-9s %6s %4s  %5s-%-5s  %2d / %2d / %2d / %d of %-3d  %2d / %2d / %2d / %d of %-3d  %d run(s), %d failed%s' \
		"$name" "$cycles" "$nhogs" "$l0" "$l1" "$pair_flagged" "$pair_unsure" "$pair_ok" "$pair_error" "$pairs" \
		"$hist_flagged" "$hist_unsure" "$hist_ok" "$hist_error" "$hist" "$runs" "$failed" "$cut")")
}

# planted DEADLINE: the 1.4x slowdown, checked nightly against the last 5 runs.
planted_row=""
planted() {
	local deadline=$1 dir=$OUT/runs/planted db=$OUT/planted.db lib=$OUT/libslow.so slowest=5 i t0 took
	mkdir -p "$dir"
	if ! mpicc -shared -fPIC -O2 -o "$lib" "$ROOT/e2e/testdata/slow.c" >"$OUT/logs/mpicc.log" 2>&1; then
		planted_row="planted: mpicc could not build e2e/testdata/slow.c (see $OUT/logs/mpicc.log)"
		return
	fi
	local block=$((3360 / NP)) big=$((215040 / NP))
	local floor="Allreduce:3360:20000,Allreduce:215040:20000,Reduce_scatter_block:$block:20000,Reduce_scatter_block:$big:20000,Allgather:$block:20000,Allgather:$big:20000"
	local slowed=${floor/Allreduce:215040:20000/Allreduce:215040:28000}
	local sets=(-set "timing.sizes_bytes=[3360,215040]" -set memory.enabled=false)
	nights_ok=0 nights_flagged=0 nights_unsure=0 nights_error=0
	local base=0 l0 l1 ratios=""
	l0=$(load)
	for ((i = 1; i <= 5 + NIGHTS; i++)); do
		if (( $(now) + slowest > deadline || $(now) + slowest > START + BUDGET_S )); then
			ratios+=" (cut at $((i - 1)) runs by BUDGET_S)"
			break
		fi
		local spec=$floor
		(( i > 5 )) && spec=$slowed
		t0=$(now)
		if ! rsag_run "$dir/run$i" -x "LD_PRELOAD=$lib" -x SLOW_RANK=0 -x "SLOW_SPEC=$spec" "$RSAG" "${sets[@]}"; then
			echo "judge-proof: planted run $i failed (see $OUT/logs/planted-run$i.log)" >&2
			continue
		fi
		took=$(( $(now) - t0 + 1 ))
		(( took > slowest )) && slowest=$took
		if (( i > 5 )); then
			judge nights -baseline "$db" -last 5 "$dir/run$i"
			# The slowed case's ratio that night, from the table's row.
			ratios+=" $(grep -E '^\|.*\| *210K *\|.*\| *direct *\|' "$OUT/logs/check-nights-$checks.log" | awk -F'|' '{print $(NF-3)}' | tr -d ' ')"
		else
			base=$((base + 1))
		fi
		"$RSAG" history -append "$dir/run$i" "$db" >>"$OUT/logs/planted-append.log" 2>&1 ||
			echo "judge-proof: planted run $i not appended (see $OUT/logs/planted-append.log)" >&2
	done
	l1=$(load)
	local nights=$((nights_ok + nights_flagged + nights_unsure + nights_error))
	planted_row=$(printf 'planted 1.4x (210K direct AllReduce, 28 ms on a 20 ms floor), %d baseline runs, load %s-%s:\n  flagged %d of %d nights (inconclusive %d, ok %d, error %d); the nights'"'"' ratios:%s' \
		"$base" "$l0" "$l1" "$nights_flagged" "$nights" "$nights_unsure" "$nights_ok" "$nights_error" "$ratios")
}

series idle4 4 0 "$(deadline 1)"
series idle10 10 0 "$(deadline 2)"
series hog4 4 "$HOGS" "$(deadline 3)"
series hog10 10 "$HOGS" "$(deadline 4)"
planted "$(deadline 5)"

{
	echo "judge-proof: $("$RSAG" -version 2>&1 | head -1); $NP MPI ranks on $(hostname) ($(nproc) processors); configs/smoke.toml; $(date -u +%Y-%m-%dT%H:%M:%SZ); $(( $(now) - START )) s of BUDGET_S=$BUDGET_S"
	echo "identical runs (flagged / inconclusive / ok / error of checks); pairs: each run against the one before it; last 5: against a history's last 5, then appended"
	printf '%-9s %6s %4s  %-11s  %-23s  %-23s  %s\n' series cycles hogs load pairs "last 5" runs
	for r in "${rows[@]}"; do echo "$r"; done
	echo "$planted_row"
} | tee "$TABLE"
