package ncclx

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"rsag/coll"
)

func TestResultStrings(t *testing.T) {
	for _, c := range []struct {
		got, want string
	}{
		{CUResult(0).String(), "CUDA_SUCCESS"},
		{CUResult(2).String(), "CUDA_ERROR_OUT_OF_MEMORY"},
		{CUResult(100).String(), "CUDA_ERROR_NO_DEVICE"},
		{CUResult(999).String(), "CUDA_ERROR_UNKNOWN"},
		{CUResult(12345).String(), "CUresult(12345)"},
		{NCCLResult(0).String(), "ncclSuccess"},
		{NCCLResult(1).String(), "ncclUnhandledCudaError"},
		{NCCLResult(6).String(), "ncclRemoteError"},
		{NCCLResult(8).String(), "ncclTimeout"},
		{NCCLResult(9).String(), "ncclResult(9)"},
		{NCCLResult(-1).String(), "ncclResult(-1)"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

// Errors built with no library loaded still name the code and, for NCCL,
// describe it.
func TestErrorsWithoutLibrary(t *testing.T) {
	var cu *cudaAPI
	e := cu.newError("cuMemAlloc_v2", 2)
	if got, want := e.Error(), "cuda: cuMemAlloc_v2 failed: CUDA_ERROR_OUT_OF_MEMORY (2)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	var nc *ncclAPI
	e = nc.newError("ncclAllReduce", 1, nil)
	if got, want := e.Error(), "nccl: ncclAllReduce failed: ncclUnhandledCudaError (1): unhandled cuda error"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	wrapped := errors.Join(errors.New("context"), e)
	var target *Error
	if !errors.As(wrapped, &target) || target.Lib != "nccl" || target.Code != 1 {
		t.Errorf("errors.As through a wrap: %#v", target)
	}
}

func TestVersionFormats(t *testing.T) {
	for _, c := range []struct {
		got, want string
	}{
		{formatNCCLVersion(22809), "2.28.9"},
		{formatNCCLVersion(21903), "2.19.3"},
		{formatNCCLVersion(20900), "2.9.0"},
		{formatNCCLVersion(2708), "2.7.8"}, // before 2.9: X*1000 + Y*100 + Z
		{formatDriverVersion(13000), "13.0"},
		{formatDriverVersion(12080), "12.8"},
		{formatDriverVersion(12020), "12.2"},
		{formatDriverVersion(11040), "11.4"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

// The tables must carry nccl.h's enum values and names (NCCL's
// src/nccl.h.in) for every element type and reduction phases has: the
// phases constants are not NCCL's values.
func TestTypeMaps(t *testing.T) {
	types := map[coll.DType]ncclEnum{
		coll.Int8: {0, "ncclInt8", 0}, coll.Uint8: {1, "ncclUint8", 0},
		coll.Int32: {2, "ncclInt32", 0}, coll.Uint32: {3, "ncclUint32", 0},
		coll.Int64: {4, "ncclInt64", 0}, coll.Uint64: {5, "ncclUint64", 0},
		coll.Float16: {6, "ncclFloat16", 0}, coll.Float32: {7, "ncclFloat32", 0},
		coll.Float64: {8, "ncclFloat64", 0}, coll.BFloat16: {9, "ncclBfloat16", 21000},
	}
	if len(types) != len(coll.AllDTypes) {
		t.Fatalf("phases has %d dtypes, the test knows %d", len(coll.AllDTypes), len(types))
	}
	for _, d := range coll.AllDTypes {
		got, ok := dtypeEnum(d)
		if want, known := types[d]; !ok || !known || got != want {
			t.Errorf("%s -> %+v %v, want %+v", d, got, ok, want)
		}
		if v, ok := ncclDType(d); !ok || int(v) != types[d].value {
			t.Errorf("ncclDType(%s) = %d %v", d, v, ok)
		}
	}
	ops := map[coll.Op]ncclEnum{
		coll.Sum: {0, "ncclSum", 0}, coll.Prod: {1, "ncclProd", 0}, coll.Max: {2, "ncclMax", 0},
		coll.Min: {3, "ncclMin", 0}, coll.Avg: {4, "ncclAvg", 21000},
	}
	if len(ops) != len(coll.AllOps) {
		t.Fatalf("phases has %d ops, the test knows %d", len(coll.AllOps), len(ops))
	}
	for _, o := range coll.AllOps {
		got, ok := opEnum(o)
		if want, known := ops[o]; !ok || !known || got != want {
			t.Errorf("%s -> %+v %v, want %+v", o, got, ok, want)
		}
		if v, ok := ncclOp(o); !ok || int(v) != ops[o].value {
			t.Errorf("ncclOp(%s) = %d %v", o, v, ok)
		}
	}
	for _, d := range []coll.DType{-1, 99} {
		if _, ok := ncclDType(d); ok {
			t.Errorf("unknown dtype %d mapped", int(d))
		}
	}
	for _, o := range []coll.Op{-1, 99} {
		if _, ok := ncclOp(o); ok {
			t.Errorf("unknown op %d mapped", int(o))
		}
	}
}

// Supports accepts every pair on a current NCCL and names the version and
// the fix on an old one.
func TestSupportsByVersion(t *testing.T) {
	for _, d := range coll.AllDTypes {
		for _, o := range coll.AllOps {
			if err := ncclSupports(22809, "/lib/libnccl.so.2.28.9", d, o); err != nil {
				t.Errorf("NCCL 2.28.9, %s %s: %v", d, o, err)
			}
			if err := ncclSupports(21000, "x", d, o); err != nil {
				t.Errorf("NCCL 2.10.0, %s %s: %v", d, o, err)
			}
		}
	}
	for _, c := range []struct {
		version int
		d       coll.DType
		o       coll.Op
		want    string // "" for nil
	}{
		{20903, coll.Float16, coll.Prod, ""},
		{20903, coll.BFloat16, coll.Sum, "NCCL 2.9.3 (/nccl) cannot run collectives on bfloat16: ncclBfloat16 came with NCCL 2.10; " +
			"load NCCL 2.10 or newer (RSAG_NCCL_LIBRARY=/path/to/libnccl.so.2) or drop bfloat16"},
		{20903, coll.Float32, coll.Avg, "NCCL 2.9.3 (/nccl) cannot reduce with avg: ncclAvg came with NCCL 2.10; " +
			"load NCCL 2.10 or newer (RSAG_NCCL_LIBRARY=/path/to/libnccl.so.2) or drop avg"},
		{2708, coll.BFloat16, coll.Avg, "NCCL 2.7.8 (/nccl) cannot run collectives on bfloat16"},
		{22809, coll.DType(99), coll.Sum, "the NCCL backend does not know element type DType(99)"},
		{22809, coll.Int8, coll.Op(99), "the NCCL backend does not know reduction Op(99)"},
	} {
		err := ncclSupports(c.version, "/nccl", c.d, c.o)
		if (c.want == "") != (err == nil) || (err != nil && !strings.HasPrefix(err.Error(), c.want)) {
			t.Errorf("%d %s %s: %v, want %q", c.version, c.d, c.o, err, c.want)
		}
	}
}

func TestNCCLLibraryMissingFile(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nowhere", "libnccl.so.2")
	t.Setenv(NCCLLibraryEnv, missing)
	_, err := loadNCCL()
	var le *LoadError
	if !errors.As(err, &le) || le.Lib != "nccl" || le.Path != missing {
		t.Fatalf("got %v, want a *LoadError for %s", err, missing)
	}
	for _, want := range []string{missing, NCCLLibraryEnv, "cannot load"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not mention %q", err, want)
		}
	}
}

func TestNCCLLibraryNotFound(t *testing.T) {
	t.Setenv(NCCLLibraryEnv, "")
	if _, err := dlopen("nccl", ncclSoname); err == nil {
		t.Skip("this machine has NCCL")
	}
	_, err := loadNCCL()
	if err == nil || !strings.Contains(err.Error(), "libnccl.so.2") || !strings.Contains(err.Error(), "LD_LIBRARY_PATH") {
		t.Errorf("got %v", err)
	}
}

// On a machine without the NVIDIA driver, Probe and New fail with an error
// that names libcuda.so.1 and says what to do, and nothing crashes.
func TestCUDAAbsent(t *testing.T) {
	if _, err := dlopen("cuda", cudaLibrary); err == nil {
		t.Skip("this machine has the CUDA driver")
	}
	err := Probe(1, Options{})
	var le *LoadError
	if !errors.As(err, &le) || le.Lib != "cuda" {
		t.Fatalf("Probe: got %v, want a *LoadError for cuda", err)
	}
	for _, want := range []string{"libcuda.so.1", "no NVIDIA driver", "run on a GPU node"} { // the job adds "or use -backend mpi"
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not mention %q", err, want)
		}
	}
	b, err := New(fakeBoot{}, Options{})
	if b != nil || err == nil || !strings.Contains(err.Error(), "libcuda.so.1") {
		t.Errorf("New: got %v, %v", b, err)
	}
}

func TestMemoryErrorText(t *testing.T) {
	e := &MemoryError{Host: "h1", Device: 3, Requested: 3 << 30, Free: 1 << 30, Total: 80 << 30}
	for _, want := range []string{"h1 GPU 3", "requested 3221225472 B (3.00 GiB)", "free 1073741824 B (1.00 GiB)",
		"of 85899345920 B (80.00 GiB) total", "lower the largest message size"} {
		if !strings.Contains(e.Error(), want) {
			t.Errorf("%q does not mention %q", e, want)
		}
	}
}

// fakeBoot is a world of one rank.
type fakeBoot struct{ localRank, localSize int }

func (fakeBoot) Rank() int                               { return 0 }
func (fakeBoot) Size() int                               { return 1 }
func (f fakeBoot) LocalRank() int                        { return f.localRank }
func (f fakeBoot) LocalSize() int                        { return max(f.localSize, 1) }
func (fakeBoot) Host() string                            { return "testhost" }
func (fakeBoot) AllGather(data []byte) ([][]byte, error) { return [][]byte{data}, nil }
func (fakeBoot) BcastUint64s(words []uint64, root int) error {
	if root != 0 || len(words) != uniqueIDWords {
		return errors.New("unexpected broadcast")
	}
	return nil
}
