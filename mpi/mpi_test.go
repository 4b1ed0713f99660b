package mpi

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"rsag/internal/testkit/mpitesting"
)

// The tests share one MPI world: a process started without mpirun is a
// singleton of size 1, and MPI starts once per process.
var world *Comm

func TestMain(m *testing.M) { mpitesting.Main(m, "mpi", Start, &world) }

// TestMpirun checks the collectives on 3 ranks, with exact values, through
// internal/testkit/mpicheck.
func TestMpirun(t *testing.T) {
	mpitesting.Mpirun(t, "rsag/internal/testkit/mpicheck", 3, 60*time.Second, "-size=3")
}

func TestSingleton(t *testing.T) {
	c := world
	if c.Rank() != 0 || c.Size() != 1 || c.LocalRank() != 0 || c.LocalSize() != 1 {
		t.Fatalf("rank %d of %d, local %d of %d; want a singleton", c.Rank(), c.Size(), c.LocalRank(), c.LocalSize())
	}
	if c.Host() == "" {
		t.Error("Host is empty")
	}
	if v := LibraryVersion(); v == "" || strings.ContainsAny(v, "\n\x00") {
		t.Errorf("LibraryVersion = %q, want one non-empty line", v)
	}
	if err := c.Barrier(); err != nil {
		t.Error(err)
	}
	if a, b := Wtime(), Wtime(); b < a {
		t.Errorf("Wtime went back: %v then %v", a, b)
	}
}

func TestStartTwice(t *testing.T) {
	if c, err := Start(); err == nil || c != nil {
		t.Fatalf("second Start: %v, %v; want an error", c, err)
	}
}

func TestBcast(t *testing.T) {
	buf := []byte{1, 2, 3}
	if err := world.Bcast(buf, 0); err != nil || !bytes.Equal(buf, []byte{1, 2, 3}) {
		t.Errorf("Bcast: %v, % x", err, buf)
	}
	for _, b := range [][]byte{nil, {}} {
		if err := world.Bcast(b, 0); err != nil {
			t.Errorf("Bcast of %#v: %v", b, err)
		}
	}
	if err := world.Bcast(buf, 1); err == nil {
		t.Error("Bcast from root 1 of a singleton: no error")
	}
}

func TestBcastBlob(t *testing.T) {
	for _, data := range [][]byte{nil, {}, []byte("config")} {
		got, err := world.BcastBlob(data, 0)
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("BcastBlob(%q) = %q, %v", data, got, err)
		}
	}
	if _, err := world.BcastBlob(nil, -1); err == nil {
		t.Error("BcastBlob from root -1: no error")
	}
}

func TestGather(t *testing.T) {
	for _, data := range [][]byte{nil, {}, []byte("row")} {
		got, err := world.Gather(data, 0)
		if err != nil || len(got) != 1 || !bytes.Equal(got[0], data) {
			t.Errorf("Gather(%q) = %q, %v", data, got, err)
		}
		got, err = world.AllGather(data)
		if err != nil || len(got) != 1 || !bytes.Equal(got[0], data) {
			t.Errorf("AllGather(%q) = %q, %v", data, got, err)
		}
	}
}

func TestSplitCapacity(t *testing.T) {
	buf := []byte("aabbb")
	parts := split(buf, []int32{2, 0, 3}, []int32{0, 2, 2})
	if len(parts) != 3 || string(parts[0]) != "aa" || len(parts[1]) != 0 || string(parts[2]) != "bbb" {
		t.Fatalf("split = %q", parts)
	}
	_ = append(parts[0], 'X') // must not overwrite the next rank's bytes
	if string(buf) != "aabbb" {
		t.Errorf("append to one part changed the buffer to %q", buf)
	}
}

func TestAllTrue(t *testing.T) {
	if all, bad, err := world.AllTrue(true); err != nil || !all || bad != nil {
		t.Errorf("AllTrue(true) = %v %v %v", all, bad, err)
	}
	if all, bad, err := world.AllTrue(false); err != nil || all || !slices.Equal(bad, []int{0}) {
		t.Errorf("AllTrue(false) = %v %v %v", all, bad, err)
	}
}

