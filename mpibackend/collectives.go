package mpibackend

import (
	"fmt"
	"unsafe"

	"rsag/mpi"
	"rsag/phases"
)

// datatypes and ops map rsag's element types and reductions to MPI's, by
// name and not by value (phases' constants are not MPI's). Every
// phases.DType and phases.Op is in exactly one of each pair of tables: the
// ones MPI has map to its handle, the others say why MPI cannot run them.
var (
	datatypes = map[phases.DType]mpi.Datatype{
		phases.Int8: mpi.Int8, phases.Uint8: mpi.Uint8,
		phases.Int32: mpi.Int32, phases.Uint32: mpi.Uint32,
		phases.Int64: mpi.Int64, phases.Uint64: mpi.Uint64,
		phases.Float32: mpi.Float32, phases.Float64: mpi.Float64,
	}
	noDatatype = map[phases.DType]string{
		phases.Float16:  "MPI has no half-precision type",
		phases.BFloat16: "MPI has no bfloat16 type",
	}
	ops = map[phases.Op]mpi.Op{
		phases.Sum: mpi.Sum, phases.Prod: mpi.Prod, phases.Max: mpi.Max, phases.Min: mpi.Min,
	}
	noOp = map[phases.Op]string{
		phases.Avg: "MPI has no average reduction (NCCL's ncclAvg divides by the rank count in the collective itself)",
	}
)

// Supports returns nil for the element types and reductions MPI has, and
// otherwise an error that says why and what to do. The collectives return
// the same error when called anyway, on every rank alike, before MPI.
func (be *Backend) Supports(d phases.DType, o phases.Op) error {
	if err := supportsDType(d); err != nil {
		return err
	}
	return supportsOp(o)
}

func supportsDType(d phases.DType) error {
	if _, ok := datatypes[d]; ok {
		return nil
	}
	if why, ok := noDatatype[d]; ok {
		return fmt.Errorf("the MPI backend cannot run collectives on %s: %s; use the nccl backend or drop %s", d, why, d)
	}
	return fmt.Errorf("the MPI backend does not know element type %s", d)
}

func supportsOp(o phases.Op) error {
	if _, ok := ops[o]; ok {
		return nil
	}
	if why, ok := noOp[o]; ok {
		return fmt.Errorf("the MPI backend cannot reduce with %s: %s; use the nccl backend or drop %s", o, why, o)
	}
	return fmt.Errorf("the MPI backend does not know reduction %s", o)
}

// inPlace is where a collective's in-place call has its smaller buffer
// inside the larger one, NCCL's convention (phases.Backend documents it):
// the data this rank contributes or receives, at its place in the full
// buffer. One record per collective, so that the three calls share one check.
type inPlace struct {
	coll phases.Collective
	// sendInside: the input is a view of the output (all-reduce,
	// all-gather); otherwise the output is a view of the input
	// (reduce-scatter).
	sendInside bool
	// offset is the inner buffer's element offset in the outer one.
	offset func(rank, sendCount, recvCount int) int
	// where says, for an error message, what the offset is.
	where string
}

var (
	allReduceInPlace = inPlace{
		coll: phases.AllReduceColl, sendInside: true, where: "0",
		offset: func(rank, send, recv int) int { return 0 },
	}
	reduceScatterInPlace = inPlace{
		coll: phases.ReduceScatterColl, sendInside: false, where: "rank x output elements",
		offset: func(rank, send, recv int) int { return rank * recv },
	}
	allGatherInPlace = inPlace{
		coll: phases.AllGatherColl, sendInside: true, where: "rank x input elements",
		offset: func(rank, send, recv int) int { return rank * send },
	}
)

// span is a buffer's place in memory.
type span struct {
	addr  uintptr // first byte
	count int     // elements
}

// classify returns true when send and recv are p's in-place layout on rank,
// false when they do not overlap at all, and an error for any other overlap:
// MPI forbids aliased buffers outside MPI_IN_PLACE and would compute a wrong
// result without a word. The counts must already have passed CheckShapes.
func (p inPlace) classify(send, recv span, elemSize, rank int) (bool, error) {
	outer, inner, innerName, outerName := recv, send, "input", "output"
	if !p.sendInside {
		outer, inner, innerName, outerName = send, recv, "output", "input"
	}
	at := p.offset(rank, send.count, recv.count)
	outerEnd := outer.addr + uintptr(outer.count*elemSize)
	innerEnd := inner.addr + uintptr(inner.count*elemSize)
	if inner.addr == outer.addr+uintptr(at*elemSize) && innerEnd <= outerEnd {
		return true, nil
	}
	if inner.addr >= outerEnd || outer.addr >= innerEnd {
		return false, nil
	}
	// Differences of overlapping addresses: small, and negative when the
	// inner buffer starts first.
	got := (int64(inner.addr) - int64(outer.addr)) / int64(elemSize)
	return false, fmt.Errorf("mpibackend: %s: the %s overlaps the %s at element offset %d; in place it must be the view "+
		"of the %s at element offset %s = %d on rank %d, and otherwise not overlap it",
		p.coll.Name, innerName, outerName, got, outerName, p.where, at, rank)
}

