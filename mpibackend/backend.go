// Package mpibackend is rsag's Backend for CPU clusters: buffers in host
// memory, collectives through MPI (package mpi). It is a real backend, not a
// stand-in: it runs the same experiment as the NCCL backend on machines
// without GPUs.
//
// Buffers are anonymous memory mappings, unmapped by Free, so that memory is
// returned when the experiment says so rather than when the garbage
// collector runs, and Memory counts exactly the bytes of the buffers that
// Alloc returned and Free has not released.
package mpibackend

import (
	"errors"
	"fmt"

	"rsag/coll"
	"rsag/internal/hostmem"
	"rsag/mpi"
)

var (
	_ coll.Backend      = (*Backend)(nil)
	_ coll.Preparer     = (*Backend)(nil)
	_ coll.Splitter     = (*Backend)(nil)
	_ coll.LoopPreparer = (*Backend)(nil)
	// The phases' host-side Comm is the world communicator itself.
	_ coll.Comm = (*mpi.Comm)(nil)
)

// Backend is one rank's MPI backend. Like MPI itself, it is used from the
// main goroutine only.
type Backend struct {
	comm        *mpi.Comm
	rank, world int
	// The rank's buffers (memory.go), shared with its groups (Split).
	*hostmem.Heap
	group      bool // made by Split: Close frees its communicator alone
	closed     bool
	localSize  int    // ranks on this node, which share its memory
	meminfo    string // /proc/meminfo; another file in tests
	cgroupRoot string // "/", where /proc and /sys are; another tree in tests
}

// New returns the backend of this rank of c.
func New(c *mpi.Comm) (*Backend, error) {
	if c == nil {
		return nil, errors.New("mpibackend: New: no communicator")
	}
	return newBackend(c, c.Rank(), c.Size()), nil
}

// newBackend lets tests give a backend a rank and world size other than
// the communicator's, to check what the backend decides before MPI is called.
func newBackend(c *mpi.Comm, rank, world int) *Backend {
	return &Backend{comm: c, rank: rank, world: world, Heap: newHeap(),
		localSize: c.LocalSize(), meminfo: meminfo, cgroupRoot: "/"}
}

func (be *Backend) Info() coll.Info {
	return coll.Info{
		Backend:   "mpi",
		Host:      be.comm.Host(),
		Device:    "host memory",
		Libraries: []coll.Library{{Name: "mpi", Version: mpi.LibraryVersion()}},
	}
}

func (be *Backend) Rank() int      { return be.rank }
func (be *Backend) WorldSize() int { return be.world }

// Synchronize does nothing: MPI's blocking collectives have finished when
// they return.
func (be *Backend) Synchronize() error { return nil }

// Time returns the wall-clock time of one call of op in microseconds, read
// from the monotonic clock (hostmem.TimeBatch).
func (be *Backend) Time(op func() error) (float64, error) {
	if err := be.Synchronize(); err != nil {
		return 0, err
	}
	return hostmem.TimeBatch(1, op)
}

// Split gives the group of ranks with the same color, ordered by key
// (MPI_Comm_split): its collectives run among them, on this rank's buffers
// and accounting, which it shares (coll.Splitter). For coll.NoColor the
// rank takes part and gets no group: nil, and no error.
func (be *Backend) Split(color, key int) (coll.Backend, error) {
	if be.closed {
		return nil, errors.New("mpibackend: Split after Close")
	}
	if color == coll.NoColor {
		color = mpi.NoColor
	}
	sub, err := be.comm.Split(color, key)
	if err != nil {
		return nil, fmt.Errorf("mpibackend: Split into color %d: %w", color, err)
	}
	if sub == nil {
		return nil, nil
	}
	// The node's memory is shared by the world's ranks on it, whatever the group.
	return &Backend{comm: sub, rank: sub.Rank(), world: sub.Size(), Heap: be.Share(), group: true,
		localSize: be.localSize, meminfo: be.meminfo, cgroupRoot: be.cgroupRoot}, nil
}

// Close releases the buffers still allocated; a group's Close frees its
// communicator only. Buffers left over are a leak in the caller, so Close
// reports them as an error after releasing them.
func (be *Backend) Close() error {
	if be.closed {
		return errors.New("mpibackend: Close: already closed")
	}
	be.closed = true
	err := be.Heap.Close()
	if be.group {
		return be.comm.Free()
	}
	return err
}
