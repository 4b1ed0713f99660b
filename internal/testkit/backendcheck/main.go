// Command backendcheck checks the MPI backend's collectives on several ranks with
// exact expected values: out of place and in place, every element type and
// reduction MPI has (and the refusal of those it has not), and AllReduce ==
// ReduceScatter + AllGather on one buffer.
// mpibackend's TestMpirun runs it under mpirun; it exits non-zero (through
// MPI_Abort, which ends every rank at once) on the first mismatch.
package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"runtime"
	"strings"

	"rsag/coll"
	"rsag/mpi"
	"rsag/mpibackend"
)

func init() { runtime.LockOSThread() }

func main() {
	size := flag.Int("size", 0, "the world size the test expects (0: any of at least 2)")
	flag.Parse()
	c, err := mpi.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "backendcheck:", err)
		os.Exit(1)
	}
	be, err := mpibackend.New(c)
	if err != nil {
		fmt.Fprintln(os.Stderr, "backendcheck:", err)
		c.Abort(1)
		os.Exit(1)
	}
	k := &checker{c: c, be: be, n: c.Size(), r: c.Rank()}
	if k.n < 2 || (*size != 0 && k.n != *size) {
		k.fail("world size %d, want %d (at least 2)", k.n, *size)
	}
	if be.Rank() != k.r || be.WorldSize() != k.n {
		k.fail("backend rank %d of %d, comm rank %d of %d", be.Rank(), be.WorldSize(), k.r, k.n)
	}
	for _, dt := range []coll.DType{coll.Int64, coll.Float32} {
		for _, op := range []coll.Op{coll.Sum, coll.Max} {
			k.allReduce(dt, op)
			k.reduceScatter(dt, op)
			k.equivalence(dt, op)
		}
		k.allGather(dt)
	}
	k.sweep()
	k.split()
	k.unsupported()
	k.errors()
	m, err := be.Memory()
	k.must(err, "Memory")
	if m.LiveBytes != 0 {
		k.fail("%d bytes still live at the end", m.LiveBytes)
	}
	k.must(be.Close(), "Close")
	k.must(c.Finalize(), "Finalize")
	if k.r == 0 {
		fmt.Printf("backendcheck: backend ok on %d ranks\n", k.n)
	}
}

type checker struct {
	c    *mpi.Comm
	be   *mpibackend.Backend
	n, r int
}

// fail ends the whole job: a rank that stopped on its own would leave the
// others waiting in the next collective.
func (k *checker) fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "backendcheck: rank %d: FAIL: %s\n", k.r, fmt.Sprintf(format, args...))
	k.c.Abort(1)
	os.Exit(1)
}

func (k *checker) must(err error, what string) {
	if err != nil {
		k.fail("%s: %v", what, err)
	}
}

// value is rank r's element i: small integers, exact in float32 and in any
// sum of a few of them, whose sign changes with the rank so that MAX is not
// always the last rank's value.
func value(r, i int) int64 { return int64((i%11-5)*(r+1) + (r%2)*7) }

func values(r, from, count int) []int64 {
	v := make([]int64, count)
	for i := range v {
		v[i] = value(r, from+i)
	}
	return v
}

func reduced(op coll.Op, n, from, count int) []int64 {
	out := values(0, from, count)
	for r := 1; r < n; r++ {
		for i, v := range values(r, from, count) {
			switch op {
			case coll.Sum:
				out[i] += v
			case coll.Max:
				out[i] = max(out[i], v)
			}
		}
	}
	return out
}

func encode(dt coll.DType, vals []int64) []byte {
	b := make([]byte, len(vals)*dt.Size())
	for i, v := range vals {
		switch dt {
		case coll.Int64:
			binary.NativeEndian.PutUint64(b[8*i:], uint64(v))
		case coll.Float32:
			binary.NativeEndian.PutUint32(b[4*i:], math.Float32bits(float32(v)))
		}
	}
	return b
}

