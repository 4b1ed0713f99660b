//go:build !rsag_mpicc

package mpi

// Plain go commands (go build, go vet, go test) find Open MPI through its
// pkg-config file, so they work without any setup on Debian and Ubuntu.
// The Makefile builds with -tags rsag_mpicc instead and takes the flags from
// the user's own mpicc, which also covers MPICH and MPIs without pkg-config.

// #cgo pkg-config: ompi-c
import "C"
