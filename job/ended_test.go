package job_test

import (
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"rsag/internal/testkit/inmem"
	"rsag/internal/testkit/schemacheck"
	"rsag/job"
	"rsag/outdir"
	"rsag/report"
)

// stallingWorld is a goroutine rank that never leaves its first barrier
// once it is in a phase (the first a run makes after run.json): what a
// stopped rank is to the others, from outside the job's code.
type stallingWorld struct {
	*inmem.World
	calls   atomic.Int64
	release <-chan struct{}
}

func (w *stallingWorld) Barrier() error {
	if w.calls.Add(1) == 1 {
		<-w.release
	}
	return w.World.Barrier()
}

// A run the watchdog ends (rank 1 stalled in a barrier, timeout_s 2)
// leaves, beside run.json, summary.json, junit.xml and rsag.prom, in the
// output dir and in metrics_dir, each saying why from the one list of
// verdicts: failed with run.json's reason, ended early, no check held,
// every enabled phase not run or never gathered.
func TestARunEndedEarlyWritesWhy(t *testing.T) {
	dir, metrics := t.TempDir(), t.TempDir()
	host, _ := os.Hostname()
	hosts := []string{host, host, host}
	started := time.Now()
	t.Cleanup(func() {
		os.RemoveAll(outdir.LocalBeatsOf(outdir.RunID(host, os.Getpid(), started.UTC().Format(time.RFC3339)), dir).Dir)
	})
	release := make(chan struct{})
	defer close(release)
	ended := inmem.NewRanks(hosts, inmem.Faults{}, time.Minute).Run(time.Minute, func(w *inmem.World) int {
		var world job.World = w
		if w.Rank() == 1 {
			world = &stallingWorld{World: w, release: release}
		}
		return job.Main(job.Options{ConfigPath: "../configs/smoke.toml", OutputDir: dir, Started: started,
			Sets:   []string{"backend=mpi", "timing.cycles=2", "memory.enabled=false", "timeout_s=2", "metrics_dir=" + metrics},
			Stdout: w.Stdout(), Stderr: w.Stderr(), Exit: w.Exit, World: world})
	})
	if ended[0].Code != job.ExitWatchdog {
		t.Fatalf("rank 0: %s with %d, want the watchdog's exit %d\nstderr:\n%s", ended[0].How, ended[0].Code, job.ExitWatchdog, ended[0].Stderr)
	}
	run, err := outdir.ReadRecord(dir)
	if err != nil || run.Status != outdir.StatusFailed || !strings.Contains(run.Reason, "watchdog: ") {
		t.Fatalf("run.json: %+v, %v; want failed by the watchdog", run, err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, report.SummaryFile))
	if err != nil {
		t.Fatalf("summary.json: %v\nrank 0's stderr:\n%s", err, ended[0].Stderr)
	}
	sum, err := report.ReadSummary(report.SummaryFile, raw)
	if err != nil {
		t.Fatal(err)
	}
	if schema, err := schemacheck.Load("../docs/summary.schema.json"); err != nil {
		t.Fatal(err)
	} else if err := schema.Validate(raw); err != nil {
		t.Errorf("summary.json of a run ended early does not validate against its schema: %v", err)
	}
	if sum.Status != outdir.StatusFailed || sum.Reason != run.Reason || !sum.EndedEarly || sum.ChecksPassed {
		t.Errorf("summary.json: %s %q ended early %v, checks passed %v; want failed with run.json's reason %q, ended early, none passed",
			sum.Status, sum.Reason, sum.EndedEarly, sum.ChecksPassed, run.Reason)
	}
	v := report.VerdictsIn(sum)
	notRun := 0
	for _, p := range v.Phases {
		for _, c := range p.Checks {
			if c.Outcome == report.Held {
				t.Errorf("%s %s held in a run the watchdog ended", p.Phase, c.Name)
			}
			if c.Outcome == report.NotRun {
				notRun++
				if !strings.Contains(c.Message, "the run ended") || !strings.Contains(c.Message, run.Reason) {
					t.Errorf("%s not run: %q; want why: the run ended: %s", p.Phase, c.Message, run.Reason)
				}
			}
		}
	}
	if v.Outcome != report.Failed || notRun < 2 {
		t.Errorf("verdict %s with %d phases not run; want failed, contracts and timing not run", v.Outcome, notRun)
	}
	junit, err := os.ReadFile(filepath.Join(dir, report.JUnitFile))
	if err != nil || !strings.Contains(string(junit), `<failure message="the run failed: `+xmlText(run.Reason)) ||
		!strings.Contains(string(junit), `<skipped message="not run: `) {
		t.Errorf("junit.xml (%v) lacks the run's failure with run.json's reason and a phase skipped as not run:\n%s", err, junit)
	}
	for _, d := range []string{dir, metrics} {
		prom, err := os.ReadFile(filepath.Join(d, report.PromFile))
		if err != nil || !strings.Contains(string(prom), `rsag_run_status{status="failed"} 1`) ||
			!strings.Contains(string(prom), `rsag_verdict{outcome="failed"} 1`) {
			t.Errorf("%s (%v): want rsag_run_status{status=\"failed\"} 1 and rsag_verdict{outcome=\"failed\"} 1:\n%s",
				filepath.Join(d, report.PromFile), err, prom)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "report.html")); err == nil {
		t.Errorf("report.html written by a run ended early: rsag report writes it from summary.json")
	}
	if !strings.Contains(ended[0].Stdout, "rsag: FAILED (exit 3): ") {
		t.Errorf("rank 0's verdict line is not FAILED (exit 3):\n%s", ended[0].Stdout)
	}
}

// xmlText is s as encoding/xml writes it in an attribute.
func xmlText(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;", "\t", "&#x9;", "\n", "&#xA;").Replace(s)
}
