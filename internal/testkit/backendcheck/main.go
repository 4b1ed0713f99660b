// Command backendcheck checks the MPI backend on several ranks: coll's
// conformance suite (every element type and reduction MPI has, out of place
// and in place, with exact values, and the refusal of those it has not),
// then what is the MPI backend's own: AllReduce == ReduceScatter +
// AllGather on one buffer, its groups (Split), and its refusal of aliased
// buffers that MPI would silently get wrong. mpibackend's TestMpirun runs it
// under mpirun; it exits non-zero (through MPI_Abort, which ends every rank
// at once) on the first failure.
package main

import (
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"runtime"
	"strings"

	"rsag/coll"
	"rsag/coll/colltest"
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
	// coll's conformance suite: every collective of every pair MPI has,
	// out of place and in place, exactly; the refusal of those it has not.
	if err := colltest.Check(be); err != nil {
		k.fail("the conformance suite:\n%v", err)
	}
	for _, dt := range []coll.DType{coll.Int64, coll.Float32} {
		for _, op := range []coll.Op{coll.Sum, coll.Max} {
			k.equivalence(dt, op)
		}
	}
	k.split()
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
