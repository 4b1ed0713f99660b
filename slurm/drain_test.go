package slurm_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"rsag/outdir"
	"rsag/report"
)

// TestHealthDrainsFromData runs the real slurm/healthcheck.sbatch with bash,
// outside Slurm: the real rsag reads a run that a stand-in for ch7.sbatch
// leaves (summary.json and run.json, as a run would), and a fake scontrol
// on PATH answers `show hostnames` with node1..node4 and records each
// `update` it is asked, argument by argument. It needs RSAG_BIN (make test
// sets it), not a cluster: TestSlurmHealth drains on the real one.
//
// Each case asserts the job's exit status, what it says, and exactly what
// it asked scontrol to drain; and that no control character of the crafted
// summary reached its log.
func TestHealthDrainsFromData(t *testing.T) {
	bin := os.Getenv("RSAG_BIN")
	if bin == "" {
		t.Skip("set RSAG_BIN=/abs/path/to/rsag (make test does)")
	}
	if !filepath.IsAbs(bin) {
		t.Fatalf("RSAG_BIN=%s: want an absolute path", bin)
	}
	slow := func(node string, figure float64) report.SummaryLocateSuspect {
		s := report.SummaryLocateSuspect{Kind: "node", Nodes: []string{node}, Ranks: []int{}, Problem: "bandwidth",
			By: []string{"pairs"}, Figure: figure, SlowRepeats: 3, Repeats: 3}
		s.Text = report.SuspectText(s, false)
		return s
	}
	// A node that could not finish a probe within its deadline
	// (phase.SuspectUnresponsive).
	unresponsive := func(node string) report.SummaryLocateSuspect {
		s := slow(node, 0.00008)
		s.Kind, s.Text = "unresponsive", node+" (unresponsive: AllReduce 1M took 13s, past 2.5s, 8e-05x median, with 3 of 3 partners)"
		return s
	}
	var crafted []report.SummaryLocateSuspect
	for _, name := range []string{"node1\nnode2", "node1 node2", "node2;scontrol update NodeName=node1 State=DRAIN",
		"$(touch pwned)", "`touch pwned`", "\x1b[2J\x1b]0;owned\x07node4", "node4\x00node1", "node4,node1", "-node1"} {
		s := slow(name, 0.003)
		s.Text = name + " (bandwidth 0.003x median)\r\x1b[1A\x1b[2KPASSED\n"
		crafted = append(crafted, s)
	}
	wide := "the spread is too wide: healthy units spread to 4.52x the median, beyond the threshold 0.50x (all-reduce 4K)"
	for _, c := range []struct {
		name     string
		suspects []report.SummaryLocateSuspect
		pairs    string // the pairs step's inconclusive reason
		run      string // run.json's status
		env      []string
		code     int
		says     string
		drained  []string // the reasons scontrol was given, by node
		notSays  string
		also     string // said too
	}{
		{name: "crafted names drain only the node that is one", suspects: append(crafted, slow("node3", 0.003)), run: outdir.StatusComplete,
			env: []string{"RSAG_DRAIN=1"}, code: 4, says: "healthcheck: draining node3: rsag 0.003x bw j812",
			drained: []string{"NodeName=node3", "State=DRAIN", "Reason=rsag 0.003x bw j812"}},
		{name: "a marginal second node masks nothing", suspects: []report.SummaryLocateSuspect{slow("node3", 0.0029), slow("node4", 0.2)},
			run: outdir.StatusComplete, env: []string{"RSAG_DRAIN=1"}, code: 4, says: "not drained: node4 (bandwidth 0.20x median): marginal: 3.85x beyond the healthy spread (1.3x)",
			drained: []string{"NodeName=node3", "State=DRAIN", "Reason=rsag 0.003x bw j812"}},
		{name: "two far below of four is the fabric", suspects: []report.SummaryLocateSuspect{slow("node3", 0.003), slow("node4", 0.003)},
			run: outdir.StatusComplete, env: []string{"RSAG_DRAIN=1"}, code: 4,
			says: "healthcheck: too many suspects: the fabric, not a node: 2 of 4 nodes (node3 node4) are far below"},
		{name: "the fraction is the operator's", suspects: []report.SummaryLocateSuspect{slow("node3", 0.003), slow("node4", 0.003)},
			run: outdir.StatusComplete, env: []string{"RSAG_DRAIN=1", "RSAG_DRAIN_MAX_FRACTION=0.5"}, code: 4, says: "draining node4",
			drained: []string{"NodeName=node3", "State=DRAIN", "Reason=rsag 0.003x bw j812", "NodeName=node4", "State=DRAIN", "Reason=rsag 0.003x bw j812"}},
		{name: "an inconclusive step drains nothing", suspects: []report.SummaryLocateSuspect{slow("node2", 0.076)}, pairs: wide,
			run: outdir.StatusComplete, env: []string{"RSAG_DRAIN=1"}, code: 6,
			says: "healthcheck: inconclusive: nothing drained, because step pairs: " + wide},
		{name: "a node outside the allocation is not drained", suspects: []report.SummaryLocateSuspect{slow("node9", 0.003)},
			run: outdir.StatusComplete, env: []string{"RSAG_DRAIN=1"}, code: 4,
			says: "not drained: node9 (bandwidth 0.003x median): node9 is not a node of this allocation (node1 node2 node3 node4)"},
		{name: "an unresponsive node is drained though its step could not judge", suspects: []report.SummaryLocateSuspect{unresponsive("node3")},
			pairs: wide, run: outdir.StatusComplete, env: []string{"RSAG_DRAIN=1"}, code: 4, says: "healthcheck: draining node3: rsag unresp bw j812",
			drained: []string{"NodeName=node3", "State=DRAIN", "Reason=rsag unresp bw j812"}},
		{name: "no suspect", run: outdir.StatusComplete, env: []string{"RSAG_DRAIN=1"}, code: 0, says: "healthcheck: no suspect: nothing to drain"},
		// The stand-in runs rsag (through RSAG_BIN, as ch7.sbatch does)
		// as rank 0, which exits 2, and then exits 143 itself, as srun
		// does when it killed a task: the job exits rsag's 2.
		{name: "a failed run drains nothing and exits with rsag's status", suspects: []report.SummaryLocateSuspect{slow("node3", 0.003)},
			run: outdir.StatusFailed, env: []string{"RSAG_DRAIN=1", "FAKE_RANK0=1"}, code: 2,
			says: "healthcheck: the run did not complete (rsag exit 2): nothing drained", also: "healthcheck: rsag (rank 0) exited 2; the launcher's status: 143"},
		{name: "a complete run is acted on, and rsag's other status kept", suspects: []report.SummaryLocateSuspect{slow("node3", 0.003)},
			run: outdir.StatusComplete, env: []string{"RSAG_DRAIN=1", "FAKE_RANK0=1"}, code: 2,
			says:    "healthcheck: rsag exited 2: the job exits 2 (its own finding: 4)",
			drained: []string{"NodeName=node3", "State=DRAIN", "Reason=rsag 0.003x bw j812"}},
		{name: "without the opt-in it prints the line", suspects: []report.SummaryLocateSuspect{slow("node3", 0.003)}, run: outdir.StatusComplete,
			code: 4, says: "\n  scontrol update NodeName=node3 State=DRAIN Reason=\"rsag 0.003x bw j812\"\n"},
		{name: "a bad margin is refused before the run", run: outdir.StatusComplete, env: []string{"RSAG_DRAIN_MARGIN=0.5"}, code: 2,
			says: "-margin 0.5: want a factor of 1 or more", notSays: "stand-in ran"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			writeGivenRun(t, dir, c.suspects, c.pairs, c.run)
			folded, code, updates := runHealthScript(t, dir, bin, c.env...)
			// The job's lines are folded at 120 columns, the rest of a
			// line indented by four.
			for _, l := range strings.Split(folded, "\n") {
				if len(l) > 120 && (strings.HasPrefix(l, "healthcheck") || strings.HasPrefix(l, "    ")) {
					t.Errorf("a line of %d columns: %q", len(l), l)
				}
			}
			log := strings.ReplaceAll(folded, "\n    ", "")
			if code != c.code || !strings.Contains(log, c.says) || !strings.Contains(log, c.also) ||
				(c.notSays != "" && strings.Contains(log, c.notSays)) {
				t.Errorf("exit %d, want %d, saying %q:\n%s", code, c.code, c.says, log)
			}
			if !slices.Equal(updates, c.drained) {
				t.Errorf("scontrol update was given %q, want %q", updates, c.drained)
			}
			for _, r := range log {
				if (r < 0x20 && r != '\n') || (r >= 0x7f && r <= 0x9f) {
					t.Errorf("a raw control character %q in the job's log:\n%q", r, log)
					break
				}
			}
			if _, err := os.Stat(filepath.Join(dir, "pwned")); err == nil {
				t.Error("a name in summary.json ran a command")
			}
		})
	}
}

