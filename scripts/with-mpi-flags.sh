#!/usr/bin/env bash
# Runs a command with the cgo flags of the user's own mpicc in its
# environment (CGO_CFLAGS, CGO_LDFLAGS; see mpi-cgo-flags.sh):
#   with-mpi-flags.sh go build ...
# The Makefile calls it in the recipes that compile, so that the flags are
# read after `make deps` has installed an MPI, not when make starts.
#
# MPI's flags are added to what go would use without them (`go env`: the
# user's CGO_CFLAGS, or go's default "-O2 -g"), not put in their place: a
# CGO_CFLAGS of include paths alone compiles rsag's C, its timed loops
# among them, unoptimized.
set -euo pipefail
here=$(dirname "$0")
go=${GO:-go}
{ read -r go_cflags && read -r go_ldflags; } < <("$go" env CGO_CFLAGS CGO_LDFLAGS) ||
  { echo "with-mpi-flags.sh: $go env CGO_CFLAGS CGO_LDFLAGS failed: is go installed (or GO set to it)?" >&2; exit 1; }
CGO_CFLAGS="$go_cflags $("$here/mpi-cgo-flags.sh" cflags)"
CGO_LDFLAGS="$go_ldflags $("$here/mpi-cgo-flags.sh" ldflags)"
export CGO_CFLAGS CGO_LDFLAGS
exec "$@"