// A group (the ranks of the same parity) runs its collectives on the
// rank's own buffers, and its allocations are the rank's.
func (k *checker) split() {
	g, err := k.be.Split(k.r%2, k.r)
	k.must(err, "Split")
	size := (k.n + 1 - k.r%2) / 2
	if g.WorldSize() != size || g.Rank() != k.r/2 {
		k.fail("Split: rank %d of %d, want %d of %d", g.Rank(), g.WorldSize(), k.r/2, size)
	}
	in := k.alloc(coll.Int64, 4) // the parent's
	k.write(in, []int64{int64(k.r), 1, 2, 3})
	out, err := g.Alloc(coll.Elems(coll.Int64, 4)) // the group's, counted as the rank's
	k.must(err, "Alloc on a group")
	if m, _ := k.be.Memory(); m.LiveBytes != 64 {
		k.fail("after a group's Alloc the rank counts %d bytes live, want 64", m.LiveBytes)
	}
	k.must(g.Run(coll.AllReduce, in, out, coll.Sum), "AllReduce on a group")
	var sum int64
	for q := k.r % 2; q < k.n; q += 2 {
		sum += int64(q)
	}
	n := int64(size)
	k.expect("group all-reduce", out, []int64{sum, n, 2 * n, 3 * n})
	k.free(in)
	k.must(g.Free(out), "Free on a group")
	k.must(g.Close(), "Close of a group")
	k.must(k.c.Barrier(), "Barrier after a group's Close")
}

func (k *checker) alloc(dt coll.DType, count int) coll.Buffer {
	b, err := k.be.Alloc(coll.Elems(dt, count))
	k.must(err, "Alloc")
	return b
}

func (k *checker) view(b coll.Buffer, off, count int) coll.Buffer {
	v, err := k.be.View(b, off, count)
	k.must(err, "View")
	return v
}

func (k *checker) write(b coll.Buffer, vals []int64) {
	k.must(k.be.Write(b, encode(b.DType(), vals)), "Write")
}

func (k *checker) free(bs ...coll.Buffer) {
	for _, b := range bs {
		k.must(k.be.Free(b), "Free")
	}
}

// expect compares b's bytes with the encoding of want: exact, bit for bit.
func (k *checker) expect(what string, b coll.Buffer, want []int64) {
	got := make([]byte, coll.Bytes(b))
	k.must(k.be.Read(b, got), "Read")
	if w := encode(b.DType(), want); string(got) != string(w) {
		k.fail("%s %s: got % x, want % x (%v)", what, b.DType(), got, w, want)
	}
}

func (k *checker) allReduce(dt coll.DType, op coll.Op) {
	const count = 13
	what := fmt.Sprintf("all-reduce %s", op)
	want := reduced(op, k.n, 0, count)
	send, recv := k.alloc(dt, count), k.alloc(dt, count)
	k.write(send, values(k.r, 0, count))
	k.must(k.be.Fill(recv, make([]byte, dt.Size())), "Fill")
	k.must(k.be.Run(coll.AllReduce, send, recv, op), what)
	k.expect(what, recv, want)
	k.expect(what+" (input unchanged)", send, values(k.r, 0, count))

	k.write(send, values(k.r, 0, count))
	k.must(k.be.Run(coll.AllReduce, send, send, op), what+" in place")
	k.expect(what+" in place", send, want)

	k.write(send, values(k.r, 0, count))
	k.must(k.be.Run(coll.AllReduce, k.view(send, 0, count), send, op), what+" in place through a view")
	k.expect(what+" in place through a view", send, want)
	k.free(send, recv)
}

func (k *checker) reduceScatter(dt coll.DType, op coll.Op) {
	const block = 5
	what := fmt.Sprintf("reduce-scatter %s", op)
	want := reduced(op, k.n, k.r*block, block)
	send, recv := k.alloc(dt, k.n*block), k.alloc(dt, block)
	k.write(send, values(k.r, 0, k.n*block))
	k.must(k.be.Run(coll.ReduceScatter, send, recv, op), what)
	k.expect(what, recv, want)
	k.expect(what+" (input unchanged)", send, values(k.r, 0, k.n*block))

	// In place the output is the view of the input at rank x block.
	k.write(send, values(k.r, 0, k.n*block))
	shard := k.view(send, k.r*block, block)
	k.must(k.be.Run(coll.ReduceScatter, send, shard, op), what+" in place")
	k.expect(what+" in place", shard, want)
	k.free(send, recv)
}

