// Command mpicheck checks package mpi on several ranks with exact expected
// values. mpi's TestMpirun runs it under mpirun; it exits non-zero (through
// MPI_Abort, which ends every rank at once) on the first mismatch.
package main

import (
	"bytes"
	"encoding/binary"
	"flag"
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"rsag/coll"
	"rsag/mpi"
)

func init() { runtime.LockOSThread() }

func main() {
	size := flag.Int("size", 0, "the world size the test expects (0: any of at least 2)")
	flag.Parse()
	c, err := mpi.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "mpicheck:", err)
		os.Exit(1)
	}
	k := &checker{c: c}
	k.world(*size)
	k.bcast()
	k.bcastUint64s()
	k.bcastBlob()
	k.gather()
	k.allGather()
	k.allTrue()
	k.maxFloat64()
	for _, dt := range []mpi.Datatype{mpi.Int64, mpi.Float32} {
		for _, op := range []mpi.Op{mpi.Sum, mpi.Max} {
			k.allreduce(dt, op)
			k.reduceScatterBlock(dt, op)
		}
		k.allgather(dt)
	}
	k.samples()
	k.sweep()
	k.split()
	k.argErrors()
	k.finalize()
	if c.Rank() == 0 {
		fmt.Printf("mpicheck: ok on %d ranks\n", c.Size())
	}
}

type checker struct{ c *mpi.Comm }

// fail ends the whole job: a rank that stopped on its own would leave the
// others waiting in the next collective.
func (k *checker) fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "mpicheck: rank %d: FAIL: %s\n", k.c.Rank(), fmt.Sprintf(format, args...))
	k.c.Abort(1)
	os.Exit(1)
}

func (k *checker) must(err error, what string) {
	if err != nil {
		k.fail("%s: %v", what, err)
	}
}

func (k *checker) world(want int) {
	c := k.c
	if c.Size() < 2 || (want != 0 && c.Size() != want) {
		k.fail("world size %d, want %d (at least 2)", c.Size(), want)
	}
	if c.Rank() < 0 || c.Rank() >= c.Size() || c.Host() == "" {
		k.fail("rank %d of %d on host %q", c.Rank(), c.Size(), c.Host())
	}
	// Every rank learns every rank's host and local rank and size; on each
	// host, the ranks in world order must have local ranks 0, 1, ... and
	// all report the host's rank count as their local size.
	all, err := c.AllGather([]byte(fmt.Sprintf("%s\x00%d\x00%d", c.Host(), c.LocalRank(), c.LocalSize())))
	k.must(err, "AllGather of hosts")
	next := map[string]int{}
	type local struct{ rank, size int }
	seen := make([]local, len(all))
	for r, b := range all {
		f := strings.Split(string(b), "\x00")
		lr, _ := strconv.Atoi(f[1])
		ls, _ := strconv.Atoi(f[2])
		if lr != next[f[0]] {
			k.fail("rank %d on %s has local rank %d, want %d", r, f[0], lr, next[f[0]])
		}
		next[f[0]]++
		seen[r] = local{lr, ls}
	}
	for r, b := range all {
		host, _, _ := strings.Cut(string(b), "\x00")
		if seen[r].size != next[host] {
			k.fail("rank %d on %s has local size %d, want %d", r, host, seen[r].size, next[host])
		}
	}
}

func (k *checker) bcast() {
	c := k.c
	root := 1
	// Five bytes broadcast into a longer slice: the guard bytes after them
	// must survive (gompi's BcastBytes moved four times the bytes asked).
	buf := bytes.Repeat([]byte{0xEE}, 13)
	want := []byte{10, 11, 12, 13, 14}
	if c.Rank() == root {
		copy(buf, want)
	} else {
		clear(buf[:5])
	}
	k.must(c.Bcast(buf[:5], root), "Bcast")
	if !bytes.Equal(buf[:5], want) || !bytes.Equal(buf[5:], bytes.Repeat([]byte{0xEE}, 8)) {
		k.fail("Bcast of 5 bytes from rank %d: got % x", root, buf)
	}
	k.must(c.Bcast(nil, 0), "Bcast of nil")
	k.must(c.Bcast([]byte{}, c.Size()-1), "Bcast of 0 bytes")
}