func TestMaxFloat64s(t *testing.T) {
	want := []float64{-3.5, 0, 1e300, math.Inf(-1)}
	got := slices.Clone(want)
	if err := world.MaxFloat64s(got); err != nil || !slices.Equal(got, want) {
		t.Errorf("MaxFloat64s(%v) = %v, %v", want, got, err)
	}
	if err := world.MaxFloat64s(nil); err != nil {
		t.Errorf("MaxFloat64s(nil) = %v", err)
	}
}

func int64s(vals ...int64) []byte {
	b := make([]byte, 8*len(vals))
	for i, v := range vals {
		binary.NativeEndian.PutUint64(b[8*i:], uint64(v))
	}
	return b
}

// On one rank every collective copies its input; what is tested here is the
// plumbing: counts, in place, and the checks on the buffers.
func TestHostCollectives(t *testing.T) {
	in := int64s(5, -7, 9)
	for _, op := range []Op{Sum, Prod, Max, Min} {
		recv := make([]byte, len(in))
		if err := world.Allreduce(in, recv, 3, Int64, op); err != nil || !bytes.Equal(recv, in) {
			t.Errorf("Allreduce %s: %v, % x", op, err, recv)
		}
		buf := slices.Clone(in)
		if err := world.Allreduce(nil, buf, 3, Int64, op); err != nil || !bytes.Equal(buf, in) {
			t.Errorf("Allreduce %s in place: %v, % x", op, err, buf)
		}
		clear(recv)
		if err := world.ReduceScatterBlock(in, recv, 3, Int64, op); err != nil || !bytes.Equal(recv, in) {
			t.Errorf("ReduceScatterBlock %s: %v, % x", op, err, recv)
		}
		buf = slices.Clone(in)
		if err := world.ReduceScatterBlock(nil, buf, 3, Int64, op); err != nil || !bytes.Equal(buf, in) {
			t.Errorf("ReduceScatterBlock %s in place: %v, % x", op, err, buf)
		}
		buf = slices.Clone(in)
		if err := world.ReduceScatterBlockMovedTimes(buf, 0, 3, Int64, op, 3); err != nil || !bytes.Equal(buf, in) {
			t.Errorf("ReduceScatterBlockMovedTimes %s: %v, % x", op, err, buf)
		}
	}
	recv := make([]byte, len(in))
	if err := world.Allgather(in, recv, 3, Int64); err != nil || !bytes.Equal(recv, in) {
		t.Errorf("Allgather: %v, % x", err, recv)
	}
	buf := slices.Clone(in)
	if err := world.Allgather(nil, buf, 3, Int64); err != nil || !bytes.Equal(buf, in) {
		t.Errorf("Allgather in place: %v, % x", err, buf)
	}
	f := make([]byte, 8)
	binary.NativeEndian.PutUint32(f, math.Float32bits(2.5))
	binary.NativeEndian.PutUint32(f[4:], math.Float32bits(-1))
	out := make([]byte, 8)
	if err := world.Allreduce(f, out, 2, Float32, Sum); err != nil || !bytes.Equal(out, f) {
		t.Errorf("Allreduce float32: %v, % x", err, out)
	}
	for _, err := range []error{
		world.Allreduce(nil, nil, 0, Int64, Sum),
		world.ReduceScatterBlock([]byte{}, []byte{}, 0, Float32, Max),
		world.Allgather(nil, nil, 0, Int64),
	} {
		if err != nil {
			t.Errorf("zero count: %v", err)
		}
	}
}

