#!/usr/bin/env bash
# Starts rsag under mpirun with what this machine needs: --allow-run-as-root
# when run as root and --oversubscribe when it has fewer cores than ranks
# (both Open MPI flags; other MPIs get neither).
#   mpirun.sh NP rsag-args...
set -euo pipefail
np=$1; shift
extra=()
if mpirun --version 2>&1 | grep -q "Open MPI"; then
  [ "$(id -u)" = 0 ] && extra+=(--allow-run-as-root)
  [ "$(nproc)" -lt "$np" ] && extra+=(--oversubscribe)
fi
exec mpirun "${extra[@]}" -np "$np" "$@"
