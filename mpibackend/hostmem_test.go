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
	// No cgroups, whatever the machine running the test has.
	be.cgroupRoot = t.TempDir()
	os.WriteFile(be.meminfo, []byte("MemTotal: 16777216 kB\nMemAvailable: 8388608 kB\n"), 0o644) // 16 GiB, 8 available
	m, err := be.FreeMemory()
	if err != nil || m.Free != 2<<30 || m.Total != 16<<30 {
		t.Fatalf("FreeMemory = %d, %d, %v; want 2 GiB each of 4 ranks, of 16 GiB", m.Free, m.Total, err)
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

// Under a memory cgroup (Slurm's --mem=3G here, 1 GiB of it in use) that
// leaves less than the host's MemAvailable, the cgroup's headroom is what
// the node's ranks share, and the refusal names the cgroup, its limit
// file and --mem.
func TestFootprintAboveCgroupLimitIsRefused(t *testing.T) {
	be := newTest(t)
	be.localSize = 4
	be.meminfo = filepath.Join(t.TempDir(), "meminfo")
	os.WriteFile(be.meminfo, []byte("MemTotal: 16777216 kB\nMemAvailable: 8388608 kB\n"), 0o644)
	be.cgroupRoot = t.TempDir()
	job := filepath.Join(be.cgroupRoot, "sys/fs/cgroup/memory/slurm/job_7")
	os.MkdirAll(filepath.Join(job, "step_0"), 0o755)
	os.MkdirAll(filepath.Join(be.cgroupRoot, "proc/self"), 0o755)
	for file, s := range map[string]string{
		"proc/self/mountinfo": "35 31 0:32 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n",
		"proc/self/cgroup":    "4:memory:/slurm/job_7/step_0\n",
		"sys/fs/cgroup/memory/slurm/job_7/memory.limit_in_bytes": "3221225472\n",
		"sys/fs/cgroup/memory/slurm/job_7/memory.usage_in_bytes": "1073741824\n",
	} {
		if err := os.WriteFile(filepath.Join(be.cgroupRoot, file), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m, err := be.FreeMemory()
	if err != nil || m.Free != 512<<20 || m.Total != 3<<30 {
		t.Fatalf("FreeMemory = %d, %d, %v; want 512 MiB each of 4 ranks, of the 3 GiB limit", m.Free, m.Total, err)
	}
	err = phases.CheckFits(be, 512<<20+1, "timing at the largest size")
	for _, s := range []string{"(memory cgroup /slurm/job_7: limit 3.00 GiB in /sys/fs/cgroup/memory/slurm/job_7/memory.limit_in_bytes, 1.00 GiB in use, shared by its 4 ranks) has 536870912 bytes (0.50 GiB) free for this rank",
		"raise the job's memory limit (Slurm's --mem or --mem-per-cpu)"} {
		if err == nil || !strings.Contains(err.Error(), s) {
			t.Errorf("%v lacks %q", err, s)
		}
	}
	// A limit above what the host has left changes nothing.
	os.WriteFile(filepath.Join(job, "memory.limit_in_bytes"), []byte("68719476736\n"), 0o644)
	if m, err := be.FreeMemory(); err != nil || m.Free != 2<<30 || strings.Contains(m.Where, "cgroup") {
		t.Errorf("a 64 GiB limit on an 8 GiB host: %d, %v, %q", m.Free, err, m.Where)
	}
}
