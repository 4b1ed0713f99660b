package slurm_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testHealthCheck runs the real slurm/healthcheck.sbatch on the two-node
// cluster, with the real rsag suspects, scontrol and sinfo. The locate
// runs it drains by are given, not measured: two nodes make one pair,
// which cannot tell a slow node from a slow link (docs/locate.md), and
// four emulated Slurm nodes would cost make test minutes. So RSAG_CH7 is
// a stand-in that writes a complete run's summary.json with the suspects
// given (what ch7.sbatch's run would leave), and one more job runs the
// real locate config through the real ch7.sbatch and drains nothing.
// Every node drained is resumed when the subtest ends.
func (c *cluster) testHealthCheck(t *testing.T) {
	suspect := func(node string) string {
		return fmt.Sprintf(`{"kind": "node", "nodes": [%q], "ranks": [], "problem": "bandwidth", "figure": 0.31, "text": "%s (bandwidth 0.31x median)"}`, node, node)
	}
	for _, tc := range []struct {
		name, suspects, fraction string
		drain                    string // the node drained; "" none
		says                     string
	}{
		{"one slow node is drained", suspect("node2"), "0.5", "node2", "draining node2: rsag: bandwidth 0.31x median, job "},
		{"no suspect drains nothing", "", "0.5", "", "healthcheck: no suspect: nothing to drain"},
		{"every node slow drains nothing", suspect("node1") + "," + suspect("node2"), "0.5", "",
			"too many suspects: the fabric, not a node: 2 of 2 nodes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := c.submitDir(t)
			summary := `{"schema_version": 2, "status": "complete", "locate": {"suspects": [` + tc.suspects + `]}}`
			if err := os.WriteFile(filepath.Join(dir, "given.json"), []byte(summary), 0o644); err != nil {
				t.Fatal(err)
			}
			stand := "#!/bin/bash\nmkdir -p \"$RSAG_OUTPUT_DIR\" && cp given.json \"$RSAG_OUTPUT_DIR/summary.json\"\n"
			if err := os.WriteFile(filepath.Join(dir, "given-ch7.sh"), []byte(stand), 0o755); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.resume(t, "node1", "node2") })
			log, code := c.health(t, dir, "RSAG_CH7=given-ch7.sh", "RSAG_DRAIN=1", "RSAG_DRAIN_MAX_FRACTION="+tc.fraction)
			if !strings.Contains(log, tc.says) {
				t.Errorf("the job log does not say %q:\n%s", tc.says, log)
			}
			if want := map[bool]int{true: 0, false: 4}[tc.suspects == ""]; code != want {
				t.Errorf("exit %d, want %d", code, want)
			}
			reasons := c.drained(t)
			if tc.drain == "" && len(reasons) > 0 {
				t.Errorf("drained %v, want none", reasons)
			}
			if tc.drain != "" {
				if len(reasons) != 1 || !strings.HasPrefix(reasons[tc.drain], "rsag: bandwidth 0.31x median, job ") {
					t.Errorf("sinfo -R: %v, want only %s with rsag's reason", reasons, tc.drain)
				}
			}
		})
	}
	t.Run("without the opt-in it prints the line", func(t *testing.T) {
		dir := c.submitDir(t)
		os.WriteFile(filepath.Join(dir, "given.json"), []byte(`{"schema_version": 2, "status": "complete", "locate": {"suspects": [`+suspect("node2")+`]}}`), 0o644)
		os.WriteFile(filepath.Join(dir, "given-ch7.sh"), []byte("#!/bin/bash\nmkdir -p \"$RSAG_OUTPUT_DIR\" && cp given.json \"$RSAG_OUTPUT_DIR/summary.json\"\n"), 0o755)
		t.Cleanup(func() { c.resume(t, "node1", "node2") })
		log, _ := c.health(t, dir, "RSAG_CH7=given-ch7.sh", "RSAG_DRAIN_MAX_FRACTION=0.5")
		if !strings.Contains(log, `  scontrol update NodeName=node2 State=DRAIN Reason="rsag: bandwidth 0.31x median, job `) {
			t.Errorf("no scontrol line to run:\n%s", log)
		}
		if r := c.drained(t); len(r) > 0 {
			t.Errorf("drained %v without RSAG_DRAIN=1", r)
		}
	})
	t.Run("a real locate run", func(t *testing.T) {
		dir := c.submitDir(t)
		t.Cleanup(func() { c.resume(t, "node1", "node2") })
		log, code := c.health(t, dir, "RSAG_DRAIN=1", "RSAG_BACKEND=mpi",
			`RSAG_ARGS=-set locate.sizes_bytes=["4K","64K"] -set locate.collectives=["all-reduce"] -set locate.warmups=1`)
		if code != 0 || !strings.Contains(log, "healthcheck: no suspect: nothing to drain") {
			t.Errorf("exit %d, want 0 and no suspect:\n%s", code, log)
		}
		if r := c.drained(t); len(r) > 0 {
			t.Errorf("drained %v", r)
		}
	})
}

// health submits slurm/healthcheck.sbatch on both nodes, one task each,
// waits for it and returns its log and exit status.
func (c *cluster) health(t *testing.T, dir string, env ...string) (string, int) {
	t.Helper()
	if err := os.Symlink(filepath.Join(c.repo, "slurm"), filepath.Join(dir, "slurm")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), submitTimeout)
	defer cancel()
	cmd := c.client(ctx, "sbatch", "--parsable", "--wait", "-N", "2", "--ntasks-per-node=1", filepath.Join(c.repo, "slurm", "healthcheck.sbatch"))
	cmd.Dir = dir
	cmd.Env = c.env(append([]string{"RSAG_BIN=" + c.rsagBin}, env...))
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.Output()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("sbatch: %v", err)
	}
	id, _, _ := strings.Cut(strings.TrimSpace(string(out)), ";")
	b, err := os.ReadFile(filepath.Join(dir, "rsag-health-"+id+".out"))
	if err != nil {
		t.Fatalf("job %q: %v", id, err)
	}
	t.Logf("job %s exited %d:\n%s", id, code, b)
	return string(b), code
}

// drained is sinfo -R's nodes and reasons.
func (c *cluster) drained(t *testing.T) map[string]string {
	t.Helper()
	out, err := c.clientRun("", 10*time.Second, "sinfo", "-R", "-h", "-N", "-o", "%N|%E")
	if err != nil {
		t.Fatalf("sinfo -R: %v\n%s", err, out)
	}
	reasons := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if n, r, ok := strings.Cut(l, "|"); ok {
			reasons[n] = r
		}
	}
	return reasons
}

// resume gives drained nodes back (a node not drained is left alone).
func (c *cluster) resume(t *testing.T, nodes ...string) {
	for n := range c.drained(t) {
		if out, err := c.clientRun("", 10*time.Second, "scontrol", "update", "NodeName="+n, "State=RESUME"); err != nil {
			t.Errorf("resuming %s: %v\n%s", n, err, out)
		}
	}
}
