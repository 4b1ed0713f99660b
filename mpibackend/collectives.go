package mpibackend

import (
	"fmt"
	"slices"
	"time"
	"unsafe"

	"rsag/coll"
	"rsag/mpi"
)

// datatypes and ops map rsag's element types and reductions to MPI's, by
// name and not by value (coll's constants are not MPI's). Every
// coll.DType and coll.Op is in exactly one of each pair of tables: the
// ones MPI has map to its handle, the others say why MPI cannot run them.
var (
	datatypes = map[coll.DType]mpi.Datatype{
		coll.Int8: mpi.Int8, coll.Uint8: mpi.Uint8,
		coll.Int32: mpi.Int32, coll.Uint32: mpi.Uint32,
		coll.Int64: mpi.Int64, coll.Uint64: mpi.Uint64,
		coll.Float32: mpi.Float32, coll.Float64: mpi.Float64,
	}
	noDatatype = map[coll.DType]string{
		coll.Float16:  "MPI has no half-precision type",
		coll.BFloat16: "MPI has no bfloat16 type",
	}
	ops = map[coll.Op]mpi.Op{
		coll.Sum: mpi.Sum, coll.Prod: mpi.Prod, coll.Max: mpi.Max, coll.Min: mpi.Min,
	}
	noOp = map[coll.Op]string{
		coll.Avg: "MPI has no average reduction (NCCL's ncclAvg divides by the rank count in the collective itself)",
	}
)

// Supports returns nil for the element types and reductions MPI has, and
// otherwise an error that says why and what to do. The collectives return
// the same error when called anyway, on every rank alike, before MPI.
func (be *Backend) Supports(d coll.DType, o coll.Op) error {
	if err := supportsDType(d); err != nil {
		return err
	}
	return supportsOp(o)
}

func supportsDType(d coll.DType) error {
	if _, ok := datatypes[d]; ok {
		return nil
	}
	if why, ok := noDatatype[d]; ok {
		return fmt.Errorf("the MPI backend cannot run collectives on %s: %s; use the nccl backend or drop %s", d, why, d)
	}
	return fmt.Errorf("the MPI backend does not know element type %s", d)
}

func supportsOp(o coll.Op) error {
	if _, ok := ops[o]; ok {
		return nil
	}
	if why, ok := noOp[o]; ok {
		return fmt.Errorf("the MPI backend cannot reduce with %s: %s; use the nccl backend or drop %s", o, why, o)
	}
	return fmt.Errorf("the MPI backend does not know reduction %s", o)
}

// span is a buffer's place in memory.
type span struct {
	addr  uintptr // first byte
	count int     // elements
}

// classify returns true when send and recv are c's in-place layout on rank
// (coll.Collective says where the smaller buffer sits inside the larger),
// false when they do not overlap at all, and an error for any other
// overlap: MPI forbids aliased buffers outside MPI_IN_PLACE and would
// compute a wrong result without a word. The counts must already have
// passed CheckShapes.
func classify(c coll.Collective, send, recv span, elemSize, rank int) (bool, error) {
	outer, inner, innerName, outerName := recv, send, "input", "output"
	if !c.SendInside {
		outer, inner, innerName, outerName = send, recv, "output", "input"
	}
	at := c.InPlaceOffset(rank, send.count, recv.count)
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
		c.Name, innerName, outerName, got, outerName, c.InPlaceWhere, at, rank)
}

// call is a collective's arguments, checked and resolved to memory.
type call struct {
	send, recv []byte
	inPlace    bool
	recvOffset int // in place with recv inside send (ReduceScatter): recv's byte offset in send
	dt         mpi.Datatype
	op         mpi.Op
}

// mpiCollective is how one of coll's collectives runs on MPI: the MPI
// call it makes, prepared from its resolved arguments; one record per
// collective, so that the three collectives share one preparation.
type mpiCollective func(comm *mpi.Comm, c call, recvCount, sendCount int) (*mpi.Call, error)

var mpiCollectives = map[string]mpiCollective{
	// MPI_Allreduce; in place (send is recv, or the view of all of it) it
	// is MPI_IN_PLACE.
	coll.AllReduce.Name: func(comm *mpi.Comm, c call, count, _ int) (*mpi.Call, error) {
		if c.inPlace {
			return comm.AllreduceCall(nil, c.recv, count, c.dt, c.op)
		}
		return comm.AllreduceCall(c.send, c.recv, count, c.dt, c.op)
	},
	// MPI_Reduce_scatter_block. In place, recv is the view of send at rank
	// x recv count (NCCL's layout), while MPI_IN_PLACE leaves the result at
	// the start of the buffer: the C loop moves the result to its place
	// after each call, within the buffer and without allocating. The rest
	// of the input is left undefined, as MPI may use it as scratch space.
	coll.ReduceScatter.Name: func(comm *mpi.Comm, c call, count, _ int) (*mpi.Call, error) {
		if !c.inPlace {
			return comm.ReduceScatterBlockCall(c.send, c.recv, count, c.dt, c.op)
		}
		return comm.ReduceScatterBlockMovedCall(c.send, c.recvOffset, count, c.dt, c.op)
	},
	// MPI_Allgather; in place, send is the view of recv at rank x send
	// count, which is MPI_IN_PLACE's own layout.
	coll.AllGather.Name: func(comm *mpi.Comm, c call, _, count int) (*mpi.Call, error) {
		if c.inPlace {
			return comm.AllgatherCall(nil, c.recv, count, c.dt)
		}
		return comm.AllgatherCall(c.send, c.recv, count, c.dt)
	},
}

