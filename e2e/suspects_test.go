package e2e

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"rsag/report/suspects"
)

// TestSuspectsOfRealRuns reads runs rsag wrote with rsag suspects, as the
// health job does. A locate run on one host cannot judge (one node is too
// few units to compare), so it is inconclusive in every format, with
// nothing to drain. A run that failed (a gate no run passes) is refused,
// naming its status: its findings are not whole. (The drain rule itself
// is report/suspects' and slurm/drain_test.go's, on crafted runs.) The
// runs' ranks are in this process: what the file says is the run's logic.
func TestSuspectsOfRealRuns(t *testing.T) {
	t.Parallel()
	args := []string{"-config", "../configs/locate.toml", "-backend", "mpi", "-set", "required_ranks=4"}
	for _, s := range lean {
		args = append(args, "-set", s)
	}
	dir := filepath.Join(t.TempDir(), "locate")
	if r := inproc(t, 4, 2*time.Minute, append(args, "-output-dir", dir)...); r.code != 0 {
		t.Fatalf("the locate run exited %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	r := launch(t, time.Minute, rsagBin, "suspects", "-format", "json", dir)
	var p suspects.Plan
	if err := json.Unmarshal([]byte(r.stdout), &p); r.code != 0 || err != nil {
		t.Fatalf("rsag suspects -format json: exit %d, %v\nstdout:\n%s\nstderr:\n%s", r.code, err, r.stdout, r.stderr)
	}
	if p.Verdict != suspects.VerdictInconclusive || !strings.Contains(p.Why, "step inside: too few units") {
		t.Errorf("one host's run: verdict %q (%s), want inconclusive: step inside: too few units", p.Verdict, p.Why)
	}
	for _, e := range p.Entries {
		if e.Action == suspects.ActionDrain {
			t.Errorf("an inconclusive run drains %v", e.Nodes)
		}
	}
	r = launch(t, time.Minute, rsagBin, "suspects", dir)
	if lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n"); r.code != 0 ||
		!strings.HasPrefix(lines[len(lines)-1], "verdict: inconclusive: step inside: too few units") {
		t.Errorf("rsag suspects: exit %d, want 0 and the verdict last\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	r = launch(t, time.Minute, rsagBin, "suspects", "-format", "nul", dir)
	if f := strings.Split(r.stdout, "\x00"); r.code != 0 || len(f) < 6 || f[0] != "verdict" || f[1] != suspects.VerdictInconclusive {
		t.Errorf("rsag suspects -format nul: exit %d, %q", r.code, r.stdout)
	}

	failed := filepath.Join(t.TempDir(), "failed")
	if r := inproc(t, 4, 2*time.Minute, append(args, "-output-dir", failed, "-set", "timing.enabled=true",
		"-set", `timing.sizes_bytes=["4K"]`, "-set", "timing.cycles=1", "-set", "timing.warmups=1",
		"-set", "timing.min_busbw_gbps=100000")...); r.code != 1 {
		t.Fatalf("a failed gate exited %d, want 1\nstderr:\n%s", r.code, r.stderr)
	}
	for _, format := range []string{"text", "json", "nul"} {
		r := launch(t, time.Minute, rsagBin, "suspects", "-format", format, failed)
		if r.code != suspects.ExitNotFound || r.stdout != "" || !strings.Contains(r.stderr, `its run.json says "failed"`) {
			t.Errorf("-format %s on a failed run: exit %d, stdout %q, stderr %q; want %d, nothing, and run.json's word",
				format, r.code, r.stdout, r.stderr, suspects.ExitNotFound)
		}
	}
}
