package inmem_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"

	"rsag/coll"
	"rsag/internal/testkit/inmem"
)

// run runs body on world ranks and fails the test on any rank's error.
func run(t *testing.T, world int, faults inmem.Faults, body func(be coll.Backend, comm coll.Comm) error) {
	t.Helper()
	for r, err := range inmem.Launch(world, faults, body) {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
}

func wantErr(err error, want string) error {
	if err == nil || !strings.Contains(err.Error(), want) {
		return fmt.Errorf("error %v, want one containing %q", err, want)
	}
	return nil
}

func memory(be coll.Backend, live, peak int64) error {
	m, err := be.Memory()
	if err != nil || m.LiveBytes != live || m.PeakBytes != peak || m.DeviceUsedBytes != -1 {
		return fmt.Errorf("Memory = %+v, %v; want live %d, peak %d, device -1", m, err, live, peak)
	}
	return nil
}

func int64s(v ...int64) []byte {
	b := make([]byte, 8*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(x))
	}
	return b
}

func read(be coll.Backend, b coll.Buffer) []byte {
	out := make([]byte, coll.Bytes(b))
	if err := be.Read(b, out); err != nil {
		panic(err)
	}
	return out
}

// TestAccounting: Alloc and Free count exactly, views count nothing and
// cannot be freed, a freed buffer and its views are unusable, and Close
// reports what was left allocated.
func TestAccounting(t *testing.T) {
	run(t, 1, inmem.Faults{}, func(be coll.Backend, _ coll.Comm) error {
		a, err := be.Alloc(coll.Elems(coll.Float32, 100))
		if err != nil {
			return err
		}
		b, err := be.Alloc(coll.Elems(coll.Int64, 10))
		if err != nil {
			return err
		}
		if err := memory(be, 480, 480); err != nil {
			return err
		}
		v, err := be.View(a, 10, 20)
		if err != nil || v.Count() != 20 || v.DType() != coll.Float32 {
			return fmt.Errorf("View: %v, %v", v, err)
		}
		if err := memory(be, 480, 480); err != nil {
			return err
		}
		if err := wantErr(be.Free(v), "Free of a view"); err != nil {
			return err
		}
		for _, bad := range [][2]int{{-1, 1}, {0, 101}, {100, 1}, {50, -1}} {
			if _, err := be.View(a, bad[0], bad[1]); err == nil {
				return fmt.Errorf("View(%d, %d) of 100 elements: no error", bad[0], bad[1])
			}
		}
		if err := be.Free(a); err != nil {
			return err
		}
		if err := memory(be, 80, 480); err != nil {
			return err
		}
		be.ResetPeak()
		if err := memory(be, 80, 80); err != nil {
			return err
		}
		for name, err := range map[string]error{
			"Free":  be.Free(a),
			"Read":  be.Read(v, make([]byte, 80)),
			"Write": be.Write(a, make([]byte, 400)),
			"Fill":  be.Fill(v, make([]byte, 4)),
		} {
			if err := wantErr(err, "freed"); err != nil {
				return fmt.Errorf("%s after Free: %w", name, err)
			}
		}
		if _, err := be.View(a, 0, 1); wantErr(err, "freed") != nil {
			return fmt.Errorf("View after Free: %v", err)
		}
		if err := wantErr(be.Run(coll.AllReduce, v, v, coll.Sum), "freed"); err != nil {
			return err
		}
		if _, err := be.Alloc(coll.Elems(coll.Float32, 0)); wantErr(err, "at least one") != nil {
			return fmt.Errorf("Alloc of 0: %v", err)
		}
		if err := wantErr(be.Write(b, make([]byte, 79)), "Write of 79 bytes into a buffer of 80"); err != nil {
			return err
		}
		if err := wantErr(be.Fill(b, make([]byte, 4)), "element of 4 bytes"); err != nil {
			return err
		}
		// b is left allocated: Close reports it, and then nothing works.
		if err := wantErr(be.Close(), "1 buffers (80 bytes) were still allocated"); err != nil {
			return err
		}
		if _, err := be.Alloc(coll.Elems(coll.Float32, 1)); wantErr(err, "after Close") != nil {
			return fmt.Errorf("Alloc after Close: %v", err)
		}
		return wantErr(be.Close(), "already closed")
	})
}