// writeGivenRun writes, in dir, the run the stand-in for ch7.sbatch leaves
// (given/), and the stand-in itself (given-ch7.sh): four nodes, the steps
// inside and pairs (pairs inconclusive for the reason given), suspects.
func writeGivenRun(t *testing.T, dir string, suspects []report.SummaryLocateSuspect, pairs, status string) {
	t.Helper()
	const started = "2026-12-06T01:00:00Z"
	l := report.SummaryLocate{Threshold: 0.5, Repeats: 3, Suspects: suspects, Intermittent: []report.SummaryLocateSuspect{},
		Steps: []report.SummaryLocateStep{{Name: "inside", Ran: true, Spread: 1.4}, {Name: "pairs", Ran: true, Spread: 1.3, Inconclusive: pairs}}}
	if pairs != "" {
		l.Steps[1].Spread = 4.52
	}
	var nodes []map[string]any
	for i := 1; i <= 4; i++ {
		l.Nodes = append(l.Nodes, report.SummaryLocateNode{Host: fmt.Sprintf("node%d", i)})
		nodes = append(nodes, map[string]any{"host": fmt.Sprintf("node%d", i)})
	}
	given := filepath.Join(dir, "given")
	if err := os.Mkdir(given, 0o755); err != nil {
		t.Fatal(err)
	}
	for file, v := range map[string]any{
		report.SummaryFile: map[string]any{"schema_version": report.SummarySchemaVersion, "status": status, "started": started, "nodes": nodes, "locate": l},
		outdir.RunFile:     outdir.Record{Status: status, Started: started},
	} {
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(given, file), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// With FAKE_RANK0=1 it runs rsag as rank 0 (exit 2: a bad flag) and
	// exits 143, as srun does when it killed a task.
	stand := `#!/bin/bash
echo "stand-in ran"
mkdir -p "$RSAG_OUTPUT_DIR" && cp given/* "$RSAG_OUTPUT_DIR/" || exit 1
if [[ ${FAKE_RANK0:-} == 1 ]]; then
	SLURM_PROCID=0 "$RSAG_BIN" suspects -margin 0 x
	exit 143
fi
`
	if err := os.WriteFile(filepath.Join(dir, "given-ch7.sh"), []byte(stand), 0o755); err != nil {
		t.Fatal(err)
	}
}

// runHealthScript runs slurm/healthcheck.sbatch from dir as Slurm would
// start the batch script of job 812 on node1..node4, with a fake scontrol;
// it returns the log (stdout and stderr), the exit status and the
// arguments of every `scontrol update`, after "update".
func runHealthScript(t *testing.T, dir, bin string, env ...string) (string, int, []string) {
	t.Helper()
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(repo, "slurm"), filepath.Join(dir, "slurm")); err != nil {
		t.Fatal(err)
	}
	fake := filepath.Join(dir, "fakebin")
	if err := os.Mkdir(fake, 0o755); err != nil {
		t.Fatal(err)
	}
	// Each update's arguments, one a line, %q-quoted by bash so that a
	// newline in one would show.
	scontrol := `#!/bin/bash
case "$1 $2" in
"show hostnames") [[ $3 == "node[1-4]" ]] || exit 1; printf '%s\n' node1 node2 node3 node4 ;;
update*) shift; for a in "$@"; do printf '%q\n' "$a"; done >>"` + filepath.Join(dir, "updates") + `" ;;
*) exit 1 ;;
esac
`
	if err := os.WriteFile(filepath.Join(fake, "scontrol"), []byte(scontrol), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", filepath.Join(repo, "slurm", "healthcheck.sbatch"))
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=" + fake + ":" + os.Getenv("PATH"), "HOME=" + dir, "TMPDIR=" + dir,
		"SLURM_SUBMIT_DIR=" + dir, "SLURM_JOB_ID=812", "SLURM_JOB_NODELIST=node[1-4]",
		"RSAG_BIN=" + bin, "RSAG_CH7=given-ch7.sh"}, env...)
	done := make(chan struct{})
	timer := time.AfterFunc(time.Minute, func() {
		if cmd.Process != nil {
			cmd.Process.Kill()
		}
		close(done)
	})
	out, err := cmd.CombinedOutput()
	if !timer.Stop() {
		<-done
		t.Fatalf("healthcheck.sbatch did not end within a minute:\n%s", out)
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	var updates []string
	if b, err := os.ReadFile(filepath.Join(dir, "updates")); err == nil {
		updates = strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
		for i, u := range updates {
			// %q leaves a word with no special character as it is,
			// and writes 'a b' or $'..' for others.
			updates[i] = strings.ReplaceAll(strings.TrimSuffix(strings.TrimPrefix(u, "'"), "'"), `\ `, " ")
		}
	}
	t.Logf("exit %d:\n%s", code, out)
	return string(out), code, updates
}
