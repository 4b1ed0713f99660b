package inmem

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"rsag/coll"
	"rsag/internal/hostmem"
)

// layout is where a collective's in-place call has its smaller buffer
// inside the larger one (coll.Backend documents it, NCCL's convention),
// one record per collective as in mpibackend.
type layout struct {
	coll coll.Collective
	// sendInside: the input is a view of the output (all-reduce,
	// all-gather); otherwise the output is a view of the input
	// (reduce-scatter).
	sendInside bool
	offset     func(rank, sendCount, recvCount int) int
	where      string // what the offset is, for an error message
}

var (
	allReduceLayout = layout{coll: coll.AllReduce, sendInside: true, where: "0",
		offset: func(rank, send, recv int) int { return 0 }}
	reduceScatterLayout = layout{coll: coll.ReduceScatter, where: "rank x output elements",
		offset: func(rank, send, recv int) int { return rank * recv }}
	allGatherLayout = layout{coll: coll.AllGather, sendInside: true, where: "rank x input elements",
		offset: func(rank, send, recv int) int { return rank * send }}
)

// classify returns true when send and recv are l's in-place layout on rank,
// false when they do not overlap, and an error for any other overlap, which
// MPI forbids and NCCL computes wrongly without a word.
func (l layout) classify(send, recv *hostmem.Buffer, rank int) (bool, error) {
	if !send.SameAllocation(recv) {
		return false, nil
	}
	outer, inner, innerName, outerName := recv, send, "input", "output"
	if !l.sendInside {
		outer, inner, innerName, outerName = send, recv, "output", "input"
	}
	at := l.offset(rank, send.Count(), recv.Count())
	if inner.Offset() == outer.Offset()+at && inner.Offset()+inner.Count() <= outer.Offset()+outer.Count() {
		return true, nil
	}
	if inner.Offset() >= outer.Offset()+outer.Count() || outer.Offset() >= inner.Offset()+inner.Count() {
		return false, nil
	}
	return false, fmt.Errorf("inmem: %s: the %s overlaps the %s at element offset %d; in place it must be the view "+
		"of the %s at element offset %s = %d on rank %d, and otherwise not overlap it",
		l.coll.Name, innerName, outerName, inner.Offset()-outer.Offset(), outerName, l.where, at, rank)
}

// prepare checks the shapes (CheckShapes' error unchanged), that both
// buffers are this rank's and alive, and the layout; it returns both
// buffers' memory.
func (be *Backend) prepare(l layout, send, recv coll.Buffer) (sendMem, recvMem []byte, err error) {
	if send == nil || recv == nil {
		return nil, nil, fmt.Errorf("inmem: %s: nil buffer", l.coll.Name)
	}
	if err := be.usable(l.coll.Name); err != nil {
		return nil, nil, err
	}
	if err := coll.CheckShapes(l.coll, send, recv, be.WorldSize()); err != nil {
		return nil, nil, err
	}
	s, sendMem, err := be.Bytes(l.coll.Name+" input", send)
	if err != nil {
		return nil, nil, err
	}
	r, recvMem, err := be.Bytes(l.coll.Name+" output", recv)
	if err != nil {
		return nil, nil, err
	}
	if _, err := l.classify(s, r, be.rank); err != nil {
		return nil, nil, err
	}
	return sendMem, recvMem, nil
}

// calls are this backend's collectives, by coll's names.
var calls = map[string]func(be *Backend, send, recv coll.Buffer, op coll.Op) error{
	coll.AllReduce.Name:     (*Backend).allReduce,
	coll.ReduceScatter.Name: (*Backend).reduceScatter,
	coll.AllGather.Name:     (*Backend).allGather,
}

// Run runs one of coll's collectives (coll.Backend).
func (be *Backend) Run(c coll.Collective, send, recv coll.Buffer, op coll.Op) error {
	call, ok := calls[c.Name]
	if !ok {
		return fmt.Errorf("inmem: no call for the %s collective", c.Name)
	}
	return call(be, send, recv, op)
}

