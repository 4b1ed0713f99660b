package mpibackend

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"

	"rsag/coll"
	"rsag/internal/hostmem"
	"rsag/internal/testkit/mpitesting"
	"rsag/mpi"
)

// The tests share one MPI world: a process started without mpirun is a
// singleton of size 1, and MPI starts once per process.
var world *mpi.Comm

func TestMain(m *testing.M) { mpitesting.Main(m, "mpibackend", mpi.Start, &world) }

// TestMpirun checks the three collectives on 3 ranks, out of place and in
// place, every element type and reduction MPI has, with exact values, and
// the refusal of float16, bfloat16 and avg, through internal/testkit/backendcheck.
func TestMpirun(t *testing.T) {
	mpitesting.Mpirun(t, "rsag/internal/testkit/backendcheck", 3, 60*time.Second, "-size=3")
}

func newTest(t *testing.T) *Backend {
	t.Helper()
	be, err := New(world)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !be.closed {
			if err := be.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		}
	})
	return be
}

func alloc(t *testing.T, be *Backend, dt coll.DType, count int) coll.Buffer {
	t.Helper()
	b, err := be.Alloc(coll.Elems(dt, count))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func free(t *testing.T, be *Backend, b coll.Buffer) {
	t.Helper()
	if err := be.Free(b); err != nil {
		t.Fatal(err)
	}
}

func wantMemory(t *testing.T, be *Backend, live, peak int64) {
	t.Helper()
	m, err := be.Memory()
	if err != nil || m.LiveBytes != live || m.PeakBytes != peak || m.DeviceUsedBytes != -1 {
		t.Fatalf("Memory = %+v, %v; want live %d, peak %d, device -1", m, err, live, peak)
	}
}

func int64s(vals ...int64) []byte {
	b := make([]byte, 8*len(vals))
	for i, v := range vals {
		binary.NativeEndian.PutUint64(b[8*i:], uint64(v))
	}
	return b
}

func read(t *testing.T, be *Backend, b coll.Buffer) []byte {
	t.Helper()
	out := make([]byte, coll.Bytes(b))
	if err := be.Read(b, out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestInfo(t *testing.T) {
	be := newTest(t)
	info := be.Info()
	if info.Backend != "mpi" || info.Device != "host memory" || info.Host != world.Host() ||
		len(info.Libraries) != 1 || info.Libraries[0].Name != "mpi" || info.Libraries[0].Version == "" {
		t.Errorf("Info = %+v", info)
	}
	if be.Rank() != 0 || be.WorldSize() != 1 {
		t.Errorf("rank %d of %d, want a singleton", be.Rank(), be.WorldSize())
	}
}

func TestAccounting(t *testing.T) {
	be := newTest(t)
	wantMemory(t, be, 0, 0)
	a := alloc(t, be, coll.Int64, 100)  // 800 bytes
	b := alloc(t, be, coll.Float32, 10) // 40
	wantMemory(t, be, 840, 840)
	v, err := be.View(a, 10, 20)
	if err != nil {
		t.Fatal(err)
	}
	wantMemory(t, be, 840, 840) // views are not counted
	free(t, be, a)
	wantMemory(t, be, 40, 840)
	be.ResetPeak()
	wantMemory(t, be, 40, 40)
	c := alloc(t, be, coll.Float32, 1000) // 4000
	wantMemory(t, be, 4040, 4040)
	free(t, be, c)
	wantMemory(t, be, 40, 4040)
	d := alloc(t, be, coll.Int64, 1) // 8, below the peak
	wantMemory(t, be, 48, 4040)
	free(t, be, b)
	free(t, be, d)
	wantMemory(t, be, 0, 4040)
	be.ResetPeak()
	wantMemory(t, be, 0, 0)
	if err := be.Free(v); err == nil {
		t.Error("Free of a view of a freed buffer: no error")
	}
}

func TestAllocErrors(t *testing.T) {
	be := newTest(t)
	for _, tc := range []struct {
		dt    coll.DType
		count int
	}{{coll.Int64, 0}, {coll.Float32, -1}, {coll.DType(99), 4}, {coll.Int64, math.MaxInt/8 + 1}} {
		if b, err := be.Alloc(coll.Elems(tc.dt, tc.count)); err == nil {
			t.Errorf("Alloc(%s, %d) = %v, want an error", tc.dt, tc.count, b)
		}
	}
	wantMemory(t, be, 0, 0)
}

func TestFreeErrors(t *testing.T) {
	be := newTest(t)
	a := alloc(t, be, coll.Int64, 4)
	v, err := be.View(a, 0, 4)
	if err != nil {
		t.Fatal(err)
	}
	if err := be.Free(v); err == nil || !strings.Contains(err.Error(), "view") {
		t.Errorf("Free of a view: %v", err)
	}
	wantMemory(t, be, 32, 32)
	free(t, be, a)
	if err := be.Free(a); err == nil || !strings.Contains(err.Error(), "freed") {
		t.Errorf("double Free: %v", err)
	}
	wantMemory(t, be, 0, 32)
	// Every use of freed memory, through the buffer or a view, is an error.
	buf := make([]byte, 32)
	for name, err := range map[string]error{
		"Read":          be.Read(a, buf),
		"Write":         be.Write(v, buf),
		"Fill":          be.Fill(a, buf[:8]),
		"AllReduce":     be.Run(coll.AllReduce, a, v, coll.Sum),
		"ReduceScatter": be.Run(coll.ReduceScatter, v, a, coll.Sum),
		"AllGather":     be.Run(coll.AllGather, a, v, coll.Sum),
	} {
		if err == nil || !strings.Contains(err.Error(), "freed") {
			t.Errorf("%s after Free: %v", name, err)
		}
	}
	if _, err := be.View(a, 0, 1); err == nil {
		t.Error("View of a freed buffer: no error")
	}
}

type fakeBuffer struct{}

func (fakeBuffer) Count() int        { return 1 }
func (fakeBuffer) DType() coll.DType { return coll.Int64 }

func TestForeignBuffers(t *testing.T) {
	be, other := newTest(t), newTest(t)
	theirs := alloc(t, other, coll.Int64, 1)
	for _, b := range []coll.Buffer{theirs, fakeBuffer{}, nil, (*hostmem.Buffer)(nil)} {
		if err := be.Free(b); err == nil {
			t.Errorf("Free(%#v): no error", b)
		}
		if err := be.Write(b, make([]byte, 8)); err == nil {
			t.Errorf("Write(%#v): no error", b)
		}
	}
	mine := alloc(t, be, coll.Int64, 1)
	if err := be.Run(coll.AllReduce, theirs, mine, coll.Sum); err == nil {
		t.Error("AllReduce from another backend's buffer: no error")
	}
	if err := be.Run(coll.AllReduce, nil, mine, coll.Sum); err == nil {
		t.Error("AllReduce from nil: no error")
	}
	free(t, be, mine)
	free(t, other, theirs)
}

func TestViews(t *testing.T) {
	be := newTest(t)
	a := alloc(t, be, coll.Int64, 10)
	if err := be.Write(a, int64s(0, 1, 2, 3, 4, 5, 6, 7, 8, 9)); err != nil {
		t.Fatal(err)
	}
	v, err := be.View(a, 3, 4)
	if err != nil {
		t.Fatal(err)
	}
	if v.Count() != 4 || v.DType() != coll.Int64 || !bytes.Equal(read(t, be, v), int64s(3, 4, 5, 6)) {
		t.Errorf("View(3, 4) = %d %s % x", v.Count(), v.DType(), read(t, be, v))
	}
	vv, err := be.View(v, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(read(t, be, vv), int64s(4, 5)) {
		t.Errorf("view of a view = % x", read(t, be, vv))
	}
	if err := be.Write(vv, int64s(-4, -5)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(read(t, be, a), int64s(0, 1, 2, 3, -4, -5, 6, 7, 8, 9)) {
		t.Errorf("write through a view: % x", read(t, be, a))
	}
	for _, r := range [][2]int{{-1, 2}, {0, -1}, {0, 11}, {10, 1}, {5, 6}, {1, math.MaxInt}} {
		if _, err := be.View(a, r[0], r[1]); err == nil {
			t.Errorf("View(%d, %d) of 10 elements: no error", r[0], r[1])
		}
	}
	if _, err := be.View(a, 10, 0); err != nil {
		t.Errorf("empty View at the end: %v", err)
	}
	wantMemory(t, be, 80, 80)
	free(t, be, a)
}

func TestFill(t *testing.T) {
	be := newTest(t)
	for _, count := range []int{1, 2, 7, 1000, 4099} {
		a := alloc(t, be, coll.Int64, count)
		if err := be.Fill(a, int64s(-2)); err != nil {
			t.Fatal(err)
		}
		if got := read(t, be, a); !bytes.Equal(got, bytes.Repeat(int64s(-2), count)) {
			t.Errorf("Fill of %d int64: wrong contents", count)
		}
		free(t, be, a)
	}
	f := alloc(t, be, coll.Float32, 9)
	one := binary.NativeEndian.AppendUint32(nil, math.Float32bits(1.5))
	zero := make([]byte, 4)
	if err := be.Fill(f, zero); err != nil {
		t.Fatal(err)
	}
	v, err := be.View(f, 2, 5)
	if err != nil {
		t.Fatal(err)
	}
	if err := be.Fill(v, one); err != nil {
		t.Fatal(err)
	}
	want := bytes.Join([][]byte{bytes.Repeat(zero, 2), bytes.Repeat(one, 5), bytes.Repeat(zero, 2)}, nil)
	if got := read(t, be, f); !bytes.Equal(got, want) {
		t.Errorf("Fill of a view: % x, want % x", got, want)
	}
	for _, elem := range [][]byte{nil, make([]byte, 8), make([]byte, 3)} {
		if err := be.Fill(f, elem); err == nil {
			t.Errorf("Fill of float32 with %d bytes: no error", len(elem))
		}
	}
	free(t, be, f)
}

func TestReadWriteLengths(t *testing.T) {
	be := newTest(t)
	a := alloc(t, be, coll.Float32, 3)
	for _, n := range []int{0, 11, 13, 24} {
		if err := be.Write(a, make([]byte, n)); err == nil {
			t.Errorf("Write of %d bytes into 12: no error", n)
		}
		if err := be.Read(a, make([]byte, n)); err == nil {
			t.Errorf("Read of 12 bytes into %d: no error", n)
		}
	}
	free(t, be, a)
}

// On a singleton every collective copies its input: what is tested here is
// the plumbing, out of place and in place, and the shape checks.
func TestCollectivesSingleton(t *testing.T) {
	be := newTest(t)
	const n = 1003 // not divisible by most world sizes, by any count on 1
	in := make([]byte, 8*n)
	for i := range n {
		binary.NativeEndian.PutUint64(in[8*i:], uint64(i*7-500))
	}
	send, recv := alloc(t, be, coll.Int64, n), alloc(t, be, coll.Int64, n)
	run := map[string]func(s, r coll.Buffer) error{
		"all-reduce sum":     func(s, r coll.Buffer) error { return be.Run(coll.AllReduce, s, r, coll.Sum) },
		"all-reduce max":     func(s, r coll.Buffer) error { return be.Run(coll.AllReduce, s, r, coll.Max) },
		"reduce-scatter sum": func(s, r coll.Buffer) error { return be.Run(coll.ReduceScatter, s, r, coll.Sum) },
		"reduce-scatter max": func(s, r coll.Buffer) error { return be.Run(coll.ReduceScatter, s, r, coll.Max) },
		"all-gather":         func(s, r coll.Buffer) error { return be.Run(coll.AllGather, s, r, coll.Sum) },
	}
	for name, f := range run {
		if err := be.Write(send, in); err != nil {
			t.Fatal(err)
		}
		if err := be.Fill(recv, int64s(0)); err != nil {
			t.Fatal(err)
		}
		if err := f(send, recv); err != nil || !bytes.Equal(read(t, be, recv), in) {
			t.Errorf("%s out of place: %v", name, err)
		}
		if err := f(send, send); err != nil || !bytes.Equal(read(t, be, send), in) {
			t.Errorf("%s in place on the same buffer: %v", name, err)
		}
		v, err := be.View(send, 0, n)
		if err != nil {
			t.Fatal(err)
		}
		if err := f(v, send); err != nil || !bytes.Equal(read(t, be, send), in) {
			t.Errorf("%s in place through a view: %v", name, err)
		}
	}
	var shape *coll.ShapeError
	short := alloc(t, be, coll.Int64, n-1)
	if err := be.Run(coll.AllReduce, send, short, coll.Sum); !errors.As(err, &shape) {
		t.Errorf("all-reduce of %d into %d: %v, want a *coll.ShapeError", n, n-1, err)
	}
	f := alloc(t, be, coll.Float32, n)
	if err := be.Run(coll.AllGather, send, f, coll.Sum); !errors.As(err, &shape) {
		t.Errorf("all-gather of int64 into float32: %v, want a *coll.ShapeError", err)
	}
	if err := be.Run(coll.AllReduce, send, recv, coll.Op(7)); err == nil || !strings.Contains(err.Error(), "does not know reduction Op(7)") {
		t.Errorf("all-reduce with Op(7): %v", err)
	}
	for _, b := range []coll.Buffer{send, recv, short, f} {
		free(t, be, b)
	}
}

// TestWorldShapes gives the backend a world of 4 (rank 1) on the singleton:
// every call here must fail in the backend's own checks, before MPI, whose
// world is 1, is reached.
func TestWorldShapes(t *testing.T) {
	be := newBackend(world, 1, 4)
	t.Cleanup(func() { _ = be.Close() })
	send, recv := alloc(t, be, coll.Int64, 1003), alloc(t, be, coll.Int64, 250)
	err := be.Run(coll.ReduceScatter, send, recv, coll.Sum)
	var shape *coll.ShapeError
	if !errors.As(err, &shape) || shape.World != 4 || !strings.Contains(err.Error(), "pad the input to 1004") {
		t.Errorf("reduce-scatter of 1003 on 4 ranks: %v", err)
	}
	if _, ok := err.(*coll.ShapeError); !ok {
		t.Errorf("reduce-scatter of 1003: error is %T, want the *coll.ShapeError unchanged", err)
	}
	big := alloc(t, be, coll.Int64, 1003*4)
	if err := be.Run(coll.AllGather, send, recv, coll.Sum); !errors.As(err, &shape) {
		t.Errorf("all-gather of 1003 into 250 on 4 ranks: %v", err)
	}

	// Overlaps that are not the in-place layout of rank 1.
	full := alloc(t, be, coll.Int64, 20)
	at := func(off, n int) coll.Buffer {
		v, err := be.View(full, off, n)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	bad := map[string]error{
		"reduce-scatter output at rank 0's place": be.Run(coll.ReduceScatter, full, at(0, 5), coll.Sum),
		"reduce-scatter output off by one":        be.Run(coll.ReduceScatter, full, at(6, 5), coll.Sum),
		"all-gather input at rank 2's place":      be.Run(coll.AllGather, at(10, 5), full, coll.Sum),
		"all-reduce shifted by 2":                 be.Run(coll.AllReduce, at(0, 5), at(2, 5), coll.Sum),
	}
	for name, err := range bad {
		if err == nil || !strings.Contains(err.Error(), "overlaps") {
			t.Errorf("%s: %v, want an overlap error", name, err)
		}
	}
	if err := be.Close(); err == nil || !strings.Contains(err.Error(), "4 buffers") {
		t.Errorf("Close with 4 buffers live: %v", err)
	}
	_ = big
}

func TestClose(t *testing.T) {
	be, err := New(world)
	if err != nil {
		t.Fatal(err)
	}
	a := alloc(t, be, coll.Int64, 3)
	alloc(t, be, coll.Float32, 5)
	err = be.Close()
	if err == nil || err.Error() != "mpibackend: Close: 2 buffers (44 bytes) were still allocated; released them" {
		t.Errorf("Close with 2 buffers live: %v", err)
	}
	wantMemory(t, be, 0, 44)
	if err := be.Read(a, make([]byte, 24)); err == nil {
		t.Error("Read after Close: no error")
	}
	if _, err := be.Alloc(coll.Elems(coll.Int64, 1)); err == nil {
		t.Error("Alloc after Close: no error")
	}
	if err := be.Close(); err == nil {
		t.Error("second Close: no error")
	}
	clean, err := New(world)
	if err != nil {
		t.Fatal(err)
	}
	free(t, clean, alloc(t, clean, coll.Int64, 1))
	if err := clean.Close(); err != nil {
		t.Errorf("Close with nothing live: %v", err)
	}
	if _, err := New(nil); err == nil {
		t.Error("New(nil): no error")
	}
}

func TestTime(t *testing.T) {
	be := newTest(t)
	us, err := be.Time(func() error { time.Sleep(3 * time.Millisecond); return nil })
	if err != nil || us < 3000 || us > 3e6 {
		t.Errorf("Time of a 3 ms sleep = %v us, %v", us, err)
	}
	boom := errors.New("boom")
	if _, err := be.Time(func() error { return boom }); !errors.Is(err, boom) {
		t.Errorf("Time of a failing op: %v", err)
	}
	if err := be.Synchronize(); err != nil {
		t.Error(err)
	}
}

// TestTables proves the mapping tables: every coll element type and
// reduction is either mapped to the MPI handle of the same name and size or
// listed with the reason MPI cannot run it, never both, never neither.
func TestTables(t *testing.T) {
	wantTypes := map[coll.DType]string{
		coll.Int8: "MPI_INT8_T", coll.Uint8: "MPI_UINT8_T", coll.Int32: "MPI_INT32_T",
		coll.Uint32: "MPI_UINT32_T", coll.Int64: "MPI_INT64_T", coll.Uint64: "MPI_UINT64_T",
		coll.Float32: "MPI_FLOAT", coll.Float64: "MPI_DOUBLE",
		coll.Float16: "", coll.BFloat16: "", // MPI has none
	}
	if len(wantTypes) != len(coll.AllDTypes) {
		t.Fatalf("phases has %d dtypes, the test knows %d", len(coll.AllDTypes), len(wantTypes))
	}
	for _, d := range coll.AllDTypes {
		want, known := wantTypes[d]
		dt, mapped := datatypes[d]
		_, unmapped := noDatatype[d]
		switch {
		case !known:
			t.Errorf("%s: not in the test's table", d)
		case mapped == unmapped:
			t.Errorf("%s: mapped %v, listed as unsupported %v; want exactly one", d, mapped, unmapped)
		case want == "" && mapped:
			t.Errorf("%s maps to %s; MPI has no such type", d, dt)
		case want != "" && (dt.String() != want || dt.Size() != d.Size()):
			t.Errorf("%s (%d bytes) maps to %s (%d bytes), want %s", d, d.Size(), dt, dt.Size(), want)
		}
	}
	wantOps := map[coll.Op]string{
		coll.Sum: "MPI_SUM", coll.Prod: "MPI_PROD", coll.Max: "MPI_MAX", coll.Min: "MPI_MIN", coll.Avg: "",
	}
	if len(wantOps) != len(coll.AllOps) {
		t.Fatalf("phases has %d ops, the test knows %d", len(coll.AllOps), len(wantOps))
	}
	for _, o := range coll.AllOps {
		want, known := wantOps[o]
		mo, mapped := ops[o]
		_, unmapped := noOp[o]
		switch {
		case !known:
			t.Errorf("%s: not in the test's table", o)
		case mapped == unmapped:
			t.Errorf("%s: mapped %v, listed as unsupported %v; want exactly one", o, mapped, unmapped)
		case want == "" && mapped:
			t.Errorf("%s maps to %s; MPI has no such reduction", o, mo)
		case want != "" && mo.String() != want:
			t.Errorf("%s maps to %s, want %s", o, mo, want)
		}
	}
}

func TestSupports(t *testing.T) {
	be := newTest(t)
	for d := range datatypes {
		for o := range ops {
			if err := be.Supports(d, o); err != nil {
				t.Errorf("Supports(%s, %s): %v", d, o, err)
			}
		}
	}
	for _, tc := range []struct {
		d    coll.DType
		o    coll.Op
		want string
	}{
		{coll.Float16, coll.Sum, "the MPI backend cannot run collectives on float16: MPI has no half-precision type; use the nccl backend or drop float16"},
		{coll.BFloat16, coll.Max, "the MPI backend cannot run collectives on bfloat16: MPI has no bfloat16 type; use the nccl backend or drop bfloat16"},
		{coll.Float32, coll.Avg, "the MPI backend cannot reduce with avg: MPI has no average reduction (NCCL's ncclAvg divides by the rank count in the collective itself); use the nccl backend or drop avg"},
		{coll.Float16, coll.Avg, "float16"}, // the type is named first
		{coll.DType(99), coll.Sum, "does not know element type DType(99)"},
		{coll.Int32, coll.Op(99), "does not know reduction Op(99)"},
	} {
		err := be.Supports(tc.d, tc.o)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Supports(%s, %s) = %v, want %q", tc.d, tc.o, err, tc.want)
		}
	}
}

// The collectives refuse what Supports refuses, with its words, before MPI;
// the buffers of a type MPI cannot reduce still allocate, fill and read.
func TestUnsupportedCollectives(t *testing.T) {
	be := newTest(t)
	h := alloc(t, be, coll.Float16, 4)
	one := coll.Float16.Elem(1)
	if err := be.Fill(h, one); err != nil || !bytes.Equal(read(t, be, h), bytes.Repeat(one, 4)) {
		t.Fatalf("Fill of float16: %v", err)
	}
	f := alloc(t, be, coll.Float32, 4)
	cases := []struct {
		err  error
		want error
	}{
		{be.Run(coll.AllReduce, h, h, coll.Sum), be.Supports(coll.Float16, coll.Sum)},
		{be.Run(coll.ReduceScatter, h, h, coll.Min), be.Supports(coll.Float16, coll.Min)},
		{be.Run(coll.AllGather, h, h, coll.Sum), be.Supports(coll.Float16, coll.Sum)},
		{be.Run(coll.AllReduce, f, f, coll.Avg), be.Supports(coll.Float32, coll.Avg)},
		{be.Run(coll.ReduceScatter, f, f, coll.Avg), be.Supports(coll.Float32, coll.Avg)},
	}
	for i, tc := range cases {
		if tc.err == nil || tc.want == nil || !strings.HasSuffix(tc.err.Error(), tc.want.Error()) {
			t.Errorf("case %d: %v, want it to end with %v", i, tc.err, tc.want)
		}
	}
	free(t, be, h)
	free(t, be, f)
}

// On a singleton every reduction of Input(op, 0) is Expected(op, 1): every
// mapped type and op, out of place and in place, reaches MPI and comes back.
func TestEveryTypeAndOpSingleton(t *testing.T) {
	be := newTest(t)
	for d := range datatypes {
		for o := range ops {
			in, want := d.Elem(coll.Input(o, 0)), d.Elem(coll.Expected(o, 1))
			send, recv := alloc(t, be, d, 6), alloc(t, be, d, 6)
			for name, run := range map[string]func() error{
				"all-reduce":              func() error { return be.Run(coll.AllReduce, send, recv, o) },
				"all-reduce in place":     func() error { return be.Run(coll.AllReduce, recv, recv, o) },
				"reduce-scatter":          func() error { return be.Run(coll.ReduceScatter, send, recv, o) },
				"reduce-scatter in place": func() error { return be.Run(coll.ReduceScatter, recv, recv, o) },
			} {
				if err := be.Fill(send, in); err != nil {
					t.Fatal(err)
				}
				if err := be.Fill(recv, in); err != nil {
					t.Fatal(err)
				}
				if err := run(); err != nil || !bytes.Equal(read(t, be, recv), bytes.Repeat(want, 6)) {
					t.Errorf("%s %s %s: %v, % x", name, d, o, err, read(t, be, recv))
				}
			}
			free(t, be, send)
			free(t, be, recv)
		}
	}
}

// Samples times its samples in one C call with one Go scheduler slot (so
// that Go's monitor thread sleeps through it, docs/performance-log.md) and
// gives the process its slots back after, whatever the call found: later
// phases (the plots) run on all of them.
func TestSamplesGiveSchedulerSlotsBack(t *testing.T) {
	be := newTest(t)
	send, recv := alloc(t, be, coll.Int64, 4), alloc(t, be, coll.Int64, 4)
	defer free(t, be, send)
	defer free(t, be, recv)
	if err := be.Fill(send, int64s(7)); err != nil {
		t.Fatal(err)
	}
	s, err := be.PrepareSamples(coll.AllReduce, send, recv, coll.Sum)
	if err != nil {
		t.Fatal(err)
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(3))
	for _, want := range [][]byte{int64s(7), int64s(8)} { // a singleton's sum is its input; 8 is wrong
		us, held := make([]float64, 5), make([]bool, 5)
		f, err := s.Samples(20, false, us, held, coll.OutputCheck{Spans: []coll.OutputSpan{{Offset: 0, Len: 32, WantAt: 0}},
			Want: bytes.Repeat(want, 4)})
		if err != nil {
			t.Fatal(err)
		}
		if n := runtime.GOMAXPROCS(0); n != 3 {
			t.Errorf("GOMAXPROCS %d after Samples, want the 3 it had before", n)
		}
		right := bytes.Equal(want, int64s(7))
		if (f.Sample == -1) != right || held[4] != right || us[4] <= 0 {
			t.Errorf("want %d: fault %+v, held %v, us %v", want[0], f, held, us)
		}
	}
}
