package ncclx

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"unsafe"

	"rsag/coll"
)

// These tests run the sweep's additions (every element type and reduction,
// Supports, TimeBatch, CUDA graph capture) over the fake libraries. The
// fake stream runs queued work at once, or records it while it is captured
// so that cuGraphLaunch replays it (testdata/fakestream.h).

// fakeCUDAInt calls one of the fake driver's extra symbols, CUresult f(int *),
// through the trampoline of cuDriverGetVersion, which has that C signature.
func fakeCUDAInt(t *testing.T, b *Backend, name string) int {
	t.Helper()
	var p unsafe.Pointer
	if err := b.cu.lib.bind([]symbol{sym(&p, name)}); err != nil {
		t.Fatal(err)
	}
	api := *b.cu
	api.driverGetVersion = p
	v, err := api.driverVersion()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// fakeLastCall is the (datatype, op) of the last collective the fake NCCL
// queued, as the C enum values it received (op -1 for all-gather), through
// the trampoline of ncclGetVersion, which has the C signature of
// rsagFakeLastCall.
func fakeLastCall(t *testing.T, b *Backend) (dtype, op int) {
	t.Helper()
	var p unsafe.Pointer
	if err := b.nc.lib.bind([]symbol{sym(&p, "rsagFakeLastCall")}); err != nil {
		t.Fatal(err)
	}
	api := *b.nc
	api.getVersion = p
	v, err := api.version()
	if err != nil {
		t.Fatal(err)
	}
	if v == 0 {
		t.Fatal("the fake NCCL has queued no collective")
	}
	return v/16 - 1, v%16 - 1
}

func newFakeVersion(t *testing.T, version string) *Backend {
	t.Helper()
	t.Setenv("RSAG_FAKE_NCCL_VERSION", version)
	return newFake(t)
}

// Every phases type and reduction reaches NCCL as nccl.h's enum value: the
// values are read back from the fake NCCL, past the trampolines.
func TestFakeEnumsCrossTheABI(t *testing.T) {
	b := newFake(t)
	types := map[coll.DType]int{
		coll.Int8: 0, coll.Uint8: 1, coll.Int32: 2, coll.Uint32: 3, coll.Int64: 4,
		coll.Uint64: 5, coll.Float16: 6, coll.Float32: 7, coll.Float64: 8, coll.BFloat16: 9,
	}
	ops := map[coll.Op]int{coll.Sum: 0, coll.Prod: 1, coll.Max: 2, coll.Min: 3, coll.Avg: 4}
	for _, d := range coll.AllDTypes {
		x, err := b.Alloc(coll.Elems(d, 4))
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range coll.AllOps {
			if err := b.Supports(d, o); err != nil {
				t.Errorf("Supports(%s, %s): %v", d, o, err)
			}
			if err := b.Run(coll.AllReduce, x, x, o); err != nil {
				t.Fatalf("all-reduce %s %s: %v", d, o, err)
			}
			if gt, go_ := fakeLastCall(t, b); gt != types[d] || go_ != ops[o] {
				t.Errorf("all-reduce %s %s reached NCCL as (%d, %d), want (%d, %d)", d, o, gt, go_, types[d], ops[o])
			}
		}
		if err := b.Run(coll.AllGather, x, x, coll.Sum); err != nil {
			t.Fatal(err)
		}
		if gt, go_ := fakeLastCall(t, b); gt != types[d] || go_ != -1 {
			t.Errorf("all-gather %s reached NCCL as (%d, %d)", d, gt, go_)
		}
		if err := b.Free(x); err != nil {
			t.Fatal(err)
		}
	}
}

// On an NCCL older than 2.10, Supports names what is missing, and the
// collectives refuse it in the same words before calling NCCL.
func TestFakeOldNCCL(t *testing.T) {
	b := newFakeVersion(t, "20903")
	if err := b.Supports(coll.Float16, coll.Prod); err != nil {
		t.Errorf("float16 prod on NCCL 2.9.3: %v", err)
	}
	x, _ := b.Alloc(coll.Elems(coll.BFloat16, 2))
	y, _ := b.Alloc(coll.Elems(coll.Float32, 2))
	if err := b.Run(coll.AllReduce, y, y, coll.Sum); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		d   coll.DType
		o   coll.Op
		run func() error
	}{
		{coll.BFloat16, coll.Sum, func() error { return b.Run(coll.AllReduce, x, x, coll.Sum) }},
		{coll.BFloat16, coll.Sum, func() error { return b.Run(coll.AllGather, x, x, coll.Sum) }},
		{coll.Float32, coll.Avg, func() error { return b.Run(coll.ReduceScatter, y, y, coll.Avg) }},
	} {
		want := b.Supports(c.d, c.o)
		if want == nil || !strings.Contains(want.Error(), "NCCL 2.9.3") || !strings.Contains(want.Error(), "came with NCCL 2.10") {
			t.Errorf("Supports(%s, %s) on NCCL 2.9.3: %v", c.d, c.o, want)
			continue
		}
		if err := c.run(); err == nil || !strings.HasSuffix(err.Error(), want.Error()) {
			t.Errorf("%s %s on NCCL 2.9.3: %v, want %v", c.d, c.o, err, want)
		}
		if d, o := fakeLastCall(t, b); d != 7 || o != 0 {
			t.Errorf("a refused collective reached NCCL: (%d, %d)", d, o)
		}
	}
}

