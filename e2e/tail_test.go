package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"rsag/coll"
	"rsag/internal/testkit/inmem"
	"rsag/report"
)

// A planted tail: rank 1 sleeps 2 s in every 4th 1 MiB AllReduce
// (testdata/stall.c's STALL_EVERY=4 STALL_MS=2000, in memory: inmem.Slow,
// from the first such call on). A quarter of the samples (2 of any 8 in a
// row) leaves the median alone and takes the p99, so a busbw gate that the
// median passes fails when asked to judge the p99
// (timing.min_busbw_statistic = "p99"), naming the statistic, and the
// page's gate check says the same. The ranks are in this process: the
// gate is the run's logic.
func TestABusBWGateAtP99FailsOnAPlantedTail(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "out")
	var calls atomic.Int64 // rank 1's 1 MiB AllReduces
	tail := &inmem.Slow{Rank: 1, Delay: func(c string, bytes int) time.Duration {
		if c != coll.AllReduce.Name || bytes != 1<<20 || (calls.Add(1)-1)%4 != 0 {
			return 0
		}
		return 2 * time.Second
	}}
	// 2 s is 4x 1 MiB / 0.002 GB/s = 524 ms, the most the gate lets a
	// sample take, which is 500x a 1 MiB AllReduce's 0.1 to 1 ms here: 3.5
	// ms beside a second make test, over 21 ms with e2e's parallel tests
	// four at a time, and a median above 105 ms (the gate at 0.01 GB/s)
	// once beside a second suite at -parallel 8: the gate is set far below
	// any load's median.
	r := inprocWith(t, 2, inmem.Faults{Slow: tail}, 3*time.Minute, "-config", "../configs/smoke.toml", "-output-dir", dir,
		"-set", "timing.sizes_bytes=[1048576]", "-set", `timing.modes=["direct"]`, "-set", "timing.warmups=0",
		"-set", "timing.cycles=8", "-set", "memory.enabled=false",
		"-set", "timing.min_busbw_gbps=0.002", "-set", `timing.min_busbw_statistic="p99"`)
	code, stdout, stderr := r.code, r.stdout, r.stderr
	if calls.Load() < 8 {
		t.Fatalf("the tail was not planted: rank 1 made %d 1 MiB AllReduces, want 8 at least\n%s", calls.Load(), stderr)
	}
	if code != 1 || !strings.Contains(stdout+stderr, "AllReduce busbw at p99 ") || !strings.Contains(stdout+stderr, "< min_busbw_gbps 0.002") {
		t.Fatalf("exit %d, want 1 with the gate failing at p99\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	data, err := os.ReadFile(filepath.Join(dir, report.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	s, err := report.ReadSummary(report.SummaryFile, data)
	if err != nil {
		t.Fatal(err)
	}
	var direct *report.TimingStat
	for i := range s.Timing {
		if s.Timing[i].Mode == coll.Direct && s.Timing[i].SizeBytes == 1<<20 {
			direct = &s.Timing[i]
		}
	}
	if direct == nil {
		t.Fatalf("no 1 MiB direct case in summary.json")
	}
	// The median passes the gate the p99 fails: what the statistic changes.
	if direct.BusBWGBps < 0.002 || direct.P99US < 2000000 {
		t.Errorf("median busbw %.3f GB/s, p99 %.0f us: want the median above the gate and the p99 above the planted 2 s", direct.BusBWGBps, direct.P99US)
	}
	page, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), "AllReduce busbw at p99 ") {
		t.Errorf("report.html does not say the gate failed at p99")
	}
}
