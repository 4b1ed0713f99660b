// Package mpi is rsag's small, checked MPI API over MPI_COMM_WORLD.
//
// It wraps github.com/sbromberger/gompi for what gompi does right (world
// rank and size, MPI_Wtime) and adds, in its own cgo, what gompi lacks or
// gets wrong: gompi ignores MPI's return codes, panics on empty slices, and
// its BcastBytes passes MPI_INT32_T and so moves four times the bytes asked.
// Here every MPI call is checked and a failure is an *Error; zero-length data
// is valid everywhere; MPI_COMM_WORLD returns errors (MPI_ERRORS_RETURN)
// instead of aborting, so the checks mean something.
//
// MPI is called from the main goroutine only: package main locks it to the
// main OS thread, which is the thread that initialised MPI.
package mpi

import (
	"errors"
	"fmt"
	"math"
	"strings"

	gompi "github.com/sbromberger/gompi"
)

// Error is a failed MPI call: the function, MPI's return code and MPI's own
// text for it (MPI_Error_string).
type Error struct {
	Op   string
	Code int
	Msg  string
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %s (code %d)", e.Op, e.Msg, e.Code) }

// Comm is MPI_COMM_WORLD as seen from this process. Rank, size, the
// node-local rank and size and the host name are found once, at Start.
type Comm struct {
	h                    handle // the MPI communicator
	rank, size           int
	localRank, localSize int
	host                 string
	finalized            bool                // or, for a split communicator, freed
	sub                  bool                // made by Split
	gompi                *gompi.Communicator // see gompiWorld
}

// Start initialises MPI and returns the world communicator. It fails when
// MPI was already initialised (or finalised: MPI cannot start twice in one
// process). A process started without mpirun is a singleton of size 1.
func Start() (*Comm, error) {
	initialized, finalized, err := state()
	if err != nil {
		return nil, err
	}
	if finalized {
		return nil, errors.New("mpi: Start: MPI was already finalized and cannot be started again")
	}
	if initialized {
		return nil, errors.New("mpi: Start: MPI is already initialized")
	}
	if err := initialize(); err != nil {
		return nil, err
	}
	if err := errorsReturn(); err != nil {
		return nil, err
	}
	c := &Comm{h: worldHandle()}
	c.rank, c.size = worldRankSize()
	if c.localRank, c.localSize, err = sharedRankSize(c.rank); err != nil {
		return nil, err
	}
	if c.host, err = processorName(); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Comm) Rank() int { return c.rank }
func (c *Comm) Size() int { return c.size }

// LocalRank is the rank among the processes on this node (those that share
// memory: MPI_COMM_TYPE_SHARED), in world-rank order.
func (c *Comm) LocalRank() int { return c.localRank }

// LocalSize is the number of processes on this node.
func (c *Comm) LocalSize() int { return c.localSize }

// Host is MPI_Get_processor_name.
func (c *Comm) Host() string { return c.host }

// Finalize shuts MPI down. Every later call on c fails.
func (c *Comm) Finalize() error {
	if err := c.live("Finalize"); err != nil {
		return err
	}
	if c.sub {
		return errors.New("mpi: Finalize of a split communicator: Free it, and Finalize the world")
	}
	c.finalized = true
	return finalize()
}

// Abort asks MPI to end every process of the job with code (MPI_Abort).
// It returns only when MPI could not: after Finalize, or when MPI_Abort
// itself returned; the caller then exits on its own.
func (c *Comm) Abort(code int) error {
	if c.finalized {
		return errors.New("mpi: Abort after Finalize")
	}
	abort(code)
	return errors.New("mpi: MPI_Abort returned")
}

// NoColor is the color of a rank that takes part in a Split and joins no
// communicator (MPI_UNDEFINED).
const NoColor = -1

// Split is MPI_Comm_split: collective over c, it returns the communicator
// of the ranks that passed the same color, ordered by key; for NoColor it
// returns nil and no error (MPI_COMM_NULL). Its node-local rank and size
// are its own rank and size (a group is within a node or across nodes, as
// its caller made it), its host c's. Free releases it.
func (c *Comm) Split(color, key int) (*Comm, error) {
	if err := c.live("Split"); err != nil {
		return nil, err
	}
	if color < 0 && color != NoColor {
		return nil, fmt.Errorf("mpi: Split: color %d is negative: give a color of 0 or more, or NoColor (%d) to join no communicator", color, NoColor)
	}
	h, ok, err := c.split(color, key)
	if err != nil || !ok {
		return nil, err
	}
	sub := &Comm{h: h, host: c.host, sub: true}
	if sub.rank, sub.size, err = sub.rankSize(); err != nil {
		sub.free()
		return nil, err
	}
	sub.localRank, sub.localSize = sub.rank, sub.size
	return sub, nil
}

// Free releases a communicator Split returned (MPI_Comm_free).
func (c *Comm) Free() error {
	if err := c.live("Free"); err != nil {
		return err
	}
	if !c.sub {
		return errors.New("mpi: Free of the world communicator: Finalize ends it")
	}
	c.finalized = true
	return c.free()
}

// Wtime is MPI_Wtime: seconds since an arbitrary time in the past.
func Wtime() float64 { return wtime() }

// LibraryVersion is the first line of MPI_Get_library_version, or "" when
// MPI cannot tell.
func LibraryVersion() string {
	v, err := libraryVersion()
	if err != nil {
		return ""
	}
	first, _, _ := strings.Cut(v, "\n")
	return strings.TrimSpace(first)
}

// live fails once c is finalized: MPI calls after MPI_Finalize are erroneous
// and may crash rather than return an error.
func (c *Comm) live(op string) error {
	if c.finalized {
		return fmt.Errorf("mpi: %s after Finalize", op)
	}
	return nil
}

// cInt fails when n does not fit MPI's C int counts.
func cInt(op, what string, n int) error {
	if n < 0 || n > math.MaxInt32 {
		return fmt.Errorf("mpi: %s: %s %d does not fit an MPI count (0 to %d)", op, what, n, math.MaxInt32)
	}
	return nil
}