// The NCCL unique id travels as 17 words through gompi's typed broadcast:
// exactly those bytes arrive, and the guard words after them survive.
func (k *checker) bcastUint64s() {
	c := k.c
	root := c.Size() - 1
	buf := make([]uint64, 17+3)
	for i := range buf {
		buf[i] = 0xEEEEEEEEEEEEEEEE
	}
	want := make([]uint64, 17)
	for i := range want {
		want[i] = 0x0102030405060708*uint64(i+1) ^ uint64(root)
	}
	if c.Rank() == root {
		copy(buf, want)
	} else {
		clear(buf[:17])
	}
	k.must(c.BcastUint64s(buf[:17], root), "BcastUint64s")
	if !slices.Equal(buf[:17], want) || slices.ContainsFunc(buf[17:], func(w uint64) bool { return w != 0xEEEEEEEEEEEEEEEE }) {
		k.fail("BcastUint64s of 17 words from rank %d: got %x, want %x and guards", root, buf, want)
	}
	k.must(c.BcastUint64s(nil, 0), "BcastUint64s of nothing")
}

// Split by parity, ordered by descending world rank: each group's ranks,
// size and sums are its own, and the world is untouched.
func (k *checker) split() {
	c := k.c
	n, r := c.Size(), c.Rank()
	sub, err := c.Split(r%2, -r)
	k.must(err, "Split")
	var members []int
	for q := n - 1; q >= 0; q-- {
		if q%2 == r%2 {
			members = append(members, q)
		}
	}
	if sub.Size() != len(members) || members[sub.Rank()] != r {
		k.fail("Split: rank %d is %d of %d, want %d of %d (%v)", r, sub.Rank(), sub.Size(), slices.Index(members, r), len(members), members)
	}
	in := encode(mpi.Int64, []int64{int64(r)})
	out := make([]byte, 8)
	k.must(sub.Allreduce(in, out, 1, mpi.Int64, mpi.Sum), "Allreduce on a split communicator")
	var want int64
	for _, q := range members {
		want += int64(q)
	}
	k.expect("Allreduce on the parity group", mpi.Int64, out, []int64{want})
	if _, err := c.Split(-2, 0); err == nil {
		k.fail("Split with a negative color other than NoColor was accepted")
	}
	// MPI_UNDEFINED: the last rank takes part and gets no communicator;
	// the others' works.
	color := 0
	if r == n-1 {
		color = mpi.NoColor
	}
	rest, err := c.Split(color, r)
	k.must(err, "Split with the last rank at NoColor")
	switch {
	case r == n-1 && rest != nil:
		k.fail("Split with NoColor gave rank %d a communicator of %d", r, rest.Size())
	case r < n-1 && (rest == nil || rest.Size() != n-1 || rest.Rank() != r):
		k.fail("Split without the last rank: rank %d got %v, want rank %d of %d", r, rest, r, n-1)
	case rest != nil:
		k.must(rest.Allreduce(in, out, 1, mpi.Int64, mpi.Sum), "Allreduce without the last rank")
		k.expect("Allreduce without the last rank", mpi.Int64, out, []int64{int64((n - 1) * (n - 2) / 2)})
		k.must(rest.Free(), "Free")
	}
	k.must(sub.Free(), "Free")
	if err := sub.Barrier(); err == nil {
		k.fail("Barrier on a freed communicator was accepted")
	}
	k.must(c.Barrier(), "Barrier on the world after Free")
}

func (k *checker) bcastBlob() {
	c := k.c
	root := c.Size() - 1
	want := []byte(fmt.Sprintf("blob from rank %d", root))
	var data []byte
	if c.Rank() == root {
		data = want
	}
	got, err := c.BcastBlob(data, root)
	k.must(err, "BcastBlob")
	if !bytes.Equal(got, want) {
		k.fail("BcastBlob from rank %d: got %q, want %q", root, got, want)
	}
	for _, empty := range [][]byte{nil, {}} {
		got, err := c.BcastBlob(empty, 0)
		k.must(err, "BcastBlob of 0 bytes")
		if len(got) != 0 {
			k.fail("BcastBlob of 0 bytes: got %d bytes", len(got))
		}
	}
}

// contribution is rank r's data for Gather and AllGather: 3r bytes, so
// rank 0 sends none and the lengths differ.
func contribution(r int) []byte {
	b := make([]byte, 3*r)
	for i := range b {
		b[i] = byte(r*10 + i)
	}
	return b
}

