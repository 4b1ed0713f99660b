#!/usr/bin/env bash
# Installs what rsag needs when it is missing: an MPI (Open MPI from the
# distribution's packages) and pkg-config, to build and run; with --test,
# also Chromium, which make test drives headless to open report.html, and
# node_exporter, promtool and xmllint, which check rsag.prom and junit.xml. It
# changes nothing when everything is already there, so a user without root
# who has an MPI builds without it.
#
#   scripts/install-deps.sh          what make build and make run need
#   scripts/install-deps.sh --test   and what make test needs
set -euo pipefail
want_test=0
case "${1:-}" in
  "") ;;
  --test) want_test=1 ;;
  *) echo "install-deps: unknown argument $1 (use --test, or nothing)" >&2; exit 2 ;;
esac

packages=()
# pkg-config lets plain go commands find Open MPI (mpi/cgo_pkgconfig.go).
if ! command -v mpicc >/dev/null || ! command -v mpirun >/dev/null; then
  packages+=(libopenmpi-dev openmpi-bin)
fi
command -v pkg-config >/dev/null || packages+=(pkgconf)
# The page test finds the browser as internal/testkit/browser does.
have_chromium() {
  [ -n "${RSAG_CHROMIUM:-}" ] && return 0
  command -v chromium >/dev/null || command -v chromium-browser >/dev/null || command -v google-chrome >/dev/null
}
if [ "$want_test" = 1 ] && ! have_chromium; then
  packages+=(chromium)
fi
# The operator files' tests run the real programs (e2e/operators_test.go):
# node_exporter's textfile collector, promtool, and xmllint for junit.xml.
if [ "$want_test" = 1 ]; then
  command -v prometheus-node-exporter >/dev/null || packages+=(prometheus-node-exporter)
  command -v promtool >/dev/null || packages+=(prometheus)
  command -v xmllint >/dev/null || packages+=(libxml2-utils)
  # The history file's independent reader (history/python_test.go).
  command -v python3 >/dev/null || packages+=(python3)
fi
[ "${#packages[@]}" = 0 ] && exit 0

if ! command -v apt-get >/dev/null; then
  if command -v mpicc >/dev/null && command -v mpirun >/dev/null && { [ "$want_test" = 0 ] || { have_chromium && command -v promtool >/dev/null && command -v xmllint >/dev/null && command -v prometheus-node-exporter >/dev/null; }; }; then
    exit 0 # pkg-config is only a convenience for plain go commands
  fi
  echo "install-deps: missing ${packages[*]} and this is not a Debian/Ubuntu machine: install Open MPI or MPICH (with its compiler wrapper mpicc)" \
    "and, for make test, Chromium (or set RSAG_CHROMIUM to a Chromium binary), then retry" >&2
  exit 1
fi
sudo=""
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root (or sudo) to apt-get install ${packages[*]}" >&2; exit 1; }
  sudo=sudo
fi
echo "install-deps: installing ${packages[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq "${packages[@]}" >/dev/null
