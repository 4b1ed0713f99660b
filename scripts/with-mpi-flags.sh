#!/usr/bin/env bash
# Runs a command with the cgo flags of the user's own mpicc in its
# environment (CGO_CFLAGS, CGO_LDFLAGS; see mpi-cgo-flags.sh):
#   with-mpi-flags.sh go build ...
# The Makefile calls it in the recipes that compile, so that the flags are
# read after `make deps` has installed an MPI, not when make starts.
set -euo pipefail
here=$(dirname "$0")
CGO_CFLAGS=$("$here/mpi-cgo-flags.sh" cflags)
CGO_LDFLAGS=$("$here/mpi-cgo-flags.sh" ldflags)
export CGO_CFLAGS CGO_LDFLAGS
exec "$@"