// TestRunClosesLeaks: a body that leaves a buffer allocated fails its rank.
func TestRunClosesLeaks(t *testing.T) {
	errs := inmem.Launch(2, inmem.Faults{}, func(be coll.Backend, _ coll.Comm) error {
		if be.Rank() == 1 {
			_, err := be.Alloc(coll.Elems(coll.Uint8, 3))
			return err
		}
		return nil
	})
	if errs[0] != nil || wantErr(errs[1], "rank 1: 1 buffers (3 bytes) were still allocated") != nil {
		t.Errorf("errors %v", errs)
	}
}

// TestForeignBuffers: another rank's buffer, another run's, and a buffer
// of another backend type are refused, naming whose it is.
func TestForeignBuffers(t *testing.T) {
	var other coll.Buffer
	inmem.Launch(1, inmem.Faults{}, func(be coll.Backend, _ coll.Comm) error {
		other, _ = be.Alloc(coll.Elems(coll.Int8, 4))
		return be.Free(other)
	})
	handoff := make(chan coll.Buffer, 1)
	run(t, 2, inmem.Faults{}, func(be coll.Backend, comm coll.Comm) error {
		mine, err := be.Alloc(coll.Elems(coll.Int8, 4))
		if err != nil {
			return err
		}
		defer be.Free(mine)
		all, _ := be.Alloc(coll.Elems(coll.Int8, 8))
		defer be.Free(all)
		if be.Rank() == 0 {
			handoff <- mine
			return comm.Barrier()
		}
		theirs := <-handoff
		if err := wantErr(be.Read(theirs, make([]byte, 4)), "belongs to rank 0, not to rank 1"); err != nil {
			return err
		}
		if err := wantErr(be.Run(coll.AllGather, theirs, all, coll.Sum), "belongs to rank 0"); err != nil {
			return err
		}
		if err := wantErr(be.Free(other), "belongs to rank 0, not to rank 1"); err != nil {
			return err
		}
		if err := wantErr(be.Write(fakeBuffer{}, nil), "inmem_test.fakeBuffer is not a buffer of the inmem backend"); err != nil {
			return err
		}
		return comm.Barrier()
	})
}

type fakeBuffer struct{}

func (fakeBuffer) Count() int        { return 1 }
func (fakeBuffer) DType() coll.DType { return coll.Int8 }

// TestCollectives runs the three collectives out of place on 3 ranks with
// rank-dependent input, against sums computed here.
func TestCollectives(t *testing.T) {
	const world, n = 3, 6
	run(t, world, inmem.Faults{}, func(be coll.Backend, _ coll.Comm) error {
		r := int64(be.Rank())
		in := make([]int64, n)
		for i := range in {
			in[i] = 10*r + int64(i)
		}
		send, _ := be.Alloc(coll.Elems(coll.Int64, n))
		recv, _ := be.Alloc(coll.Elems(coll.Int64, n))
		shard, _ := be.Alloc(coll.Elems(coll.Int64, n/world))
		defer func() { be.Free(send); be.Free(recv); be.Free(shard) }()
		if err := be.Write(send, int64s(in...)); err != nil {
			return err
		}
		// sum over ranks of 10r + i = 30 + 3i
		sums := []int64{30, 33, 36, 39, 42, 45}
		if err := be.Run(coll.AllReduce, send, recv, coll.Sum); err != nil {
			return err
		}
		if got := read(be, recv); !slices.Equal(got, int64s(sums...)) {
			return fmt.Errorf("all-reduce: %v", got)
		}
		if err := be.Run(coll.ReduceScatter, send, shard, coll.Sum); err != nil {
			return err
		}
		if got := read(be, shard); !slices.Equal(got, int64s(sums[2*r:2*r+2]...)) {
			return fmt.Errorf("reduce-scatter on rank %d: %v", r, got)
		}
		if err := be.Run(coll.AllGather, shard, recv, coll.Sum); err != nil {
			return err
		}
		if got := read(be, recv); !slices.Equal(got, int64s(sums...)) {
			return fmt.Errorf("all-gather: %v", got)
		}
		if !slices.Equal(read(be, send), int64s(in...)) {
			return errors.New("out of place, the input changed")
		}
		return nil
	})
}

