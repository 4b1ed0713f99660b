#!/usr/bin/env bash
# Prints the cgo flags for the MPI that the user's mpicc wraps:
#   mpi-cgo-flags.sh cflags | ldflags
# Open MPI answers -showme:compile / -showme:link; MPICH and its derivatives
# answer -show with the whole compiler line, which we split into -I/-D and
# -L/-l/-Wl words. No path is assumed, so any MPI installation works.
set -euo pipefail
what=${1:?usage: mpi-cgo-flags.sh cflags|ldflags}
mpicc=${MPICC:-mpicc}
command -v "$mpicc" >/dev/null || { echo "mpi-cgo-flags: $mpicc not found: install an MPI (e.g. apt-get install libopenmpi-dev openmpi-bin) or set MPICC" >&2; exit 1; }

if out=$("$mpicc" -showme:compile 2>/dev/null) && [ "$what" = cflags ]; then echo "$out"; exit 0; fi
if out=$("$mpicc" -showme:link 2>/dev/null) && [ "$what" = ldflags ]; then echo "$out"; exit 0; fi

line=$("$mpicc" -show)
flags=()
for word in $line; do
  case "$what:$word" in
    cflags:-I*|cflags:-D*|cflags:-pthread) flags+=("$word") ;;
    ldflags:-L*|ldflags:-l*|ldflags:-Wl,*|ldflags:-pthread) flags+=("$word") ;;
  esac
done
echo "${flags[*]}"