func (k *checker) checkGathered(what string, got [][]byte, want func(r int) []byte) {
	if len(got) != k.c.Size() {
		k.fail("%s: got %d slices, want %d", what, len(got), k.c.Size())
	}
	for r, b := range got {
		if !bytes.Equal(b, want(r)) {
			k.fail("%s: rank %d's data is % x, want % x", what, r, b, want(r))
		}
	}
}

func (k *checker) gather() {
	c := k.c
	root := 1
	got, err := c.Gather(contribution(c.Rank()), root)
	k.must(err, "Gather")
	if c.Rank() == root {
		k.checkGathered("Gather", got, contribution)
	} else if got != nil {
		k.fail("Gather on a non-root rank returned %d slices, want nil", len(got))
	}
	got, err = c.Gather(nil, 0)
	k.must(err, "Gather of nothing")
	if c.Rank() == 0 {
		k.checkGathered("Gather of nothing", got, func(int) []byte { return nil })
	}
}

func (k *checker) allGather() {
	c := k.c
	got, err := c.AllGather(contribution(c.Rank()))
	k.must(err, "AllGather")
	k.checkGathered("AllGather", got, contribution)
	got, err = c.AllGather(nil)
	k.must(err, "AllGather of nothing")
	k.checkGathered("AllGather of nothing", got, func(int) []byte { return nil })
}

func (k *checker) allTrue() {
	c := k.c
	n := c.Size()
	cases := []struct {
		name string
		ok   func(r int) bool
	}{
		{"all true", func(int) bool { return true }},
		{"last rank false", func(r int) bool { return r != n-1 }},
		{"even ranks false", func(r int) bool { return r%2 == 1 }},
	}
	for _, tc := range cases {
		var want []int
		for r := range n {
			if !tc.ok(r) {
				want = append(want, r)
			}
		}
		all, bad, err := c.AllTrue(tc.ok(c.Rank()))
		k.must(err, "AllTrue "+tc.name)
		if all != (len(want) == 0) || !slices.Equal(bad, want) {
			k.fail("AllTrue %s: got %v %v, want %v %v", tc.name, all, bad, len(want) == 0, want)
		}
	}
}

func (k *checker) maxFloat64() {
	c := k.c
	got, err := coll.MaxFloat64(c, float64(c.Rank())*1.5-7)
	k.must(err, "MaxFloat64")
	if want := float64(c.Size()-1)*1.5 - 7; got != want {
		k.fail("MaxFloat64: got %v, want %v", got, want)
	}
	got, err = coll.MaxFloat64(c, -float64(c.Rank())-0.25)
	k.must(err, "MaxFloat64 of negatives")
	if got != -0.25 {
		k.fail("MaxFloat64 of negatives: got %v, want -0.25", got)
	}
	// Many values in one call: element i is largest on rank i mod size.
	v := make([]float64, 5)
	for i := range v {
		v[i] = float64(i*100 - (i-c.Rank()+5*c.Size())%c.Size())
	}
	k.must(c.MaxFloat64s(v), "MaxFloat64s")
	for i, got := range v {
		if want := float64(i * 100); got != want {
			k.fail("MaxFloat64s: element %d: got %v, want %v", i, got, want)
		}
	}
	k.must(c.MaxFloat64s(nil), "MaxFloat64s of nothing")
}

// value is rank r's element i: small integers, exact in float32 and in any
// sum of a few of them, whose sign changes with the rank so that MAX is not
// always the last rank's value.
func value(r, i int) int64 { return int64((i-3)*(r+1) + (r%2)*5) }

func reduce(op mpi.Op, n, i int) int64 {
	acc := value(0, i)
	for r := 1; r < n; r++ {
		switch op {
		case mpi.Sum:
			acc += value(r, i)
		case mpi.Max:
			acc = max(acc, value(r, i))
		}
	}
	return acc
}

func encode(dt mpi.Datatype, vals []int64) []byte {
	b := make([]byte, len(vals)*dt.Size())
	for i, v := range vals {
		switch dt {
		case mpi.Int64:
			binary.NativeEndian.PutUint64(b[8*i:], uint64(v))
		case mpi.Float32:
			binary.NativeEndian.PutUint32(b[4*i:], math.Float32bits(float32(v)))
		}
	}
	return b
}

