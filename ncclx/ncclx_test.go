package ncclx

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"rsag/phases"
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

// The maps must carry nccl.h's enum values: ncclInt64 = 4, ncclFloat32 = 7,
// ncclSum = 0, ncclMax = 2.
func TestTypeMaps(t *testing.T) {
	if d, ok := ncclDType(phases.Int64); !ok || d != 4 {
		t.Errorf("int64 -> %v %v, want 4", d, ok)
	}
	if d, ok := ncclDType(phases.Float32); !ok || d != 7 {
		t.Errorf("float32 -> %v %v, want 7", d, ok)
	}
	if o, ok := ncclOp(phases.Sum); !ok || o != 0 {
		t.Errorf("sum -> %v %v, want 0", o, ok)
	}
	if o, ok := ncclOp(phases.Max); !ok || o != 2 {
		t.Errorf("max -> %v %v, want 2", o, ok)
	}
	if _, ok := ncclDType(phases.DType(7)); ok {
		t.Error("unknown dtype mapped")
	}
	if _, ok := ncclOp(phases.Op(-1)); ok {
		t.Error("unknown op mapped")
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
	err := Probe(1)
	var le *LoadError
	if !errors.As(err, &le) || le.Lib != "cuda" {
		t.Fatalf("Probe: got %v, want a *LoadError for cuda", err)
	}
	for _, want := range []string{"libcuda.so.1", "no NVIDIA driver", "MPI backend"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not mention %q", err, want)
		}
	}
	b, err := New(fakeBoot{})
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

func (fakeBoot) Rank() int        { return 0 }
func (fakeBoot) Size() int        { return 1 }
func (f fakeBoot) LocalRank() int { return f.localRank }
func (f fakeBoot) LocalSize() int { return max(f.localSize, 1) }
func (fakeBoot) Host() string     { return "testhost" }
func (fakeBoot) Bcast(buf []byte, root int) error {
	if root != 0 || len(buf) != 1+uniqueIDBytes {
		return errors.New("unexpected broadcast")
	}
	return nil
}
