package ncclx

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"rsag/coll"
)

// These tests run the whole backend over fake libcuda.so.1 and libnccl.so.2
// built from testdata/*.c with gcc: host memory stands in for the GPU and
// the world has one rank. They prove the binding (symbol tables, trampolines,
// error paths) and the Go side, not CUDA or NCCL.

// fakeDir holds the fakes built for this run of the tests, each once per
// source and flags: gcc takes about half a second a build, and a library
// dlopen has loaded stays loaded anyway.
var (
	fakeDir    string
	fakeMu     sync.Mutex
	fakeBuilds = map[string]string{}
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ncclx-fakes-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	fakeDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func buildFake(t *testing.T, src, name string, defs ...string) string {
	t.Helper()
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("gcc not found")
	}
	key := strings.Join(append([]string{src}, defs...), " ")
	fakeMu.Lock()
	defer fakeMu.Unlock()
	if p, ok := fakeBuilds[key]; ok {
		return p
	}
	out := filepath.Join(fakeDir, fmt.Sprint(len(fakeBuilds)), name)
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"-shared", "-fPIC", "-O1", "-pthread", "-fwrapv", "-o", out, filepath.Join("testdata", src)}, defs...)
	if msg, err := exec.Command(gcc, args...).CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", name, err, msg)
	}
	fakeBuilds[key] = out
	return out
}

func useFakeCUDA(t *testing.T, defs ...string) string {
	p := buildFake(t, "fakecuda.c", "libcuda.so.1", defs...)
	old := cudaLibrary
	cudaLibrary = p
	t.Cleanup(func() { cudaLibrary = old })
	return p
}

func useFakeNCCL(t *testing.T, defs ...string) string {
	p := buildFake(t, "fakenccl.c", "libnccl.so.2", defs...)
	t.Setenv(NCCLLibraryEnv, p)
	return p
}