// allReduce reduces every rank's send into recv. Each rank brings a copy of
// its input to the meeting and computes from the copies, so in place and
// out of place are the same code.
func (be *Backend) allReduce(send, recv coll.Buffer, op coll.Op) error {
	sendMem, recvMem, err := be.prepare(allReduceLayout, send, recv)
	if err != nil {
		return err
	}
	if err := be.Supports(send.DType(), op); err != nil {
		return err
	}
	bytes := len(sendMem)
	be.job.faults.Slow.sleep(be.flips.rank, coll.AllReduce.Name, bytes)
	call := fmt.Sprintf("%s of %d %s with %s", coll.AllReduce.Name, send.Count(), send.DType(), op)
	m, err := be.job.meet(be.group, be.rank, call, slices.Clone(sendMem))
	if err != nil {
		return err
	}
	if err := be.reduce(send.DType(), op, recvMem, m.payloads, 0, be.order(false)); err != nil {
		return err
	}
	if f := be.job.faults.Flip; f.hits(be.flips, coll.AllReduce.Name, bytes) {
		flip(recvMem, f.Element, send.DType().Size())
	}
	return nil
}

// reduceScatter reduces rank r's shard of every rank's send into recv on
// rank r.
func (be *Backend) reduceScatter(send, recv coll.Buffer, op coll.Op) error {
	sendMem, recvMem, err := be.prepare(reduceScatterLayout, send, recv)
	if err != nil {
		return err
	}
	if err := be.Supports(send.DType(), op); err != nil {
		return err
	}
	bytes := len(recvMem)
	be.job.faults.Slow.sleep(be.flips.rank, coll.ReduceScatter.Name, bytes)
	call := fmt.Sprintf("%s of %d %s with %s", coll.ReduceScatter.Name, send.Count(), send.DType(), op)
	m, err := be.job.meet(be.group, be.rank, call, slices.Clone(sendMem))
	if err != nil {
		return err
	}
	if err := be.reduce(send.DType(), op, recvMem, m.payloads, be.rank*len(recvMem), be.order(be.job.faults.ReversedReduceScatter)); err != nil {
		return err
	}
	if f := be.job.faults.Flip; f.hits(be.flips, coll.ReduceScatter.Name, bytes) {
		flip(recvMem, f.Element, send.DType().Size())
	}
	return nil
}

// allGather puts rank r's send at r x send.Count() of recv on every rank
// (at r+1's place under Faults.RotatedGather).
func (be *Backend) allGather(send, recv coll.Buffer, _ coll.Op) error {
	sendMem, recvMem, err := be.prepare(allGatherLayout, send, recv)
	if err != nil {
		return err
	}
	be.job.faults.Slow.sleep(be.flips.rank, coll.AllGather.Name, len(sendMem))
	call := fmt.Sprintf("%s of %d %s", coll.AllGather.Name, send.Count(), send.DType())
	mine := slices.Clone(sendMem)
	f := be.job.faults.Flip
	hit := f.hits(be.flips, coll.AllGather.Name, len(sendMem))
	if hit && f.Send {
		flip(mine, f.Element, send.DType().Size())
	}
	m, err := be.job.meet(be.group, be.rank, call, mine)
	if err != nil {
		return err
	}
	w := be.WorldSize()
	for r, p := range m.payloads {
		at := r
		if be.job.faults.RotatedGather {
			at = (r + 1) % w
		}
		copy(recvMem[at*len(sendMem):], p.([]byte))
	}
	if hit && !f.Send {
		flip(recvMem, f.Chunk*send.Count()+f.Element, send.DType().Size())
	}
	return nil
}

// order is the ranks a reduction takes, in the order it adds them.
func (be *Backend) order(reversed bool) []int {
	ranks := seq(be.WorldSize())
	if be.job.faults.DropLastRank && len(ranks) > 1 {
		ranks = ranks[:len(ranks)-1]
	}
	if reversed {
		slices.Reverse(ranks)
	}
	return ranks
}

// reduce writes into dst the reduction over ranks (in that order) of the
// bytes at byte offset off of each rank's payload.
func (be *Backend) reduce(d coll.DType, op coll.Op, dst []byte, payloads []any, off int, ranks []int) error {
	if be.job.faults.SumAsMax && op == coll.Sum {
		op = coll.Max
	}
	srcs := make([][]byte, len(ranks))
	for i, r := range ranks {
		srcs[i] = payloads[r].([]byte)[off : off+len(dst)]
	}
	red := reductions[op] // Supports has vouched for op
	if ft, ok := coll.FloatTypeOf(d); ok {
		reduceFloats(ft, red, be.WorldSize(), dst, srcs)
		return nil
	}
	signed, ok := integers[d]
	if !ok {
		return fmt.Errorf("inmem: no reduction for %s", d)
	}
	reduceIntegers(d.Size(), signed, red, be.WorldSize(), dst, srcs)
	return nil
}