func decode(dt mpi.Datatype, b []byte) []float64 {
	out := make([]float64, len(b)/dt.Size())
	for i := range out {
		switch dt {
		case mpi.Int64:
			out[i] = float64(int64(binary.NativeEndian.Uint64(b[8*i:])))
		case mpi.Float32:
			out[i] = float64(math.Float32frombits(binary.NativeEndian.Uint32(b[4*i:])))
		}
	}
	return out
}

func (k *checker) expect(what string, dt mpi.Datatype, got []byte, want []int64) {
	g := decode(dt, got)
	for i, w := range want {
		if g[i] != float64(w) {
			k.fail("%s %s: element %d is %v, want %d (got %v)", what, dt, i, g[i], w, g)
		}
	}
}

func values(r, from, n int) []int64 {
	v := make([]int64, n)
	for i := range v {
		v[i] = value(r, from+i)
	}
	return v
}

func (k *checker) allreduce(dt mpi.Datatype, op mpi.Op) {
	c := k.c
	const count = 7
	want := make([]int64, count)
	for i := range want {
		want[i] = reduce(op, c.Size(), i)
	}
	what := fmt.Sprintf("Allreduce %s", op)
	send, recv := encode(dt, values(c.Rank(), 0, count)), make([]byte, count*dt.Size())
	k.must(c.Allreduce(send, recv, count, dt, op), what)
	k.expect(what, dt, recv, want)
	k.expect(what+" (input unchanged)", dt, send, values(c.Rank(), 0, count))

	inPlace := encode(dt, values(c.Rank(), 0, count))
	k.must(c.Allreduce(nil, inPlace, count, dt, op), what+" in place")
	k.expect(what+" in place", dt, inPlace, want)

	k.must(c.Allreduce(nil, nil, 0, dt, op), what+" of 0 elements")
	k.must(c.Allreduce([]byte{}, []byte{}, 0, dt, op), what+" of 0 elements out of place")
}

// samples takes timed samples of a prepared Allreduce in one C call: with
// the right pattern every sample holds; with one element of it wrong,
// every sample fails and the first is named by that element and what it
// held; with no spans nothing is checked; a span outside the output is
// refused before any collective.
func (k *checker) samples() {
	c := k.c
	const count, batch, n = 5, 3, 4
	dt := mpi.Int64
	sum := int64(c.Size() * (c.Size() + 1) / 2)
	send, recv := encode(dt, slices.Repeat([]int64{int64(c.Rank() + 1)}, count)), make([]byte, count*8)
	call, err := c.AllreduceCall(send, recv, count, dt, mpi.Sum)
	k.must(err, "AllreduceCall")
	right := encode(dt, slices.Repeat([]int64{sum}, count))
	ns, ok := make([]int64, n), make([]bool, n)
	var p mpi.Progress
	var f mpi.SampleFault
	for _, barrier := range []bool{false, true} {
		f, err = call.Samples(batch, barrier, ns, ok, mpi.SampleCheck{Out: recv, Spans: []int64{0, 16, 0, 16, 24, 16}, Want: right, Elem: 8}, &p)
		k.must(err, "Samples")
		if at, _ := p.Sample(); f.Sample != -1 || !slices.Equal(ok, []bool{true, true, true, true}) || at != n-1 {
			k.fail("Samples of a right Allreduce (barrier %v): fault %+v, held %v, progress at %d", barrier, f, ok, at)
		}
		for s, t := range ns {
			if t <= 0 {
				k.fail("Samples (barrier %v): sample %d took %d ns", barrier, s, t)
			}
		}
		wrong := encode(dt, []int64{sum, sum, sum + 1, sum, sum})
		f, err = call.Samples(batch, barrier, ns, ok, mpi.SampleCheck{Out: recv, Spans: []int64{0, 40, 0}, Want: wrong, Elem: 8}, &p)
		k.must(err, "Samples")
		if f.Sample != 0 || f.Element != 2 || !bytes.Equal(f.Got, right[16:24]) || slices.Contains(ok, true) {
			k.fail("Samples against a wrong pattern (barrier %v): fault %+v, held %v; want sample 0, element 2 holding %d, none held", barrier, f, ok, sum)
		}
	}
	held := []bool{true, false, true, false}
	f, err = call.Samples(batch, false, ns, held, mpi.SampleCheck{}, &p)
	k.must(err, "Samples unchecked")
	if f.Sample != -1 || !slices.Equal(held, []bool{true, false, true, false}) {
		k.fail("Samples without spans: fault %+v, checks %v changed", f, held)
	}
	if _, err := call.Samples(batch, false, ns, ok, mpi.SampleCheck{Out: recv, Spans: []int64{32, 16, 0}, Want: right, Elem: 8}, &p); err == nil {
		k.fail("Samples with a span past the output's end: no error")
	}
	k.expectBytes("Allreduce after Samples", recv, right)
}