// TestInPlace: NCCL's in-place layouts work, and any other overlap is
// refused, naming the offset it needs.
func TestInPlace(t *testing.T) {
	const world, shard = 4, 2
	run(t, world, inmem.Faults{}, func(be coll.Backend, _ coll.Comm) error {
		r := be.Rank()
		full, _ := be.Alloc(coll.Elems(coll.Int64, world*shard))
		defer be.Free(full)
		in := make([]int64, world*shard)
		for i := range in {
			in[i] = int64(100*r + i)
		}
		be.Write(full, int64s(in...))
		// sum over 4 ranks of 100r + i = 600 + 4i
		sums := make([]int64, len(in))
		for i := range sums {
			sums[i] = 600 + 4*int64(i)
		}
		whole, _ := be.View(full, 0, world*shard)
		if err := be.Run(coll.AllReduce, full, whole, coll.Sum); err != nil {
			return err
		}
		if got := read(be, full); !slices.Equal(got, int64s(sums...)) {
			return fmt.Errorf("in-place all-reduce: %v", got)
		}
		be.Write(full, int64s(in...))
		mine, _ := be.View(full, r*shard, shard)
		if err := be.Run(coll.ReduceScatter, full, mine, coll.Sum); err != nil {
			return err
		}
		if got := read(be, mine); !slices.Equal(got, int64s(sums[r*shard:(r+1)*shard]...)) {
			return fmt.Errorf("in-place reduce-scatter: %v", got)
		}
		if err := be.Run(coll.AllGather, mine, full, coll.Sum); err != nil {
			return err
		}
		if got := read(be, full); !slices.Equal(got, int64s(sums...)) {
			return fmt.Errorf("in-place all-gather: %v", got)
		}
		// Anything else that overlaps is refused before the meeting, on
		// every rank alike.
		wrong, _ := be.View(full, ((r+1)%world)*shard, shard)
		if err := wantErr(be.Run(coll.ReduceScatter, full, wrong, coll.Sum), fmt.Sprintf("rank x output elements = %d on rank %d", r*shard, r)); err != nil {
			return err
		}
		if err := wantErr(be.Run(coll.AllGather, wrong, full, coll.Sum), "overlaps the output"); err != nil {
			return err
		}
		shifted, _ := be.View(full, 1, world*shard-1)
		head, _ := be.View(full, 0, world*shard-1)
		return wantErr(be.Run(coll.AllReduce, shifted, head, coll.Sum), "overlaps the output at element offset 1")
	})
}

// TestShapes: every collective checks its shapes with coll.CheckShapes
// and returns its *coll.ShapeError unchanged.
func TestShapes(t *testing.T) {
	run(t, 3, inmem.Faults{}, func(be coll.Backend, _ coll.Comm) error {
		a10, _ := be.Alloc(coll.Elems(coll.Float32, 10))
		a3, _ := be.Alloc(coll.Elems(coll.Float32, 3))
		a9, _ := be.Alloc(coll.Elems(coll.Float32, 9))
		i9, _ := be.Alloc(coll.Elems(coll.Int32, 9))
		defer func() { be.Free(a10); be.Free(a3); be.Free(a9); be.Free(i9) }()
		for name, err := range map[string]error{
			"rs indivisible":  be.Run(coll.ReduceScatter, a10, a3, coll.Sum),
			"ag too short":    be.Run(coll.AllGather, a3, a10, coll.Sum),
			"ar counts":       be.Run(coll.AllReduce, a9, a10, coll.Sum),
			"ar element type": be.Run(coll.AllReduce, a9, i9, coll.Sum),
		} {
			var se *coll.ShapeError
			if !errors.As(err, &se) {
				return fmt.Errorf("%s: %v, want a *coll.ShapeError", name, err)
			}
		}
		return nil
	})
}