func TestHostCollectiveErrors(t *testing.T) {
	b := make([]byte, 64)
	cases := []struct {
		name, want string
		err        error
	}{
		{"short recv", "recv has 8 bytes, the call writes 16", world.Allreduce(b[:16], b[32:40], 2, Int64, Sum)},
		{"short send", "send has 8 bytes, the call reads 16", world.Allgather(b[:8], b[32:48], 2, Int64)},
		{"overlap", "overlap", world.Allreduce(b[:16], b[8:24], 2, Int64, Sum)},
		{"same slice", "overlap", world.ReduceScatterBlock(b[:8], b[:8], 1, Int64, Sum)},
		{"unknown datatype", "unknown datatype Datatype(99)", world.Allreduce(b[:8], b[8:16], 1, Datatype(99), Sum)},
		{"unknown op", "unknown op Op(-1)", world.Allreduce(b[:8], b[8:16], 1, Int64, Op(-1))},
		{"negative count", "count -1 does not fit", world.Allgather(b[:8], b[8:], -1, Int64)},
		{"huge count", "does not fit an MPI count", world.Allreduce(nil, b, math.MaxInt32+1, Byte, Sum)},
		{"moved block off an element", "the block's place 4 is not an element", world.ReduceScatterBlockMovedTimes(b[:16], 4, 2, Int64, Sum, 1)},
		{"moved block past the end", "with room for its 16 bytes", world.ReduceScatterBlockMovedTimes(b[:16], 8, 2, Int64, Sum, 1)},
		{"moved block, short buffer", "recv has 8 bytes, the call writes 16", world.ReduceScatterBlockMovedTimes(b[:8], 0, 2, Int64, Sum, 1)},
	}
	for _, tc := range cases {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, tc.err, tc.want)
		}
	}
}

// TestMPIError makes MPI itself fail, past the Go-side checks: with
// MPI_ERRORS_RETURN set at Start the call returns, and the code becomes an
// *Error carrying MPI's own message.
func TestMPIError(t *testing.T) {
	err := world.bcast(ptr([]byte{1}), 1, Byte, 7)
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("MPI_Bcast from root 7 of 1: %v (%T), want an *Error", err, err)
	}
	if e.Op != "MPI_Bcast" || e.Code == 0 || e.Msg == "" {
		t.Errorf("error = %+v", e)
	}
	want := fmt.Sprintf("MPI_Bcast: %s (code %d)", e.Msg, e.Code)
	if e.Error() != want {
		t.Errorf("Error() = %q, want %q", e.Error(), want)
	}
	t.Logf("MPI's error: %v", err)
}

func TestErrorString(t *testing.T) {
	e := &Error{Op: "MPI_Allgatherv", Code: 6, Msg: "MPI_ERR_TRUNCATE: message truncated"}
	if got, want := e.Error(), "MPI_Allgatherv: MPI_ERR_TRUNCATE: message truncated (code 6)"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

// TestDatatypes checks the tables against MPI itself: every Datatype's size
// is the library's MPI_Type_size of its handle, and the names are MPI's.
func TestDatatypes(t *testing.T) {
	want := []struct {
		dt   Datatype
		name string
		size int
	}{
		{Byte, "MPI_BYTE", 1}, {Int8, "MPI_INT8_T", 1}, {Uint8, "MPI_UINT8_T", 1},
		{Int32, "MPI_INT32_T", 4}, {Uint32, "MPI_UINT32_T", 4}, {Int64, "MPI_INT64_T", 8},
		{Uint64, "MPI_UINT64_T", 8}, {Float32, "MPI_FLOAT", 4}, {Float64, "MPI_DOUBLE", 8},
	}
	if len(want) != len(datatypes) {
		t.Fatalf("the table has %d datatypes, the test %d", len(datatypes), len(want))
	}
	for _, w := range want {
		if w.dt.String() != w.name || w.dt.Size() != w.size {
			t.Errorf("%d: %s of %d bytes, want %s of %d", int(w.dt), w.dt, w.dt.Size(), w.name, w.size)
		}
		if n, err := typeSize(w.dt); err != nil || n != w.size {
			t.Errorf("MPI_Type_size(%s) = %d, %v; want %d", w.name, n, err, w.size)
		}
	}
	for _, dt := range []Datatype{-1, Datatype(len(datatypes))} {
		if dt.Size() != 0 || dt.String() != fmt.Sprintf("Datatype(%d)", int(dt)) {
			t.Errorf("unknown %d: size %d, name %s", int(dt), dt.Size(), dt)
		}
	}
	names := map[Op]string{Sum: "MPI_SUM", Prod: "MPI_PROD", Max: "MPI_MAX", Min: "MPI_MIN"}
	if len(names) != len(ops) {
		t.Fatalf("the table has %d ops, the test %d", len(ops), len(names))
	}
	for op, name := range names {
		if op.String() != name {
			t.Errorf("%d: %s, want %s", int(op), op, name)
		}
	}
	if s := Op(len(ops)).String(); s != fmt.Sprintf("Op(%d)", len(ops)) {
		t.Errorf("unknown op: %s", s)
	}
}