func (k *checker) allGather(dt coll.DType) {
	const block = 4
	var want []int64
	for q := range k.n {
		want = append(want, values(q, 100, block)...)
	}
	send, recv := k.alloc(dt, block), k.alloc(dt, k.n*block)
	k.write(send, values(k.r, 100, block))
	k.must(k.be.Fill(recv, encode(dt, []int64{-99})), "Fill")
	k.must(k.be.Run(coll.AllGather, send, recv, coll.Sum), "all-gather")
	k.expect("all-gather", recv, want)

	// In place the input is the view of the output at rank x block; the
	// rest of the output holds a sentinel that must be overwritten.
	k.must(k.be.Fill(recv, encode(dt, []int64{-99})), "Fill")
	mine := k.view(recv, k.r*block, block)
	k.write(mine, values(k.r, 100, block))
	k.must(k.be.Run(coll.AllGather, mine, recv, coll.Sum), "all-gather in place")
	k.expect("all-gather in place", recv, want)
	k.free(send, recv)
}

// equivalence is the experiment in miniature: AllReduce of a buffer equals
// ReduceScatter in place followed by AllGather in place on another.
func (k *checker) equivalence(dt coll.DType, op coll.Op) {
	const block = 6
	count := k.n * block
	direct, decomposed := k.alloc(dt, count), k.alloc(dt, count)
	k.write(direct, values(k.r, 7, count))
	k.write(decomposed, values(k.r, 7, count))
	k.must(k.be.Run(coll.AllReduce, direct, direct, op), "all-reduce")
	shard := k.view(decomposed, k.r*block, block)
	k.must(k.be.Run(coll.ReduceScatter, decomposed, shard, op), "reduce-scatter in place")
	k.must(k.be.Run(coll.AllGather, shard, decomposed, coll.Sum), "all-gather in place")
	want := reduced(op, k.n, 7, count)
	k.expect(fmt.Sprintf("all-reduce %s", op), direct, want)
	k.expect(fmt.Sprintf("reduce-scatter + all-gather %s", op), decomposed, want)
	k.free(direct, decomposed)
}

// sweep checks every element type MPI has with every reduction it has, out
// of place and in place, through the backend and with the harness's own
// values: each rank fills its input with coll.Input(op, rank) and every
// element of the output must be coll.Expected(op, world), bit for bit.
// It also proves the experiment itself for each pair: AllReduce equals
// ReduceScatter in place followed by AllGather in place.
func (k *checker) sweep() {
	const block = 3
	count := k.n * block
	for _, dt := range coll.AllDTypes {
		for _, op := range coll.AllOps {
			if k.be.Supports(dt, op) != nil || coll.CheckExact(dt, op, k.n) != nil {
				continue
			}
			what := fmt.Sprintf("%s %s", dt, op)
			in := dt.Elem(coll.Input(op, k.r))
			want := bytes.Repeat(dt.Elem(coll.Expected(op, k.n)), count)
			sentinel := dt.Elem(99)

			send, recv := k.alloc(dt, count), k.alloc(dt, count)
			k.must(k.be.Fill(send, in), "Fill")
			k.must(k.be.Fill(recv, sentinel), "Fill")
			k.must(k.be.Run(coll.AllReduce, send, recv, op), "all-reduce "+what)
			k.expectBytes("all-reduce "+what, recv, want)
			k.expectBytes("all-reduce "+what+" (input unchanged)", send, bytes.Repeat(in, count))
			k.must(k.be.Fill(recv, in), "Fill")
			k.must(k.be.Run(coll.AllReduce, recv, recv, op), "all-reduce in place "+what)
			k.expectBytes("all-reduce in place "+what, recv, want)

			shard := k.alloc(dt, block)
			k.must(k.be.Fill(shard, sentinel), "Fill")
			k.must(k.be.Run(coll.ReduceScatter, send, shard, op), "reduce-scatter "+what)
			k.expectBytes("reduce-scatter "+what, shard, want[:block*dt.Size()])
			k.must(k.be.Fill(recv, in), "Fill")
			mine := k.view(recv, k.r*block, block)
			k.must(k.be.Run(coll.ReduceScatter, recv, mine, op), "reduce-scatter in place "+what)
			k.expectBytes("reduce-scatter in place "+what, mine, want[:block*dt.Size()])

			// The decomposition, in place, against the direct all-reduce.
			k.must(k.be.Fill(recv, in), "Fill")
			k.must(k.be.Run(coll.ReduceScatter, recv, mine, op), "reduce-scatter in place "+what)
			k.must(k.be.Run(coll.AllGather, mine, recv, coll.Sum), "all-gather in place "+what)
			k.expectBytes("reduce-scatter + all-gather "+what, recv, want)
			k.free(send, recv, shard)
		}

		// All-gather has no reduction: rank q contributes q+1.
		var want []byte
		for q := range k.n {
			want = append(want, bytes.Repeat(dt.Elem(float64(q+1)), block)...)
		}
		if k.be.Supports(dt, coll.Sum) != nil {
			continue
		}
		send, recv := k.alloc(dt, block), k.alloc(dt, count)
		k.must(k.be.Fill(send, dt.Elem(float64(k.r+1))), "Fill")
		k.must(k.be.Fill(recv, dt.Elem(99)), "Fill")
		k.must(k.be.Run(coll.AllGather, send, recv, coll.Sum), "all-gather "+dt.String())
		k.expectBytes("all-gather "+dt.String(), recv, want)
		k.must(k.be.Fill(recv, dt.Elem(99)), "Fill")
		mine := k.view(recv, k.r*block, block)
		k.must(k.be.Fill(mine, dt.Elem(float64(k.r+1))), "Fill")
		k.must(k.be.Run(coll.AllGather, mine, recv, coll.Sum), "all-gather in place "+dt.String())
		k.expectBytes("all-gather in place "+dt.String(), recv, want)
		k.free(send, recv)
	}
}