// TestEveryDTypeAndOp reduces on 4 ranks with every dtype and op (Supports
// says yes to all) against values computed here: integers exactly with
// math/big modulo 2^bits, floats at values that every type holds exactly.
func TestEveryDTypeAndOp(t *testing.T) {
	const world = 4
	// Inputs per rank: integers near the top of int64/uint64, where a
	// float64 reduction would lose the low bits; small values for floats.
	intIn := func(d coll.DType, r int) *big.Int {
		switch d {
		case coll.Int64:
			return big.NewInt(math.MaxInt64/8 - int64(r*3+1))
		case coll.Uint64:
			return new(big.Int).SetUint64(math.MaxUint64/3 + uint64(r*5))
		}
		return big.NewInt(int64(r*7 - 9)) // negative for some ranks, wraps on uint
	}
	floatIn := func(r int) float64 { return []float64{0.5, -1.25, 3, 2}[r] }
	run(t, world, inmem.Faults{}, func(be coll.Backend, _ coll.Comm) error {
		for _, d := range coll.AllDTypes {
			for _, op := range coll.AllOps {
				if err := be.Supports(d, op); err != nil {
					return err
				}
				elem := make([]byte, d.Size())
				ft, isFloat := coll.FloatTypeOf(d)
				if isFloat {
					ft.Encode(floatIn(be.Rank()), elem)
				} else {
					putInt(elem, intIn(d, be.Rank()))
				}
				buf, _ := be.Alloc(coll.Elems(d, 4))
				if err := be.Fill(buf, elem); err != nil {
					return err
				}
				if err := be.Run(coll.AllReduce, buf, buf, op); err != nil {
					return err
				}
				got := read(be, buf)
				var want []byte
				if isFloat {
					want = make([]byte, d.Size())
					ft.Encode(map[coll.Op]float64{coll.Sum: 4.25, coll.Prod: -3.75, coll.Max: 3, coll.Min: -1.25,
						coll.Avg: 4.25 / 4}[op], want)
				} else {
					want = intWant(d, op, world, func(r int) *big.Int { return intIn(d, r) })
				}
				if !slices.Equal(got[:d.Size()], want) || !slices.Equal(got, slices.Repeat(want, 4)) {
					return fmt.Errorf("%s %s: %x, want %x in each element", d, op, got, want)
				}
				be.Free(buf)
			}
		}
		return nil
	})
}

var signed = map[coll.DType]bool{coll.Int8: true, coll.Int32: true, coll.Int64: true}

// putInt writes v modulo 2^bits, little-endian.
func putInt(b []byte, v *big.Int) {
	m := new(big.Int).Lsh(big.NewInt(1), uint(8*len(b)))
	w := new(big.Int).Mod(v, m).Bytes() // big-endian, non-negative
	clear(b)
	for i := range w {
		b[i] = w[len(w)-1-i]
	}
}

// intWant is the reduction as the element type computes it: sums and
// products wrap modulo 2^bits, max and min compare as the type does, avg
// divides the wrapped sum, truncating.
func intWant(d coll.DType, op coll.Op, world int, in func(int) *big.Int) []byte {
	bits := uint(8 * d.Size())
	m := new(big.Int).Lsh(big.NewInt(1), bits)
	asType := func(v *big.Int) *big.Int { // wrap, then read as the type
		w := new(big.Int).Mod(v, m)
		if signed[d] && w.Bit(int(bits)-1) == 1 {
			w.Sub(w, m)
		}
		return w
	}
	acc := asType(in(0))
	for r := 1; r < world; r++ {
		x := asType(in(r))
		switch op {
		case coll.Sum, coll.Avg:
			acc.Add(acc, x)
		case coll.Prod:
			acc.Mul(acc, x)
		case coll.Max:
			if x.Cmp(acc) > 0 {
				acc = x
			}
		case coll.Min:
			if x.Cmp(acc) < 0 {
				acc = x
			}
		}
	}
	if op == coll.Avg {
		acc = asType(acc)
		acc.Quo(acc, big.NewInt(int64(world)))
	}
	b := make([]byte, d.Size())
	putInt(b, acc)
	return b
}

