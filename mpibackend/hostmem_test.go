package mpibackend

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"rsag/phases"
)

func TestParseMeminfo(t *testing.T) {
	avail, total, err := parseMeminfo(strings.NewReader("MemTotal:       24683584 kB\nMemFree:        22967236 kB\nMemAvailable:   24176388 kB\nBuffers:           1 kB\n"))
	if err != nil || avail != 24176388*1024 || total != 24683584*1024 {
		t.Errorf("got %d, %d, %v", avail, total, err)
	}
	for in, want := range map[string]string{
		"MemTotal: 1 kB\n":                                     "no MemAvailable",
		"MemAvailable: 1 kB\n":                                 "no MemTotal",
		"MemTotal: 1 kB\nMemAvailable: x kB\n":                 `"x" is not a size in kB`,
		"MemTotal: 1 kB\nMemAvailable: -5 kB\n":                `"-5" is not a size in kB`,
		"MemTotal: 1 kB\nMemAvailable: 1 MB\n":                 `is not "N kB"`,
		"MemTotal: 99999999999999999 kB\nMemAvailable: 1 kB\n": "is not a size in kB",
	} {
		if _, _, err := parseMeminfo(strings.NewReader(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
	// This host's own.
	f, err := os.Open(meminfo)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if avail, total, err := parseMeminfo(f); err != nil || avail <= 0 || avail > total {
		t.Errorf("%s: %d of %d, %v", meminfo, avail, total, err)
	}
}

// A footprint larger than this rank's share of the host's available memory
// is refused, in words about host memory, without allocating anything.
func TestFootprintAboveHostMemoryIsRefused(t *testing.T) {
	be := newTest(t)
	be.localSize = 4
	be.meminfo = filepath.Join(t.TempDir(), "meminfo")
	os.WriteFile(be.meminfo, []byte("MemTotal: 16777216 kB\nMemAvailable: 8388608 kB\n"), 0o644) // 16 GiB, 8 available
	free, total, err := be.FreeMemory()
	if err != nil || free != 2<<30 || total != 16<<30 {
		t.Fatalf("FreeMemory = %d, %d, %v; want 2 GiB each of 4 ranks, of 16 GiB", free, total, err)
	}
	if err := phases.CheckFits(be, 2<<30, "timing at the largest size"); err != nil {
		t.Errorf("2 GiB fits in 2 GiB: %v", err)
	}
	err = phases.CheckFits(be, 2<<30+1, "timing at the largest size")
	for _, s := range []string{"timing at the largest size needs 2147483649 bytes (2.00 GiB) of host memory at once on each rank",
		"(MemAvailable in /proc/meminfo, shared by its 4 ranks) has 2147483648 bytes (2.00 GiB) free for this rank",
		"run fewer ranks per node"} {
		if err == nil || !strings.Contains(err.Error(), s) {
			t.Errorf("%v lacks %q", err, s)
		}
	}
	if err != nil && strings.Contains(err.Error(), "device") {
		t.Errorf("host memory called device memory: %v", err)
	}
	if m, _ := be.Memory(); m.LiveBytes != 0 || m.PeakBytes != 0 {
		t.Errorf("the check allocated: %+v", m)
	}
	be.meminfo = filepath.Join(t.TempDir(), "missing")
	if err := phases.CheckFits(be, 1, "x"); err == nil || !strings.Contains(err.Error(), "reading the host's memory") {
		t.Errorf("an unreadable meminfo: %v", err)
	}
}