func (k *checker) expectBytes(what string, b coll.Buffer, want []byte) {
	got := make([]byte, coll.Bytes(b))
	k.must(k.be.Read(b, got), "Read")
	if !bytes.Equal(got, want) {
		k.fail("%s: got % x, want % x", what, got, want)
	}
}

// unsupported checks that what MPI cannot run is refused on every rank with
// Supports' words, before MPI: no rank is left waiting in a collective.
func (k *checker) unsupported() {
	for _, dt := range []coll.DType{coll.Float16, coll.BFloat16} {
		want := k.be.Supports(dt, coll.Sum)
		if want == nil {
			k.fail("Supports(%s, sum) = nil on the MPI backend", dt)
		}
		b := k.alloc(dt, k.n)
		shard := k.view(b, k.r, 1)
		for name, err := range map[string]error{
			"all-reduce":     k.be.Run(coll.AllReduce, b, b, coll.Sum),
			"reduce-scatter": k.be.Run(coll.ReduceScatter, b, shard, coll.Sum),
			"all-gather":     k.be.Run(coll.AllGather, shard, b, coll.Sum),
		} {
			if err == nil || !strings.HasSuffix(err.Error(), want.Error()) {
				k.fail("%s of %s: %v, want %v", name, dt, err, want)
			}
		}
		k.free(b)
	}
	want := k.be.Supports(coll.Float32, coll.Avg)
	b := k.alloc(coll.Float32, k.n)
	if err := k.be.Run(coll.AllReduce, b, b, coll.Avg); want == nil || err == nil || !strings.HasSuffix(err.Error(), want.Error()) {
		k.fail("all-reduce avg: %v, want %v", err, want)
	}
	k.free(b)
}

// errors checks calls the backend rejects before MPI; every rank rejects
// them alike, so none is left waiting in a collective.
func (k *checker) errors() {
	const block = 5
	full := k.alloc(coll.Int64, k.n*block)
	next := (k.r + 1) % k.n
	var shape *coll.ShapeError
	odd, shard := k.alloc(coll.Int64, k.n*block+1), k.alloc(coll.Int64, block)
	if err := k.be.Run(coll.ReduceScatter, odd, shard, coll.Sum); !errors.As(err, &shape) {
		k.fail("reduce-scatter of %d elements on %d ranks: %v, want a *coll.ShapeError", k.n*block+1, k.n, err)
	}
	bad := map[string]error{
		"reduce-scatter into the next rank's place": k.be.Run(coll.ReduceScatter, full, k.view(full, next*block, block), coll.Sum),
		"all-gather from the next rank's place":     k.be.Run(coll.AllGather, k.view(full, next*block, block), full, coll.Sum),
		"all-reduce onto a shifted view":            k.be.Run(coll.AllReduce, k.view(full, 0, block), k.view(full, 1, block), coll.Sum),
	}
	for name, err := range bad {
		if err == nil || !strings.Contains(err.Error(), "overlaps") {
			k.fail("%s: %v, want an overlap error", name, err)
		}
	}
	k.free(full, odd, shard)
}