// TestFloatSumsRoundEachStep: a float16 sum rounds after every addition,
// in rank order; reversed (the fault), the small terms first add up.
func TestFloatSumsRoundEachStep(t *testing.T) {
	u := math.Ldexp(1, -11) // float16's unit roundoff: 1+u is a tie
	in := []float64{1, u, u}
	for faults, want := range map[inmem.Faults]float64{
		{}:                            1,       // (1+u)+u: each a tie, to even: 1
		{ReversedReduceScatter: true}: 1 + 2*u, // (u+u)+1 is exact
	} {
		run(t, 3, faults, func(be coll.Backend, _ coll.Comm) error {
			send, _ := be.Alloc(coll.Elems(coll.Float16, 3))
			shard, _ := be.Alloc(coll.Elems(coll.Float16, 1))
			out, _ := be.Alloc(coll.Elems(coll.Float16, 3))
			defer func() { be.Free(send); be.Free(shard); be.Free(out) }()
			be.Fill(send, binary.LittleEndian.AppendUint16(nil, coll.Float16FromFloat64(in[be.Rank()])))
			if err := be.Run(coll.AllReduce, send, out, coll.Sum); err != nil {
				return err
			}
			direct := coll.Float16ToFloat64(binary.LittleEndian.Uint16(read(be, out)))
			if err := be.Run(coll.ReduceScatter, send, shard, coll.Sum); err != nil {
				return err
			}
			rs := coll.Float16ToFloat64(binary.LittleEndian.Uint16(read(be, shard)))
			if direct != 1 || rs != want {
				return fmt.Errorf("%+v: all-reduce %v, reduce-scatter %v; want 1 and %v", faults, direct, rs, want)
			}
			return nil
		})
	}
}

// TestFaults: each fault does what it says and nothing else.
func TestFaults(t *testing.T) {
	const world = 3
	cases := []struct {
		faults        inmem.Faults
		sum, max, gat []int64 // all-reduce sum, all-reduce max, all-gather of the ranks
	}{
		{inmem.Faults{}, []int64{6}, []int64{3}, []int64{1, 2, 3}},
		{inmem.Faults{RotatedGather: true}, []int64{6}, []int64{3}, []int64{3, 1, 2}},
		{inmem.Faults{SumAsMax: true}, []int64{3}, []int64{3}, []int64{1, 2, 3}},
		{inmem.Faults{DropLastRank: true}, []int64{3}, []int64{2}, []int64{1, 2, 3}},
		{inmem.Faults{ReversedReduceScatter: true}, []int64{6}, []int64{3}, []int64{1, 2, 3}},
	}
	for _, c := range cases {
		run(t, world, c.faults, func(be coll.Backend, _ coll.Comm) error {
			one, _ := be.Alloc(coll.Elems(coll.Int64, 1))
			all, _ := be.Alloc(coll.Elems(coll.Int64, world))
			defer func() { be.Free(one); be.Free(all) }()
			mine := int64s(int64(be.Rank() + 1))
			for _, x := range []struct {
				op   coll.Op
				want []int64
			}{{coll.Sum, c.sum}, {coll.Max, c.max}} {
				be.Write(one, mine)
				if err := be.Run(coll.AllReduce, one, one, x.op); err != nil {
					return err
				}
				if got := read(be, one); !slices.Equal(got, int64s(x.want...)) {
					return fmt.Errorf("%+v: all-reduce %s = %v, want %v", c.faults, x.op, got, x.want)
				}
			}
			be.Write(one, mine)
			if err := be.Run(coll.AllGather, one, all, coll.Sum); err != nil {
				return err
			}
			if got := read(be, all); !slices.Equal(got, int64s(c.gat...)) {
				return fmt.Errorf("%+v: all-gather = %v, want %v", c.faults, got, c.gat)
			}
			return nil
		})
	}
}

