#!/bin/bash
# record-exit.sh — runs rsag ($RSAG_REAL_BIN) as one rank and writes its exit
# status to $RSAG_EXIT_DIR/RANK, so that slurm/healthcheck.sbatch exits with
# rsag's own status: srun's is the highest of all tasks', and a task the
# launcher killed after rank 0 ended (--kill-on-bad-exit) makes it 143.
#
# healthcheck.sbatch sets RSAG_BIN to this file for ch7.sbatch; it is not run
# by hand. `-version` (ch7.sbatch asks it before the launch) is not recorded.
set -u
if [[ ${1:-} == -version || -z ${RSAG_EXIT_DIR:-} ]]; then
	exec "$RSAG_REAL_BIN" "$@"
fi
rank=${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-${SLURM_PROCID:-x}}}
# In the background with stdin kept (a background job's stdin is otherwise
# /dev/null), and a signal to this shell passed on: a launcher that signals
# only the process it started still reaches rsag.
"$RSAG_REAL_BIN" "$@" <&0 &
child=$!
trap 'kill -TERM "$child" 2>/dev/null' TERM INT HUP
wait "$child"
rc=$?
while kill -0 "$child" 2>/dev/null; do # wait was cut short by a signal
	wait "$child"
	rc=$?
done
if [[ $rank =~ ^[0-9]+$ ]]; then
	echo "$rc" >"$RSAG_EXIT_DIR/$rank.tmp" && mv -f "$RSAG_EXIT_DIR/$rank.tmp" "$RSAG_EXIT_DIR/$rank"
fi
exit "$rc"