// Prepare checks c's shapes (returning CheckShapes' error unchanged),
// finds the memory of both buffers, whether the call is in place, and the
// MPI type and op, once; the call it returns only runs the collective.
func (be *Backend) Prepare(c coll.Collective, send, recv coll.Buffer, op coll.Op) (func() error, error) {
	loop, err := be.PrepareLoop(c, send, recv, op)
	if err != nil {
		return nil, err
	}
	return func() error { return loop(1) }, nil
}

// PrepareLoop is Prepare for n calls back to back, looped in C
// (coll.LoopPreparer).
func (be *Backend) PrepareLoop(c coll.Collective, send, recv coll.Buffer, op coll.Op) (func(n int) error, error) {
	p, err := be.prepare(c, send, recv, op)
	if err != nil {
		return nil, err
	}
	return func(n int) error { return p.wrap(p.call.Times(n)) }, nil
}

// PrepareSamples is Prepare for timed samples of many calls each, taken
// and checked in one C call (coll.SampleTimer).
func (be *Backend) PrepareSamples(c coll.Collective, send, recv coll.Buffer, op coll.Op) (coll.Sampler, error) {
	p, err := be.prepare(c, send, recv, op)
	if err != nil {
		return nil, err
	}
	return &sampler{prepared: p}, nil
}

// prepared is a collective ready to run: its MPI call, the memory of its
// output, and what its errors say.
type prepared struct {
	call  *mpi.Call
	out   []byte
	elem  int
	name  string
	count int
	dt    mpi.Datatype
}

func (p *prepared) wrap(err error) error {
	if err != nil {
		return fmt.Errorf("mpibackend: %s of %d %s elements: %w", p.name, p.count, p.dt, err)
	}
	return nil
}

// prepare checks c's shapes (returning CheckShapes' error unchanged),
// finds the memory of both buffers, whether the call is in place, and the
// MPI type and op, once.
func (be *Backend) prepare(c coll.Collective, send, recv coll.Buffer, op coll.Op) (*prepared, error) {
	makeCall, ok := mpiCollectives[c.Name]
	if !ok {
		return nil, fmt.Errorf("mpibackend: no MPI call for the %s collective", c.Name)
	}
	if send == nil || recv == nil {
		return nil, fmt.Errorf("mpibackend: %s: nil buffer", c.Name)
	}
	if err := coll.CheckShapes(c, send, recv, be.world); err != nil {
		return nil, err
	}
	s, sendMem, err := be.Bytes(c.Name+" input", send)
	if err != nil {
		return nil, err
	}
	_, recvMem, err := be.Bytes(c.Name+" output", recv)
	if err != nil {
		return nil, err
	}
	if err := supportsDType(s.DType()); err != nil {
		return nil, fmt.Errorf("mpibackend: %s: %w", c.Name, err)
	}
	args := call{send: sendMem, recv: recvMem, dt: datatypes[s.DType()]}
	if args.inPlace, err = classify(c, spanOf(sendMem, send.Count()), spanOf(recvMem, recv.Count()), s.DType().Size(), be.rank); err != nil {
		return nil, err
	}
	if args.inPlace && !c.SendInside {
		args.recvOffset = c.InPlaceOffset(be.rank, send.Count(), recv.Count()) * s.DType().Size()
	}
	if c.Name != coll.AllGather.Name {
		if err := supportsOp(op); err != nil {
			return nil, fmt.Errorf("mpibackend: %s: %w", c.Name, err)
		}
		args.op = ops[op]
	}
	recvCount, sendCount := recv.Count(), send.Count()
	p := &prepared{out: recvMem, elem: s.DType().Size(), name: c.Name, count: max(recvCount, sendCount), dt: args.dt}
	if p.call, err = makeCall(be.comm, args, recvCount, sendCount); err != nil {
		return nil, p.wrap(err)
	}
	return p, nil
}

// sampler is a prepared collective's timed samples (coll.Sampler).
type sampler struct {
	*prepared
	progress mpi.Progress
	ns       []int64
	spans    []int64
}

func (s *sampler) Samples(batch int, barrier bool, us []float64, held []bool, check coll.OutputCheck) (coll.SampleFault, error) {
	s.ns = slices.Grow(s.ns[:0], len(us))[:len(us)]
	s.spans = s.spans[:0]
	for _, sp := range check.Spans {
		s.spans = append(s.spans, int64(sp.Offset), int64(sp.Len), int64(sp.WantAt))
	}
	f, err := s.call.Samples(batch, barrier, s.ns, held, mpi.SampleCheck{Out: s.out, Spans: s.spans, Want: check.Want, Elem: s.elem}, &s.progress)
	for i, ns := range s.ns {
		us[i] = float64(ns) / 1e3
	}
	return coll.SampleFault{Sample: f.Sample, Element: f.Element, Got: f.Got}, s.wrap(err)
}

func (s *sampler) Progress() (int, time.Time) { return s.progress.Sample() }

// spanOf takes the address only to compare it; the memory is a mapping the
// garbage collector does not move.
func spanOf(mem []byte, count int) span {
	if len(mem) == 0 {
		return span{count: count}
	}
	return span{addr: uintptr(unsafe.Pointer(&mem[0])), count: count}
}

// Run prepares c and runs it once (coll.Backend).
func (be *Backend) Run(c coll.Collective, send, recv coll.Buffer, op coll.Op) error {
	run, err := be.Prepare(c, send, recv, op)
	if err != nil {
		return err
	}
	return run()
}