func (k *checker) reduceScatterBlock(dt mpi.Datatype, op mpi.Op) {
	c := k.c
	const block = 4
	n, r := c.Size(), c.Rank()
	want := make([]int64, block)
	for i := range want {
		want[i] = reduce(op, n, r*block+i)
	}
	what := fmt.Sprintf("ReduceScatterBlock %s", op)
	send, recv := encode(dt, values(r, 0, n*block)), make([]byte, block*dt.Size())
	k.must(c.ReduceScatterBlock(send, recv, block, dt, op), what)
	k.expect(what, dt, recv, want)

	// In place the whole input is in recv and the block lands at its start.
	inPlace := encode(dt, values(r, 0, n*block))
	k.must(c.ReduceScatterBlock(nil, inPlace, block, dt, op), what+" in place")
	k.expect(what+" in place", dt, inPlace[:block*dt.Size()], want)
}

func (k *checker) allgather(dt mpi.Datatype) {
	c := k.c
	const block = 3
	n, r := c.Size(), c.Rank()
	var want []int64
	for q := range n {
		want = append(want, values(q, 0, block)...)
	}
	send, recv := encode(dt, values(r, 0, block)), make([]byte, n*block*dt.Size())
	k.must(c.Allgather(send, recv, block, dt), "Allgather")
	k.expect("Allgather", dt, recv, want)

	// In place each rank's block already sits at rank*block; the rest is a
	// sentinel that must be overwritten.
	filler := make([]int64, n*block)
	for i := range filler {
		filler[i] = -99
	}
	copy(filler[r*block:], values(r, 0, block))
	inPlace := encode(dt, filler)
	k.must(c.Allgather(nil, inPlace, block, dt), "Allgather in place")
	k.expect("Allgather in place", dt, inPlace, want)
}

// sweepTypes and sweepOps are every MPI element type and reduction rsag
// sweeps, each with the phases type that encodes its values.
var (
	sweepTypes = []struct {
		mpi mpi.Datatype
		ph  coll.DType
	}{
		{mpi.Int8, coll.Int8}, {mpi.Uint8, coll.Uint8}, {mpi.Int32, coll.Int32}, {mpi.Uint32, coll.Uint32},
		{mpi.Int64, coll.Int64}, {mpi.Uint64, coll.Uint64}, {mpi.Float32, coll.Float32}, {mpi.Float64, coll.Float64},
	}
	sweepOps = []struct {
		mpi mpi.Op
		ph  coll.Op
	}{{mpi.Sum, coll.Sum}, {mpi.Prod, coll.Prod}, {mpi.Max, coll.Max}, {mpi.Min, coll.Min}}
)

