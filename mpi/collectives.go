package mpi

import (
	"fmt"
	"unsafe"
)

// Datatype is an MPI element type; its MPI handle is in the datatypes table
// (cgo.go).
type Datatype int

const (
	Byte    Datatype = iota // MPI_BYTE
	Int8                    // MPI_INT8_T
	Uint8                   // MPI_UINT8_T
	Int32                   // MPI_INT32_T
	Uint32                  // MPI_UINT32_T
	Int64                   // MPI_INT64_T
	Uint64                  // MPI_UINT64_T
	Float32                 // MPI_FLOAT
	Float64                 // MPI_DOUBLE
)

func (d Datatype) valid() bool { return d >= 0 && int(d) < len(datatypes) && datatypes[d].size > 0 }

// Size is the element size in bytes, 0 for an unknown Datatype.
func (d Datatype) Size() int {
	if !d.valid() {
		return 0
	}
	return datatypes[d].size
}

func (d Datatype) String() string {
	if !d.valid() {
		return fmt.Sprintf("Datatype(%d)", int(d))
	}
	return datatypes[d].name
}

// Op is an MPI reduction; its MPI handle is in the ops table (cgo.go).
type Op int

const (
	Sum  Op = iota // MPI_SUM
	Prod           // MPI_PROD
	Max            // MPI_MAX
	Min            // MPI_MIN
)

func (o Op) valid() bool { return o >= 0 && int(o) < len(ops) && ops[o].name != "" }

func (o Op) String() string {
	if !o.valid() {
		return fmt.Sprintf("Op(%d)", int(o))
	}
	return ops[o].name
}

// Allreduce reduces count elements of send over all ranks into recv on
// every rank. send == nil means MPI_IN_PLACE: the input is taken from recv.
func (c *Comm) Allreduce(send, recv []byte, count int, dt Datatype, op Op) error {
	return c.AllreduceTimes(send, recv, count, dt, op, 1)
}

// AllreduceTimes is Allreduce n times back to back, the loop in C (as IMB
// and nccl-tests time): the arguments are checked once, and no Go runs
// between the calls. It stops at the first call that fails.
func (c *Comm) AllreduceTimes(send, recv []byte, count int, dt Datatype, op Op, n int) error {
	return times(c.AllreduceCall(send, recv, count, dt, op))(n)
}

// ReduceScatterBlock reduces recvCount x world elements of send over all
// ranks and leaves block rank (elements rank*recvCount on) in recv. send ==
// nil means MPI_IN_PLACE: MPI takes the whole input from recv and leaves
// this rank's block at the start of recv.
func (c *Comm) ReduceScatterBlock(send, recv []byte, recvCount int, dt Datatype, op Op) error {
	return c.ReduceScatterBlockTimes(send, recv, recvCount, dt, op, 1)
}

// ReduceScatterBlockTimes is ReduceScatterBlock n times back to back, the
// loop in C.
func (c *Comm) ReduceScatterBlockTimes(send, recv []byte, recvCount int, dt Datatype, op Op, n int) error {
	return times(c.ReduceScatterBlockCall(send, recv, recvCount, dt, op))(n)
}

// ReduceScatterBlockMovedTimes is ReduceScatterBlockMovedCall run n times
// back to back, the loop in C.
func (c *Comm) ReduceScatterBlockMovedTimes(buf []byte, offset, recvCount int, dt Datatype, op Op, n int) error {
	return times(c.ReduceScatterBlockMovedCall(buf, offset, recvCount, dt, op))(n)
}

// reduceScatterArgs checks a ReduceScatterBlock's counts, type and op,
// and returns its input's element count.
func (c *Comm) reduceScatterArgs(name string, recvCount int, dt Datatype, op Op) (total int, err error) {
	total = recvCount * c.size
	if err := c.hostArgs(name, dt, recvCount, total); err != nil {
		return 0, err
	}
	return total, checkOp(name, op)
}

// Allgather concatenates sendCount elements from every rank, in rank order,
// into recv on every rank. send == nil means MPI_IN_PLACE: each rank's
// contribution already sits at element rank*sendCount of recv.
func (c *Comm) Allgather(send, recv []byte, sendCount int, dt Datatype) error {
	return c.AllgatherTimes(send, recv, sendCount, dt, 1)
}

// AllgatherTimes is Allgather n times back to back, the loop in C.
func (c *Comm) AllgatherTimes(send, recv []byte, sendCount int, dt Datatype, n int) error {
	return times(c.AllgatherCall(send, recv, sendCount, dt))(n)
}

// times is k.Times, or a function that returns err.
func times(k *Call, err error) func(n int) error {
	if err != nil {
		return func(int) error { return err }
	}
	return k.Times
}

// hostArgs checks what the host collectives share. total is the largest
// element count the call handles (count x world size for the block
// collectives); it must fit a C int too, since MPI libraries compute it
// internally as one. total cannot have overflowed: count fits a C int and so
// does the world size.
func (c *Comm) hostArgs(name string, dt Datatype, count, total int) error {
	if err := c.live(name); err != nil {
		return err
	}
	if !dt.valid() {
		return fmt.Errorf("mpi: %s: unknown datatype %s", name, dt)
	}
	if err := cInt(name, "count", count); err != nil {
		return err
	}
	return cInt(name, "total count", total)
}

func checkOp(name string, op Op) error {
	if !op.valid() {
		return fmt.Errorf("mpi: %s: unknown op %s", name, op)
	}
	return nil
}

// buffers checks that send (nil for in place) and recv hold at least the
// bytes the call reads and writes, and do not overlap: MPI forbids aliased
// buffers other than through MPI_IN_PLACE, and would silently compute wrong
// results.
func buffers(name string, send []byte, sendBytes int, recv []byte, recvBytes int) error {
	if len(recv) < recvBytes {
		return fmt.Errorf("mpi: %s: recv has %d bytes, the call writes %d", name, len(recv), recvBytes)
	}
	if send == nil {
		return nil
	}
	if len(send) < sendBytes {
		return fmt.Errorf("mpi: %s: send has %d bytes, the call reads %d", name, len(send), sendBytes)
	}
	if overlap(send[:sendBytes], recv[:recvBytes]) {
		return fmt.Errorf("mpi: %s: send and recv overlap; pass send == nil for MPI_IN_PLACE", name)
	}
	return nil
}

func overlap(a, b []byte) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	pa, pb := uintptr(unsafe.Pointer(&a[0])), uintptr(unsafe.Pointer(&b[0]))
	return pa < pb+uintptr(len(b)) && pb < pa+uintptr(len(a))
}