// TestComm: AllTrue agrees and names the ranks where it is false.
func TestComm(t *testing.T) {
	run(t, 4, inmem.Faults{}, func(be coll.Backend, comm coll.Comm) error {
		if comm.Rank() != be.Rank() || comm.Size() != 4 || be.WorldSize() != 4 {
			return fmt.Errorf("rank %d/%d of %d/%d", comm.Rank(), be.Rank(), comm.Size(), be.WorldSize())
		}
		if err := comm.Barrier(); err != nil {
			return err
		}
		ok, bad, err := comm.AllTrue(comm.Rank()%2 == 0)
		if err != nil || ok || !slices.Equal(bad, []int{1, 3}) {
			return fmt.Errorf("AllTrue = %v, %v, %v", ok, bad, err)
		}
		ok, bad, err = comm.AllTrue(true)
		if err != nil || !ok || bad != nil {
			return fmt.Errorf("AllTrue(true) = %v, %v, %v", ok, bad, err)
		}
		return nil
	})
}

// TestMismatchedCalls: ranks that call different collectives, or the same
// with other shapes, fail at once with both calls named.
func TestMismatchedCalls(t *testing.T) {
	start := time.Now()
	errs := inmem.Launch(2, inmem.Faults{}, func(be coll.Backend, comm coll.Comm) error {
		b, _ := be.Alloc(coll.Elems(coll.Float32, 4+4*be.Rank()))
		defer be.Free(b)
		if err := be.Run(coll.AllReduce, b, b, coll.Sum); err != nil {
			return err
		}
		return comm.Barrier()
	})
	for r, err := range errs {
		if wantErr(err, "called all-reduce of 8 float32 with sum but rank") != nil && wantErr(err, "called all-reduce of 4 float32") != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("took %v: a mismatch must not wait for the timeout", time.Since(start))
	}
}