func newFake(t *testing.T) *Backend {
	t.Helper()
	useFakeCUDA(t)
	useFakeNCCL(t)
	b, err := New(fakeBoot{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func TestMissingSymbolIsNamed(t *testing.T) {
	p := useFakeNCCL(t, "-DOMIT_ALLGATHER")
	_, err := loadNCCL()
	var le *LoadError
	if !errors.As(err, &le) || len(le.Missing) != 1 || le.Missing[0] != "ncclAllGather" {
		t.Fatalf("got %v, want ncclAllGather missing", err)
	}
	if !strings.Contains(err.Error(), "ncclAllGather") || !strings.Contains(err.Error(), filepath.Base(p)) {
		t.Errorf("%q does not name the symbol and the file", err)
	}
}

func TestProbe(t *testing.T) {
	useFakeCUDA(t)
	useFakeNCCL(t)
	t.Setenv("RSAG_FAKE_CUDA_DEVICES", "2")
	if err := Probe(2, Options{}); err != nil {
		t.Errorf("Probe(2) on 2 GPUs: %v", err)
	}
	if err := Probe(4, Options{ShareGPU: true}); err != nil {
		t.Errorf("Probe(4) on 2 GPUs, sharing: %v", err)
	}
	err := Probe(4, Options{})
	for _, want := range []string{"sees 2 GPUs but 4 ranks run on that node", "srun --gpus-per-task=1",
		"start at most 2 ranks per node (e.g. mpirun -np 2, or srun --ntasks-per-node=2)", "gpu.sharing = true"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Probe(4) on 2 GPUs: %v, want it to say %q", err, want)
		}
	}
	t.Setenv("RSAG_FAKE_CUDA_VISIBLE", "1")
	if err := Probe(4, Options{}); err != nil {
		t.Errorf("Probe(4) seeing one GPU: %v", err)
	}
}

func TestProbeInitFails(t *testing.T) {
	useFakeCUDA(t)
	useFakeNCCL(t)
	t.Setenv("RSAG_FAKE_CUDA_INIT", "100")
	err := Probe(1, Options{})
	var e *Error
	if !errors.As(err, &e) || e.Lib != "cuda" || e.Op != "cuInit" || e.Code != 100 {
		t.Fatalf("got %v, want cuInit's *Error", err)
	}
	for _, want := range []string{"CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected", "nvidia-smi"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not mention %q", err, want)
		}
	}
}

// A rank that sees one GPU uses it, whatever its local rank; one that sees
// several, but fewer than its node's ranks, is refused.
func TestNewLocalRankBeyondGPUs(t *testing.T) {
	useFakeCUDA(t)
	useFakeNCCL(t)
	t.Setenv("RSAG_FAKE_CUDA_DEVICES", "4")
	t.Setenv("RSAG_FAKE_CUDA_VISIBLE", "3")
	b, err := New(fakeBoot{localRank: 1, localSize: 2}, Options{})
	if err != nil || b.ordinal != 0 || b.Info().BusID != "0000:1B:00.0" {
		t.Fatalf("one GPU seen: got %v, %v", b, err)
	}
	b.Close()
	t.Setenv("RSAG_FAKE_CUDA_VISIBLE", "1,3")
	t.Setenv("CUDA_VISIBLE_DEVICES", "1,3") // named in the error
	b, err = New(fakeBoot{localRank: 1, localSize: 4}, Options{})
	if b != nil || err == nil || !strings.Contains(err.Error(), "rank 0 is local rank 1: NCCL backend: a rank on testhost sees 2 GPUs but 4 ranks") ||
		!strings.Contains(err.Error(), `CUDA_VISIBLE_DEVICES`) {
		t.Errorf("got %v, %v", b, err)
	}
}

func TestFakeInfo(t *testing.T) {
	b := newFake(t)
	info := b.Info()
	if info.Backend != "nccl" || info.Host != "testhost" || info.Device != "Fake H200 #0" ||
		info.BusID != "0000:18:00.0" || info.Driver != "13.0" {
		t.Errorf("info: %+v", info)
	}
	if len(info.Libraries) != 2 || info.Libraries[0].Name != "nccl" || info.Libraries[0].Version != "2.28.9" ||
		filepath.Base(info.Libraries[0].Path) != "libnccl.so.2" || !filepath.IsAbs(info.Libraries[0].Path) ||
		info.Libraries[1].Name != "cuda" || filepath.Base(info.Libraries[1].Path) != "libcuda.so.1" {
		t.Errorf("libraries: %+v", info.Libraries)
	}
	if b.Rank() != 0 || b.WorldSize() != 1 {
		t.Errorf("rank %d world %d", b.Rank(), b.WorldSize())
	}
}

func int64Bytes(vs ...int64) []byte {
	out := make([]byte, 8*len(vs))
	for i, v := range vs {
		binary.LittleEndian.PutUint64(out[8*i:], uint64(v))
	}
	return out
}

func TestFakeMemoryAndData(t *testing.T) {
	b := newFake(t)
	x, err := b.Alloc(coll.Elems(coll.Int64, 4))
	if err != nil {
		t.Fatal(err)
	}
	y, err := b.Alloc(coll.Elems(coll.Float32, 6))
	if err != nil {
		t.Fatal(err)
	}
	m, err := b.Memory()
	if err != nil || m.LiveBytes != 56 || m.PeakBytes != 56 || m.DeviceUsedBytes != 56 {
		t.Errorf("memory %+v, %v", m, err)
	}

	// Write and read back, whole and through a view.
	if err := b.Write(x, int64Bytes(1, -2, 3, math.MaxInt64)); err != nil {
		t.Fatal(err)
	}
	v, err := b.View(x, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 16)
	if err := b.Read(v, got); err != nil || !bytes.Equal(got, int64Bytes(-2, 3)) {
		t.Errorf("view read %v, %v", got, err)
	}

	// Fill: 8-byte pattern with different halves, with equal halves, 4-byte.
	for _, val := range []int64{7, -1, 0, 1 << 40} {
		if err := b.Fill(v, int64Bytes(val)); err != nil {
			t.Fatal(err)
		}
		all := make([]byte, 32)
		if err := b.Read(x, all); err != nil || !bytes.Equal(all, int64Bytes(1, val, val, math.MaxInt64)) {
			t.Errorf("fill %d: %v, %v", val, all, err)
		}
	}
	one := binary.LittleEndian.AppendUint32(nil, math.Float32bits(1.5))
	if err := b.Fill(y, one); err != nil {
		t.Fatal(err)
	}
	fy := make([]byte, 24)
	if err := b.Read(y, fy); err != nil || !bytes.Equal(fy, bytes.Repeat(one, 6)) {
		t.Errorf("float fill: %v, %v", fy, err)
	}
	if err := b.Fill(y, []byte{1}); err == nil {
		t.Error("fill with a 1-byte element of float32 succeeded")
	}
	if err := b.Write(x, make([]byte, 8)); err == nil {
		t.Error("short write succeeded")
	}
	if _, err := b.View(x, 3, 2); err == nil {
		t.Error("view past the end succeeded")
	}

	// Free: views and double frees are errors; accounting is exact.
	if err := b.Free(v); err == nil || !strings.Contains(err.Error(), "view") {
		t.Errorf("free of a view: %v", err)
	}
	if err := b.Free(x); err != nil {
		t.Fatal(err)
	}
	if err := b.Free(x); err == nil {
		t.Error("double free succeeded")
	}
	if err := b.Read(v, got); err == nil {
		t.Error("read through a view of freed memory succeeded")
	}
	m, _ = b.Memory()
	if m.LiveBytes != 24 || m.PeakBytes != 56 || m.DeviceUsedBytes != 24 {
		t.Errorf("after free %+v", m)
	}
	b.ResetPeak()
	if m, _ = b.Memory(); m.PeakBytes != 24 {
		t.Errorf("after ResetPeak %+v", m)
	}

	// A request beyond free memory is a *MemoryError, not a CUDA OOM.
	_, err = b.Alloc(coll.Elems(coll.Int64, 11<<30))
	var me *MemoryError
	if !errors.As(err, &me) || me.Requested != 88<<30 || me.Total != 80<<30 {
		t.Errorf("huge alloc: %v", err)
	}
}

// Staged copies larger than the staging buffer go in chunks.
func TestFakeLargeCopies(t *testing.T) {
	b := newFake(t)
	n := stagingBytes/8*2 + 3
	x, err := b.Alloc(coll.Elems(coll.Int64, n))
	if err != nil {
		t.Fatal(err)
	}
	src := make([]byte, 8*n)
	for i := range n {
		binary.LittleEndian.PutUint64(src[8*i:], uint64(i*7+1))
	}
	if err := b.Write(x, src); err != nil {
		t.Fatal(err)
	}
	dst := make([]byte, len(src))
	if err := b.Read(x, dst); err != nil || !bytes.Equal(src, dst) {
		t.Fatalf("round trip differs: %v", err)
	}
	if err := b.Fill(x, int64Bytes(0x0102030405060708)); err != nil {
		t.Fatal(err)
	}
	if err := b.Read(x, dst); err != nil || !bytes.Equal(dst, bytes.Repeat(int64Bytes(0x0102030405060708), n)) {
		t.Fatalf("pattern fill differs: %v", err)
	}
}

func TestFakeCollectives(t *testing.T) {
	b := newFake(t)
	send, _ := b.Alloc(coll.Elems(coll.Int64, 3))
	recv, _ := b.Alloc(coll.Elems(coll.Int64, 3))
	if err := b.Write(send, int64Bytes(4, 5, 6)); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 24)
	for name, run := range map[string]func() error{
		"all-reduce":     func() error { return b.Run(coll.AllReduce, send, recv, coll.Max) },
		"reduce-scatter": func() error { return b.Run(coll.ReduceScatter, send, recv, coll.Sum) },
		"all-gather":     func() error { return b.Run(coll.AllGather, send, recv, coll.Sum) },
	} {
		if err := b.Fill(recv, int64Bytes(0)); err != nil {
			t.Fatal(err)
		}
		if err := run(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := b.Synchronize(); err != nil {
			t.Fatal(err)
		}
		if err := b.Read(recv, got); err != nil || !bytes.Equal(got, int64Bytes(4, 5, 6)) {
			t.Errorf("%s: %v, %v", name, got, err)
		}
	}

	// Shape errors come back unchanged, before NCCL is called.
	short, _ := b.Alloc(coll.Elems(coll.Int64, 2))
	var se *coll.ShapeError
	if err := b.Run(coll.AllReduce, send, short, coll.Sum); !errors.As(err, &se) || err != error(se) {
		t.Errorf("shape error: %v", err)
	}

	// NCCL's failure carries its own words (the fake fails 12345 elements).
	big, _ := b.Alloc(coll.Elems(coll.Float32, 12345))
	err := b.Run(coll.AllReduce, big, big, coll.Sum)
	var e *Error
	if !errors.As(err, &e) || e.Lib != "nccl" || e.Op != "ncclAllReduce" || e.Code != 5 || e.Name != "ncclInvalidUsage" {
		t.Fatalf("got %v", err)
	}
	for _, want := range []string{"invalid usage", "fake: poisoned count 12345", "rank 0 on testhost GPU 0"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not mention %q", err, want)
		}
	}

	// After Abort the collectives refuse to run; Close still succeeds.
	b.Abort()
	if err := b.Run(coll.AllGather, send, recv, coll.Sum); err == nil {
		t.Error("collective after Abort succeeded")
	}
	if err := b.Close(); err != nil {
		t.Error(err)
	}
}

// Time is the hot path: it must not allocate.
func TestFakeTimeDoesNotAllocate(t *testing.T) {
	b := newFake(t)
	send, _ := b.Alloc(coll.Elems(coll.Float32, 256))
	recv, _ := b.Alloc(coll.Elems(coll.Float32, 256))
	op := func() error { return b.Run(coll.AllReduce, send, recv, coll.Sum) }
	us, err := b.Time(op)
	if err != nil || us < 0 || us > 1e6 {
		t.Fatalf("Time: %v us, %v", us, err)
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = b.Time(op) }); n != 0 {
		t.Errorf("Time allocates %v times per call", n)
	}
	want := errors.New("op failed")
	if _, err := b.Time(func() error { return want }); err != want {
		t.Errorf("Time returned %v, want op's error", err)
	}
}

func TestFakeCloseFreesEverything(t *testing.T) {
	b := newFake(t)
	x, _ := b.Alloc(coll.Elems(coll.Int64, 10))
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := b.Free(x); err == nil {
		t.Error("free after Close succeeded")
	}
	b2, err := New(fakeBoot{}, Options{})
	if err != nil {
		t.Fatalf("a second backend after Close: %v", err)
	}
	if err := b2.Close(); err != nil {
		t.Error(err)
	}
}
