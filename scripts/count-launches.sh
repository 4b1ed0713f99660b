#!/usr/bin/env bash
# Runs a command with every mpirun it starts counted, and prints the count
# when it ends: make test's measure of how many MPI jobs its tests launch
# (each costs about half a second before rsag's first line). A shim named
# mpirun goes first on PATH; `mpirun --version` and the like are asked, not
# launched, and are not counted.
#   count-launches.sh COMMAND ARGS...
set -euo pipefail
real=$(command -v mpirun) || { echo "count-launches: mpirun not found (make deps)" >&2; exit 1; }
# The shim lives under the checkout, not /tmp: an emulated host
# (scripts/hosts.sh) mounts a /tmp of its own, and the mpiruns the tests
# start inside one were not counted (about 20 of make test's).
mkdir -p .build
dir=$(mktemp -d "$PWD/.build/count-launches.XXXXXX")
trap 'rm -rf "$dir"' EXIT
log="$dir/launches"
: >"$log"
cat >"$dir/mpirun" <<SHIM
#!/bin/sh
case "\${1:-}" in --version|-V|--help|-h) ;; *) echo . >>"$log" ;; esac
exec "$real" "\$@"
SHIM
chmod +x "$dir/mpirun"
rc=0
PATH="$dir:$PATH" "$@" || rc=$?
echo "count-launches: $(wc -l <"$log") mpirun launches"
exit "$rc"