// call is a collective's arguments, checked and resolved to memory.
type call struct {
	send, recv []byte
	inPlace    bool
	dt         mpi.Datatype
}

// prepare checks the shapes (returning CheckShapes' error unchanged), finds
// the memory of both buffers and whether the call is in place.
func (be *Backend) prepare(p inPlace, send, recv phases.Buffer) (call, error) {
	if send == nil || recv == nil {
		return call{}, fmt.Errorf("mpibackend: %s: nil buffer", p.coll.Name)
	}
	if err := phases.CheckShapes(p.coll, send, recv, be.world); err != nil {
		return call{}, err
	}
	s, sendMem, err := be.memory(p.coll.Name+" input", send)
	if err != nil {
		return call{}, err
	}
	_, recvMem, err := be.memory(p.coll.Name+" output", recv)
	if err != nil {
		return call{}, err
	}
	if err := supportsDType(s.dtype); err != nil {
		return call{}, fmt.Errorf("mpibackend: %s: %w", p.coll.Name, err)
	}
	dt := datatypes[s.dtype]
	in, err := p.classify(spanOf(sendMem, send.Count()), spanOf(recvMem, recv.Count()), s.dtype.Size(), be.rank)
	if err != nil {
		return call{}, err
	}
	return call{send: sendMem, recv: recvMem, inPlace: in, dt: dt}, nil
}

// spanOf takes the address only to compare it; the memory is a mapping the
// garbage collector does not move.
func spanOf(mem []byte, count int) span {
	if len(mem) == 0 {
		return span{count: count}
	}
	return span{addr: uintptr(unsafe.Pointer(&mem[0])), count: count}
}

func mpiOp(coll string, op phases.Op) (mpi.Op, error) {
	if err := supportsOp(op); err != nil {
		return 0, fmt.Errorf("mpibackend: %s: %w", coll, err)
	}
	return ops[op], nil
}

func wrap(coll string, count int, dt mpi.Datatype, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("mpibackend: %s of %d %s elements: %w", coll, count, dt, err)
}

// AllReduce is MPI_Allreduce; in place (send is recv, or the view of all of
// it) it is MPI_IN_PLACE.
func (be *Backend) AllReduce(send, recv phases.Buffer, op phases.Op) error {
	c, err := be.prepare(allReduceInPlace, send, recv)
	if err != nil {
		return err
	}
	o, err := mpiOp(phases.AllReduceColl.Name, op)
	if err != nil {
		return err
	}
	n := recv.Count()
	if c.inPlace {
		return wrap(phases.AllReduceColl.Name, n, c.dt, be.comm.Allreduce(nil, c.recv, n, c.dt, o))
	}
	return wrap(phases.AllReduceColl.Name, n, c.dt, be.comm.Allreduce(c.send, c.recv, n, c.dt, o))
}

// ReduceScatter is MPI_Reduce_scatter_block. In place, recv is the view of
// send at rank x recv.Count() (NCCL's layout), while MPI_IN_PLACE leaves the
// result at the start of the buffer: the result is moved to its place
// afterwards, within the buffer and without allocating. The rest of the
// input is left undefined, as MPI may use it as scratch space.
func (be *Backend) ReduceScatter(send, recv phases.Buffer, op phases.Op) error {
	c, err := be.prepare(reduceScatterInPlace, send, recv)
	if err != nil {
		return err
	}
	o, err := mpiOp(phases.ReduceScatterColl.Name, op)
	if err != nil {
		return err
	}
	n := recv.Count()
	if !c.inPlace {
		return wrap(phases.ReduceScatterColl.Name, n, c.dt, be.comm.ReduceScatterBlock(c.send, c.recv, n, c.dt, o))
	}
	if err := be.comm.ReduceScatterBlock(nil, c.send, n, c.dt, o); err != nil {
		return wrap(phases.ReduceScatterColl.Name, n, c.dt, err)
	}
	copy(c.recv, c.send[:len(c.recv)])
	return nil
}

// AllGather is MPI_Allgather; in place, send is the view of recv at rank x
// send.Count(), which is MPI_IN_PLACE's own layout.
func (be *Backend) AllGather(send, recv phases.Buffer) error {
	c, err := be.prepare(allGatherInPlace, send, recv)
	if err != nil {
		return err
	}
	n := send.Count()
	if c.inPlace {
		return wrap(phases.AllGatherColl.Name, n, c.dt, be.comm.Allgather(nil, c.recv, n, c.dt))
	}
	return wrap(phases.AllGatherColl.Name, n, c.dt, be.comm.Allgather(c.send, c.recv, n, c.dt))
}