// Fill uses the memset of the element's width (8 bits, 16 bits for float16
// and bfloat16, 32 bits) or the pinned pattern copy, for every type.
func TestFakeFillEveryType(t *testing.T) {
	b := newFake(t)
	for _, d := range coll.AllDTypes {
		for _, v := range []float64{0, 1, 3, 6} {
			x, err := b.Alloc(coll.Elems(d, 7))
			if err != nil {
				t.Fatal(err)
			}
			view, _ := b.View(x, 1, 5)
			elem, zero := d.Elem(v), make([]byte, d.Size())
			if err := b.Fill(x, zero); err != nil {
				t.Fatal(err)
			}
			if err := b.Fill(view, elem); err != nil {
				t.Fatalf("fill %s with %v: %v", d, v, err)
			}
			got := make([]byte, 7*d.Size())
			want := bytes.Join([][]byte{zero, bytes.Repeat(elem, 5), zero}, nil)
			if err := b.Read(x, got); err != nil || !bytes.Equal(got, want) {
				t.Errorf("fill %s with %v: % x, %v; want % x", d, v, got, err, want)
			}
			if err := b.Free(x); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestFakeTimeLoop times a batch as the batched method does: one Time
// around a loop of runs, which allocates nothing and stops at the first run
// that fails, returning its error unchanged.
func TestFakeTimeLoop(t *testing.T) {
	b := newFake(t)
	send, _ := b.Alloc(coll.Elems(coll.Float32, 64))
	recv, _ := b.Alloc(coll.Elems(coll.Float32, 64))
	calls := 0
	op := func() error { calls++; return b.Run(coll.AllReduce, send, recv, coll.Sum) }
	loop := func(n int) func() error {
		return func() error {
			for range n {
				if err := op(); err != nil {
					return err
				}
			}
			return nil
		}
	}
	five := loop(5)
	us, err := b.Time(five)
	if err != nil || calls != 5 || us < 0 || us > 1e6 {
		t.Fatalf("Time of 5 runs = %v us, %d calls, %v", us, calls, err)
	}
	ten := loop(10)
	if n := testing.AllocsPerRun(50, func() { _, _ = b.Time(ten) }); n != 0 {
		t.Errorf("Time of a loop allocates %v times per call", n)
	}
	boom := errors.New("boom")
	calls = 0
	if _, err := b.Time(func() error {
		for range 4 {
			if calls++; calls == 3 {
				return boom
			}
		}
		return nil
	}); err != boom || calls != 3 {
		t.Errorf("Time with run 3 failing: %v after %d runs, want boom after 3", err, calls)
	}
}

func readAll(t *testing.T, b *Backend, x coll.Buffer) []byte {
	t.Helper()
	got := make([]byte, coll.Bytes(x))
	if err := b.Read(x, got); err != nil {
		t.Fatal(err)
	}
	return got
}

// A captured graph holds the work op queued and runs none of it until it is
// launched; each launch replays it with the buffers' contents at that time.
func TestFakeGraph(t *testing.T) {
	b := newFake(t)
	send, _ := b.Alloc(coll.Elems(coll.Float32, 8))
	recv, _ := b.Alloc(coll.Elems(coll.Float32, 8))
	one, two := coll.Float32.Elem(1), coll.Float32.Elem(2)
	if err := b.Fill(send, one); err != nil {
		t.Fatal(err)
	}
	if err := b.Fill(recv, make([]byte, 4)); err != nil {
		t.Fatal(err)
	}
	runs := 0
	g, err := b.CaptureGraph(3, func() error { runs++; return b.Run(coll.AllReduce, send, recv, coll.Max) })
	if err != nil {
		t.Fatal(err)
	}
	if runs != 3 {
		t.Errorf("op ran %d times during the capture, want 3", runs)
	}
	if m := fakeCUDAInt(t, b, "rsagFakeCaptureMode"); m != cuStreamCaptureModeThreadLocal {
		t.Errorf("captured in mode %d, want CU_STREAM_CAPTURE_MODE_THREAD_LOCAL (1)", m)
	}
	if n := fakeCUDAInt(t, b, "rsagFakeLiveGraphs"); n != 2 {
		t.Errorf("%d graphs live after a capture, want 2 (the graph and its executable)", n)
	}
	if got := readAll(t, b, recv); !bytes.Equal(got, make([]byte, 32)) {
		t.Errorf("the capture ran the all-reduce: % x", got)
	}
	if err := b.Fill(send, two); err != nil {
		t.Fatal(err)
	}
	us, err := g.Time()
	if err != nil || us < 0 {
		t.Fatalf("Time: %v us, %v", us, err)
	}
	if got := readAll(t, b, recv); !bytes.Equal(got, bytes.Repeat(two, 8)) {
		t.Errorf("after a launch: % x, want the input at launch time", got)
	}
	if n := testing.AllocsPerRun(50, func() { _, _ = g.Time() }); n != 0 {
		t.Errorf("Graph.Time allocates %v times per call", n)
	}
	// Work outside the graph is not captured any more.
	if err := b.Fill(recv, make([]byte, 4)); err != nil {
		t.Fatal(err)
	}
	if err := b.Run(coll.AllReduce, send, recv, coll.Sum); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, b, recv); !bytes.Equal(got, bytes.Repeat(two, 8)) {
		t.Errorf("a collective after the capture did not run: % x", got)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if err := g.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if n := fakeCUDAInt(t, b, "rsagFakeLiveGraphs"); n != 0 {
		t.Errorf("%d graphs live after Close", n)
	}
	if _, err := g.Time(); err == nil {
		t.Error("Time of a closed graph succeeded")
	}
	for _, n := range []int{0, -1} {
		if _, err := b.CaptureGraph(n, func() error { return nil }); err == nil {
			t.Errorf("CaptureGraph(%d): no error", n)
		}
	}
}

// A capture that fails is ended before CaptureGraph returns: nothing leaks
// and the stream runs work again at once.
func TestFakeGraphCaptureFailures(t *testing.T) {
	b := newFake(t)
	send, _ := b.Alloc(coll.Elems(coll.Int32, 4))
	recv, _ := b.Alloc(coll.Elems(coll.Int32, 4))
	poisoned, _ := b.Alloc(coll.Elems(coll.Float32, 12345))
	boom := errors.New("boom")
	runs := 0
	for _, c := range []struct {
		name string
		op   func() error
		want []string
	}{
		{"op fails on run 2", func() error {
			if runs++; runs == 2 {
				return boom
			}
			return b.Run(coll.AllReduce, send, recv, coll.Sum)
		}, []string{"capturing run 2 of 3 into a graph", "boom"}},
		{"NCCL fails", func() error { return b.Run(coll.AllReduce, poisoned, poisoned, coll.Sum) },
			[]string{"run 1 of 3", "ncclInvalidUsage", "poisoned count 12345"}},
		{"a wait inside the capture", func() error {
			if err := b.Run(coll.AllReduce, send, recv, coll.Sum); err != nil {
				return err
			}
			return b.Synchronize()
		}, []string{"capturing run 1 of 3 into a graph: nccl backend, rank 0 on testhost GPU 0: cuda: cuStreamQuery failed: CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED (900)",
			"(ending the capture: cuda: cuStreamEndCapture failed: CUDA_ERROR_STREAM_CAPTURE_INVALIDATED (901))"}},
	} {
		runs = 0
		g, err := b.CaptureGraph(3, c.op)
		if g != nil || err == nil {
			t.Errorf("%s: got %v, %v", c.name, g, err)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not mention %q", c.name, err, w)
			}
		}
		if c.name == "op fails on run 2" && !errors.Is(err, boom) {
			t.Errorf("%s: %v does not wrap op's error", c.name, err)
		}
		if n := fakeCUDAInt(t, b, "rsagFakeLiveGraphs"); n != 0 {
			t.Errorf("%s: %d graphs leaked", c.name, n)
		}
		// The stream is usable: a collective runs when queued.
		if err := b.Write(send, bytes.Repeat(coll.Int32.Elem(5), 4)); err != nil {
			t.Fatalf("%s: the stream is unusable: %v", c.name, err)
		}
		if err := b.Run(coll.AllReduce, send, recv, coll.Sum); err != nil {
			t.Fatal(err)
		}
		if err := b.Synchronize(); err != nil {
			t.Fatalf("%s: Synchronize after the capture: %v", c.name, err)
		}
		if got := readAll(t, b, recv); !bytes.Equal(got, bytes.Repeat(coll.Int32.Elem(5), 4)) {
			t.Errorf("%s: a collective after the capture: % x", c.name, got)
		}
	}

	// Instantiation fails: the graph is destroyed too.
	t.Setenv("RSAG_FAKE_CUDA_INSTANTIATE", "999")
	if _, err := b.CaptureGraph(2, func() error { return b.Run(coll.AllReduce, send, recv, coll.Sum) }); err == nil ||
		!strings.Contains(err.Error(), "cuGraphInstantiateWithFlags failed") {
		t.Errorf("instantiation failing: %v", err)
	}
	if n := fakeCUDAInt(t, b, "rsagFakeLiveGraphs"); n != 0 {
		t.Errorf("instantiation failing: %d graphs leaked", n)
	}
}

// Close destroys the graphs left open, before the communicator; a graph
// closed after its backend does nothing. NCCL older than 2.9 cannot be
// captured.
func TestFakeGraphLifetime(t *testing.T) {
	b := newFake(t)
	x, _ := b.Alloc(coll.Elems(coll.Float64, 4))
	g, err := b.CaptureGraph(1, func() error { return b.Run(coll.AllReduce, x, x, coll.Sum) })
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if n := fakeCUDAInt(t, b, "rsagFakeLiveGraphs"); n != 0 {
		t.Errorf("%d graphs live after the backend closed", n)
	}
	if err := g.Close(); err != nil {
		t.Errorf("Close of a graph after its backend: %v", err)
	}

	old := newFakeVersion(t, "2804")
	y, _ := old.Alloc(coll.Elems(coll.Float32, 4))
	_, err = old.CaptureGraph(1, func() error { return old.Run(coll.AllReduce, y, y, coll.Sum) })
	if err == nil || !strings.Contains(err.Error(), "NCCL 2.8.4") || !strings.Contains(err.Error(), "came with NCCL 2.9") {
		t.Errorf("capture on NCCL 2.8.4: %v", err)
	}
	old.Abort()
	if _, err := old.CaptureGraph(1, func() error { return nil }); err == nil || !strings.Contains(err.Error(), "aborted") {
		t.Errorf("capture after Abort: %v", err)
	}
}