// reduction is one op on the host: how two floats or two integers
// combine, and whether it averages (NCCL's ncclAvg: floats are scaled by
// 1/W before the sum, integer sums divided by W after it).
type reduction struct {
	float   func(a, b float64) float64
	integer func(a, b uint64, signed bool) uint64 // on 64-bit words, sign-extended when signed
	average bool
}

func add(a, b float64) float64 { return a + b }

// Integer sums and products wrap modulo 2^64, which truncated to the
// element's width is the element type's own wrap-around.
func addInt(a, b uint64, _ bool) uint64 { return a + b }

var reductions = map[coll.Op]reduction{
	coll.Sum:  {float: add, integer: addInt},
	coll.Avg:  {float: add, integer: addInt, average: true},
	coll.Prod: {float: func(a, b float64) float64 { return a * b }, integer: func(a, b uint64, _ bool) uint64 { return a * b }},
	coll.Max: {float: math.Max, integer: func(a, b uint64, signed bool) uint64 {
		if signed && int64(a) < int64(b) || !signed && a < b {
			return b
		}
		return a
	}},
	coll.Min: {float: math.Min, integer: func(a, b uint64, signed bool) uint64 {
		if signed && int64(a) > int64(b) || !signed && a > b {
			return b
		}
		return a
	}},
}

// reduceFloats decodes, combines each pair in float64 and rounds to the
// dtype after every step, as MPI's and NCCL's reductions compute in the
// element type. For a sum, product, max or min of two values of p <= 26
// significand bits, the float64 result rounded once to the dtype is the
// correctly rounded one (53 >= 2p+2), so this is the dtype's arithmetic.
func reduceFloats(ft coll.FloatType, red reduction, world int, dst []byte, srcs [][]byte) {
	es := ft.DType.Size()
	scale := ft.Round(1 / float64(world))
	in := func(src []byte, i int) float64 {
		x := ft.Decode(src[i:])
		if red.average {
			x = ft.Round(x * scale)
		}
		return x
	}
	for i := 0; i < len(dst); i += es {
		acc := in(srcs[0], i)
		for _, src := range srcs[1:] {
			acc = ft.Round(red.float(acc, in(src, i)))
		}
		ft.Encode(acc, dst[i:])
	}
}

// integers says which integer dtypes are signed.
var integers = map[coll.DType]bool{
	coll.Int8: true, coll.Int32: true, coll.Int64: true,
	coll.Uint8: false, coll.Uint32: false, coll.Uint64: false,
}

// reduceIntegers reduces exactly in 64-bit words; an average divides the
// sum, wrapped to the element type, by W, truncating.
func reduceIntegers(size int, signed bool, red reduction, world int, dst []byte, srcs [][]byte) {
	for i := 0; i < len(dst); i += size {
		acc := loadInt(srcs[0][i:], size, signed)
		for _, src := range srcs[1:] {
			acc = red.integer(acc, loadInt(src[i:], size, signed), signed)
		}
		if red.average {
			acc = extend(acc, size, signed)
			if signed {
				acc = uint64(int64(acc) / int64(world))
			} else {
				acc /= uint64(world)
			}
		}
		storeInt(dst[i:], size, acc)
	}
}

// loadInt reads one little-endian element, sign-extended when signed.
func loadInt(b []byte, size int, signed bool) uint64 {
	var v uint64
	switch size {
	case 1:
		v = uint64(b[0])
	case 4:
		v = uint64(binary.LittleEndian.Uint32(b))
	case 8:
		v = binary.LittleEndian.Uint64(b)
	}
	return extend(v, size, signed)
}

// extend truncates v to size bytes and sign-extends it when signed.
func extend(v uint64, size int, signed bool) uint64 {
	shift := 64 - 8*uint(size)
	if signed {
		return uint64(int64(v<<shift) >> shift)
	}
	return v << shift >> shift
}

func storeInt(b []byte, size int, v uint64) {
	switch size {
	case 1:
		b[0] = byte(v)
	case 4:
		binary.LittleEndian.PutUint32(b, uint32(v))
	case 8:
		binary.LittleEndian.PutUint64(b, v)
	}
}