// sweep checks every element type with every reduction, out of place and in
// place, with the harness's own values: each rank contributes
// coll.Input(op, rank) in every element and must get coll.Expected(op,
// world) back, bit for bit. All-gather, which has no reduction, gathers
// rank+1 from every rank.
func (k *checker) sweep() {
	c := k.c
	n, r := c.Size(), c.Rank()
	const count, block = 5, 3
	for _, dt := range sweepTypes {
		if dt.mpi.Size() != dt.ph.Size() {
			k.fail("%s is %d bytes, %s %d", dt.mpi, dt.mpi.Size(), dt.ph, dt.ph.Size())
		}
		for _, op := range sweepOps {
			if err := coll.CheckExact(dt.ph, op.ph, n); err != nil {
				continue // not on this world size; never on 3 ranks
			}
			what := fmt.Sprintf("%s %s", dt.ph, op.ph)
			in := dt.ph.Elem(coll.Input(op.ph, r))
			want := dt.ph.Elem(coll.Expected(op.ph, n))

			send, recv := bytes.Repeat(in, count), bytes.Repeat([]byte{0xA5}, count*len(in))
			k.must(c.Allreduce(send, recv, count, dt.mpi, op.mpi), "Allreduce "+what)
			k.expectBytes("Allreduce "+what, recv, bytes.Repeat(want, count))
			k.expectBytes("Allreduce "+what+" (input unchanged)", send, bytes.Repeat(in, count))
			buf := bytes.Repeat(in, count)
			k.must(c.Allreduce(nil, buf, count, dt.mpi, op.mpi), "Allreduce in place "+what)
			k.expectBytes("Allreduce in place "+what, buf, bytes.Repeat(want, count))

			send, recv = bytes.Repeat(in, n*block), bytes.Repeat([]byte{0xA5}, block*len(in))
			k.must(c.ReduceScatterBlock(send, recv, block, dt.mpi, op.mpi), "ReduceScatterBlock "+what)
			k.expectBytes("ReduceScatterBlock "+what, recv, bytes.Repeat(want, block))
			buf = bytes.Repeat(in, n*block)
			k.must(c.ReduceScatterBlock(nil, buf, block, dt.mpi, op.mpi), "ReduceScatterBlock in place "+what)
			k.expectBytes("ReduceScatterBlock in place "+what, buf[:block*len(in)], bytes.Repeat(want, block))
		}

		var want []byte
		for q := range n {
			want = append(want, bytes.Repeat(dt.ph.Elem(float64(q+1)), block)...)
		}
		mine := bytes.Repeat(dt.ph.Elem(float64(r+1)), block)
		recv := bytes.Repeat([]byte{0xA5}, len(want))
		k.must(c.Allgather(mine, recv, block, dt.mpi), "Allgather "+dt.ph.String())
		k.expectBytes("Allgather "+dt.ph.String(), recv, want)
		buf := bytes.Repeat([]byte{0xA5}, len(want))
		copy(buf[r*len(mine):], mine)
		k.must(c.Allgather(nil, buf, block, dt.mpi), "Allgather in place "+dt.ph.String())
		k.expectBytes("Allgather in place "+dt.ph.String(), buf, want)
	}
}

func (k *checker) expectBytes(what string, got, want []byte) {
	if !bytes.Equal(got, want) {
		k.fail("%s: got % x, want % x", what, got, want)
	}
}

// argErrors checks errors found before MPI is called; they happen on every
// rank alike, so no rank is left waiting in a collective.
func (k *checker) argErrors() {
	c := k.c
	b := make([]byte, 64)
	bad := []struct {
		name string
		err  error
	}{
		{"short recv", c.Allreduce(b[:16], b[32:40], 2, mpi.Int64, mpi.Sum)},
		{"short send", c.Allreduce(b[:8], b[32:48], 2, mpi.Int64, mpi.Sum)},
		{"overlap", c.Allreduce(b[:16], b[8:24], 2, mpi.Int64, mpi.Sum)},
		{"unknown datatype", c.Allreduce(b[:8], b[8:16], 1, mpi.Datatype(99), mpi.Sum)},
		{"unknown op", c.Allreduce(b[:8], b[8:16], 1, mpi.Int64, mpi.Op(99))},
		{"negative count", c.Allgather(b[:8], b[8:], -1, mpi.Int64)},
		{"short in-place reduce-scatter", c.ReduceScatterBlock(nil, b[:8], 1, mpi.Int64, mpi.Sum)},
		{"bad root", c.Bcast(b, c.Size())},
	}
	for _, tc := range bad {
		if tc.err == nil {
			k.fail("%s: no error", tc.name)
		}
	}
}

func (k *checker) finalize() {
	c := k.c
	k.must(c.Barrier(), "Barrier")
	k.must(c.Finalize(), "Finalize")
	if err := c.Barrier(); err == nil {
		fmt.Fprintf(os.Stderr, "mpicheck: rank %d: FAIL: Barrier after Finalize: no error\n", c.Rank())
		os.Exit(1)
	}
	if err := c.Finalize(); err == nil {
		fmt.Fprintf(os.Stderr, "mpicheck: rank %d: FAIL: second Finalize: no error\n", c.Rank())
		os.Exit(1)
	}
}
