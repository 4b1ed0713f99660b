package job_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"rsag/internal/testkit/inmem"
	"rsag/job"
	"rsag/outdir"
)

// runRanks runs job.Main on np goroutine ranks of this process with sets.
func runRanks(t *testing.T, np int, dir, config string, sets ...string) []inmem.Ended {
	t.Helper()
	host, _ := os.Hostname()
	hosts := make([]string, np)
	for i := range hosts {
		hosts[i] = host
	}
	started := time.Now()
	t.Cleanup(func() {
		os.RemoveAll(outdir.LocalBeatsOf(outdir.RunID(host, os.Getpid(), started.UTC().Format(time.RFC3339)), dir).Dir)
	})
	return inmem.NewRanks(hosts, inmem.Faults{}, time.Minute).Run(time.Minute, func(w *inmem.World) int {
		return job.Main(job.Options{ConfigPath: config, OutputDir: dir, Sets: sets, Started: started,
			Stdout: w.Stdout(), Stderr: w.Stderr(), Exit: w.Exit, World: w})
	})
}

// A whole run on goroutine ranks: every rank returns 0, rank 0 alone
// prints the tables and the verdict, and run.json says complete.
func TestMainOnGoroutineRanks(t *testing.T) {
	dir := t.TempDir()
	ended := runRanks(t, 3, dir, "../configs/smoke.toml", "backend=mpi", "timing.cycles=2", "memory.enabled=false")
	for r, e := range ended {
		if e.How != "returned" || e.Code != job.ExitOK || e.Stderr != "" {
			t.Errorf("rank %d: %s with %d\nstderr:\n%s", r, e.How, e.Code, e.Stderr)
		}
		if got := strings.Contains(e.Stdout, "rsag: PASSED"); got != (r == 0) {
			t.Errorf("rank %d says the verdict: %v\n%s", r, got, e.Stdout)
		}
	}
	if run, err := outdir.ReadRecord(dir); err != nil || run.Status != outdir.StatusComplete || run.WorldSize != 3 || run.PID != os.Getpid() {
		t.Errorf("run.json: %+v, %v; want complete, 3 ranks, this process", run, err)
	}
}

// A refusal every rank shares ends every rank with exit 2, said once, by
// rank 0, and leaves nothing behind.
func TestARefusalOnGoroutineRanksIsSaidOnce(t *testing.T) {
	dir := t.TempDir() + "/out"
	ended := runRanks(t, 2, dir, "../configs/smoke.toml", "backend=mpi", "timing.cycles=0")
	for r, e := range ended {
		if e.How != "returned" || e.Code != job.ExitBadArgs {
			t.Errorf("rank %d: %s with %d, want exit %d", r, e.How, e.Code, job.ExitBadArgs)
		}
		if said := strings.Count(e.Stderr, "timing.cycles: 0: use at least 1"); said != map[bool]int{true: 1, false: 0}[r == 0] {
			t.Errorf("rank %d said the refusal %d times:\n%s", r, said, e.Stderr)
		}
	}
	if _, err := os.Stat(dir); err == nil {
		t.Errorf("a refused run made %s", dir)
	}
}
