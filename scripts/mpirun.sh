#!/usr/bin/env bash
# Starts rsag under mpirun with what this machine needs: --allow-run-as-root
# when run as root and --oversubscribe when it has fewer cores than ranks
# (both Open MPI flags; other MPIs get neither). It says which it added,
# once, on stderr, so that a person typing the mpirun line knows what to add.
#   mpirun.sh NP rsag-args...
set -euo pipefail
np=$1; shift
extra=() said=()
if mpirun --version 2>&1 | grep -q "Open MPI"; then
  if [ "$(id -u)" = 0 ]; then extra+=(--allow-run-as-root); said+=("--allow-run-as-root (running as root)"); fi
  if [ "$(nproc)" -lt "$np" ]; then extra+=(--oversubscribe); said+=("--oversubscribe ($np ranks on $(nproc) cores)"); fi
fi
if [ ${#said[@]} -gt 0 ]; then
  msg=$(printf '%s, ' "${said[@]}")
  echo "mpirun.sh: adding ${msg%, } to mpirun" >&2
fi
exec mpirun "${extra[@]}" -np "$np" "$@"
