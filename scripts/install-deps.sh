#!/usr/bin/env bash
# Installs what rsag needs to build and run when it is missing: an MPI
# (Open MPI from the distribution's packages) and Go's modules. It changes
# nothing when mpicc and mpirun are already there.
set -euo pipefail
# pkg-config lets plain go commands find Open MPI (mpi/cgo_pkgconfig.go).
if command -v mpicc >/dev/null && command -v mpirun >/dev/null && command -v pkg-config >/dev/null; then
  exit 0
fi
if ! command -v apt-get >/dev/null; then
  command -v mpicc >/dev/null && command -v mpirun >/dev/null && exit 0
  echo "install-deps: mpicc/mpirun missing and this is not a Debian/Ubuntu machine: install Open MPI or MPICH (with its compiler wrapper mpicc) and retry" >&2
  exit 1
fi
sudo=""
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root (or sudo) to apt-get install libopenmpi-dev openmpi-bin" >&2; exit 1; }
  sudo=sudo
fi
echo "install-deps: installing Open MPI (libopenmpi-dev openmpi-bin) and pkg-config"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq libopenmpi-dev openmpi-bin pkgconf >/dev/null