// TestDeadlockTimesOut: ranks that wait for each other in different
// groups end with an error after the timeout, naming who never came.
func TestDeadlockTimesOut(t *testing.T) {
	start := time.Now()
	errs := inmem.LaunchTimeout(4, inmem.Faults{}, 300*time.Millisecond, func(be coll.Backend, comm coll.Comm) error {
		g, err := be.(coll.Splitter).Split(be.Rank()/2, be.Rank())
		if err != nil {
			return err
		}
		defer g.Close()
		b, _ := be.Alloc(coll.Elems(coll.Int8, 1))
		defer be.Free(b)
		if be.Rank() == 0 {
			// Rank 0 waits for rank 1 in their group; rank 1 waits for
			// rank 0 in the world's barrier.
			return g.Run(coll.AllReduce, b, b, coll.Sum)
		}
		return comm.Barrier()
	})
	for r, err := range errs {
		if wantErr(err, "a deadlock") != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
	t.Log(errs[0])
}

// TestRankReturnsEarly: the others fail at once instead of at the timeout,
// and a rank stuck outside any collective is reported, not waited for.
func TestRankReturnsEarly(t *testing.T) {
	start := time.Now()
	errs := inmem.LaunchTimeout(3, inmem.Faults{}, 10*time.Second, func(be coll.Backend, comm coll.Comm) error {
		if be.Rank() == 2 {
			return errors.New("bad config")
		}
		return comm.Barrier()
	})
	if wantErr(errs[2], "bad config") != nil || wantErr(errs[0], `rank 2 returned with the error "bad config"`) != nil ||
		wantErr(errs[1], "rank 2 returned") != nil {
		t.Errorf("errors %v", errs)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v: the others waited for the timeout", d)
	}

	release := make(chan struct{})
	defer close(release)
	errs = inmem.LaunchTimeout(2, inmem.Faults{}, 200*time.Millisecond, func(be coll.Backend, comm coll.Comm) error {
		if be.Rank() == 1 {
			<-release
		}
		return nil
	})
	if errs[0] != nil || wantErr(errs[1], "rank 1 did not return") != nil {
		t.Errorf("errors %v", errs)
	}
}

func TestPanicIsAnError(t *testing.T) {
	errs := inmem.Launch(2, inmem.Faults{}, func(be coll.Backend, comm coll.Comm) error {
		if be.Rank() == 1 {
			panic("boom")
		}
		return comm.Barrier()
	})
	if wantErr(errs[1], "rank 1 panicked: boom") != nil || wantErr(errs[0], "rank 1 returned") != nil {
		t.Errorf("errors %v", errs)
	}
	if errs := inmem.Launch(0, inmem.Faults{}, nil); len(errs) != 1 || wantErr(errs[0], "at least one rank") != nil {
		t.Errorf("Run on 0 ranks: %v", errs)
	}
}

// TestSplit: groups by color, ordered by key; a group's collectives stay
// in the group, its buffers and accounting are the rank's, and its Close
// ends the group only.
func TestSplit(t *testing.T) {
	run(t, 4, inmem.Faults{}, func(be coll.Backend, comm coll.Comm) error {
		r := be.Rank()
		// Colors 0 (ranks 0, 2) and 1 (ranks 1, 3), keys reversing the order.
		g, err := be.(coll.Splitter).Split(r%2, -r)
		if err != nil {
			return err
		}
		if want := 1 - r/2; g.Rank() != want || g.WorldSize() != 2 {
			return fmt.Errorf("rank %d: group rank %d of %d, want %d of 2", r, g.Rank(), g.WorldSize(), want)
		}
		parent, _ := be.Alloc(coll.Elems(coll.Int64, 1))  // allocated by the parent...
		gathered, _ := g.Alloc(coll.Elems(coll.Int64, 2)) // ...and by the group, on one count
		if err := memory(be, 24, 24); err != nil {
			return err
		}
		if err := memory(g, 24, 24); err != nil {
			return err
		}
		g.Write(parent, int64s(int64(r)))
		if err := g.Run(coll.AllGather, parent, gathered, coll.Sum); err != nil {
			return err
		}
		// In group rank order: color 0 is (2, 0), color 1 is (3, 1).
		if got, want := read(be, gathered), int64s(int64(r%2+2), int64(r%2)); !slices.Equal(got, want) {
			return fmt.Errorf("rank %d: group all-gather %v, want %v", r, got, want)
		}
		if err := g.Run(coll.AllReduce, parent, parent, coll.Sum); err != nil {
			return err
		}
		if got := read(be, parent); !slices.Equal(got, int64s(int64(2*(r%2)+2))) {
			return fmt.Errorf("rank %d: group all-reduce %v", r, got)
		}
		if err := g.Close(); err != nil {
			return err
		}
		if err := wantErr(g.Run(coll.AllReduce, parent, parent, coll.Sum), "after Close"); err != nil {
			return err
		}
		// The group's Close freed nothing; the parent still works.
		if err := memory(be, 24, 24); err != nil {
			return err
		}
		if err := be.Free(gathered); err != nil {
			return err
		}
		if err := be.Free(parent); err != nil {
			return err
		}
		return comm.Barrier()
	})
}

// TestGraph: capture runs nothing; each replay runs the operation n times;
// a closed graph does not replay.
func TestGraph(t *testing.T) {
	run(t, 2, inmem.Faults{}, func(be coll.Backend, _ coll.Comm) error {
		calls := 0
		gr, err := be.(coll.GraphTimer).CaptureGraph(5, func() error { calls++; return nil })
		if err != nil || calls != 0 {
			return fmt.Errorf("capture: %v, %d calls", err, calls)
		}
		for range 2 {
			if us, err := gr.Time(); err != nil || us < 0 {
				return fmt.Errorf("replay: %v, %v", us, err)
			}
		}
		if calls != 10 {
			return fmt.Errorf("%d calls after 2 replays of 5", calls)
		}
		if err := gr.Close(); err != nil {
			return err
		}
		if _, err := gr.Time(); wantErr(err, "after Close") != nil {
			return fmt.Errorf("replay after Close: %v", err)
		}
		if _, err := be.(coll.GraphTimer).CaptureGraph(0, nil); err == nil {
			return errors.New("a graph of 0 runs")
		}
		us, err := be.Time(func() error { time.Sleep(time.Millisecond); return nil })
		if err != nil || us < 1000 {
			return fmt.Errorf("Time of 1 ms = %v us, %v", us, err)
		}
		_, err = be.Time(func() error { return errors.New("op failed") })
		return wantErr(err, "op failed")
	})
}
