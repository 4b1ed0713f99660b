package suspects

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"rsag/outdir"
	"rsag/report"
)

const started = "2026-12-06T01:00:00Z"

// nodeSuspect is a node suspect named by step by at figure.
func nodeSuspect(node string, figure float64, by ...string) report.SummaryLocateSuspect {
	s := report.SummaryLocateSuspect{Kind: "node", Nodes: []string{node}, Ranks: []int{}, Problem: "bandwidth", By: by,
		Figure: figure, SlowRepeats: 3, Repeats: 3}
	s.Text = report.SuspectText(s, false)
	return s
}

// locate is a locate section of four nodes whose steps inside and pairs
// ran, with spreads 1.5 and 1.3 and nothing inconclusive.
func locate(suspects ...report.SummaryLocateSuspect) report.SummaryLocate {
	l := report.SummaryLocate{Threshold: 0.5, Repeats: 3, Suspects: suspects, Intermittent: []report.SummaryLocateSuspect{},
		Steps: []report.SummaryLocateStep{
			{Name: "inside", Ran: true, Spread: 1.5},
			{Name: "pairs", Ran: true, Spread: 1.3},
			{Name: "ranks", Ran: false, Note: "one rank a node"},
		}}
	for i := 1; i <= 4; i++ {
		l.Nodes = append(l.Nodes, report.SummaryLocateNode{Host: "node" + string(rune('0'+i))})
	}
	return l
}

// writeRun writes a run's output dir: summary.json with l (and the nodes
// of l) and a run.json that says status.
func writeRun(t *testing.T, l report.SummaryLocate, status string) string {
	t.Helper()
	dir := t.TempDir()
	var nodes []map[string]any
	for _, n := range l.Nodes {
		nodes = append(nodes, map[string]any{"host": n.Host})
	}
	s := map[string]any{"schema_version": report.SummarySchemaVersion, "status": status, "started": started, "nodes": nodes, "locate": l}
	writeJSON(t, filepath.Join(dir, report.SummaryFile), s)
	writeJSON(t, filepath.Join(dir, outdir.RunFile), outdir.Record{Status: status, Reason: reasonOf(status), Started: started})
	return dir
}

func reasonOf(status string) string {
	if status == outdir.StatusFailed {
		return "watchdog: locate barrier did not finish within 3m0s"
	}
	return ""
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// run runs rsag suspects, and fails the test if it does not return
// within a minute (a FIFO would block it for ever).
func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- Command(args, &out, &errb) }()
	select {
	case code = <-done:
	case <-time.After(time.Minute):
		t.Fatalf("rsag suspects %q has not returned after a minute", args)
	}
	return code, out.String(), errb.String()
}

func TestUnreadableInputsAreRefusedByKind(t *testing.T) {
	fifoDir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(fifoDir, report.SummaryFile), 0o600); err != nil {
		t.Fatal(err)
	}
	dirDir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dirDir, report.SummaryFile), 0o755); err != nil {
		t.Fatal(err)
	}
	runFIFO := writeRun(t, locate(), outdir.StatusComplete)
	if err := os.Remove(filepath.Join(runFIFO, outdir.RunFile)); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(runFIFO, outdir.RunFile), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, arg, says string }{
		{"a FIFO summary.json", fifoDir, "a named pipe (FIFO), not a file rsag wrote"},
		{"a FIFO run.json", runFIFO, "a named pipe (FIFO), not a file rsag wrote"},
		{"a device", "/dev/zero", "a character device, not a file rsag wrote"},
		{"a directory summary.json", dirDir, "a directory, not a file rsag wrote"},
		{"nothing there", filepath.Join(t.TempDir(), "none"), "does not exist"},
		{"an empty dir", t.TempDir(), "holds no summary.json"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := run(t, c.arg)
			if code != ExitNotFound || stdout != "" || !strings.Contains(stderr, c.says) {
				t.Errorf("exit %d, stdout %q, stderr %q; want %d, nothing printed, and %q", code, stdout, stderr, ExitNotFound, c.says)
			}
		})
	}
}

// A run that did not complete drains nothing, whatever its summary says.
func TestOnlyACompleteRunIsRead(t *testing.T) {
	l := locate(nodeSuspect("node3", 0.003, "pairs"))
	noRun := writeRun(t, l, outdir.StatusComplete)
	if err := os.Remove(filepath.Join(noRun, outdir.RunFile)); err != nil {
		t.Fatal(err)
	}
	// summary.json says complete, run.json (the last word) failed.
	failed := writeRun(t, l, outdir.StatusComplete)
	writeJSON(t, filepath.Join(failed, outdir.RunFile), outdir.Record{Status: outdir.StatusFailed, Reason: reasonOf(outdir.StatusFailed), Started: started})
	noLocate := t.TempDir()
	writeJSON(t, filepath.Join(noLocate, report.SummaryFile), map[string]any{"schema_version": report.SummarySchemaVersion, "status": "complete", "started": started})
	writeJSON(t, filepath.Join(noLocate, outdir.RunFile), outdir.Record{Status: outdir.StatusComplete, Started: started})
	for _, c := range []struct {
		name, dir string
		says      []string
	}{
		{"failed", failed, []string{`run.json says "failed" (watchdog: locate barrier did not finish within 3m0s)`, "nothing to drain", "fix that and run again"}},
		{"running", writeRun(t, l, outdir.StatusRunning), []string{`run.json says "running"`, "nothing to drain"}},
		{"no run.json", noRun, []string{"has no run.json beside it", "give the dir the run wrote"}},
		{"no locate", noLocate, []string{"no locate section: run configs/locate.toml"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, format := range []string{"text", "json", "nul"} {
				code, stdout, stderr := run(t, "-format", format, c.dir)
				if code != ExitNotFound || stdout != "" {
					t.Errorf("-format %s: exit %d, stdout %q; want %d and nothing", format, code, stdout, ExitNotFound)
				}
				for _, want := range c.says {
					if !strings.Contains(stderr, want) {
						t.Errorf("-format %s: stderr %q does not say %q", format, stderr, want)
					}
				}
			}
		})
	}
}

func TestBadUsage(t *testing.T) {
	dir := writeRun(t, locate(), outdir.StatusComplete)
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{}, "want one DIR, got 0"},
		{[]string{dir, dir}, "want one DIR, got 2"},
		{[]string{"-format", "csv", dir}, `-format "csv": want text, json or nul`},
		{[]string{"-margin", "0.5", dir}, "-margin 0.5: want a factor of 1 or more"},
		{[]string{"-margin", "NaN", dir}, "-margin NaN"},
		{[]string{"-max-fraction", "1", dir}, "-max-fraction 1: want a fraction above 0 and below 1"},
		{[]string{"-max-fraction", "0", dir}, "-max-fraction 0"},
	} {
		code, stdout, stderr := run(t, c.args...)
		if code != ExitUsage || stdout != "" || !strings.Contains(stderr, c.says) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want %d and %q", c.args, code, stdout, stderr, ExitUsage, c.says)
		}
	}
	if code, _, stderr := run(t, "-h"); code != ExitOK || !strings.Contains(stderr, "-format nul") {
		t.Errorf("-h: exit %d, %q", code, stderr)
	}
}

// actions is each entry's first node and action.
func actions(p Plan) map[string]string {
	m := map[string]string{}
	for _, e := range p.Entries {
		m[strings.Join(e.Nodes, "-")] = e.Action
	}
	return m
}

func TestDecide(t *testing.T) {
	inconclusive := locate(nodeSuspect("node2", 0.076, "pairs"))
	inconclusive.Steps[1].Inconclusive = "the spread is too wide: healthy units spread to 4.52x the median, beyond the threshold 0.50x"
	inconclusive.Steps[1].Spread = 4.52
	noSuspect := locate()
	noSuspect.Steps[0].Inconclusive = "too few units: 2, against a median of themselves (at least 3)"
	link := report.SummaryLocateSuspect{Kind: "link", Nodes: []string{"node1", "node2"}, Ranks: []int{}, Problem: "bandwidth",
		By: []string{"pairs"}, Figure: 0.01, SlowRepeats: 3, Repeats: 3}
	flapping := locate()
	flapping.Intermittent = []report.SummaryLocateSuspect{nodeSuspect("node4", 0.2, "pairs")}
	old := locate(nodeSuspect("node3", 0.003)) // no by[]: a summary of schema 2
	// node3 could not finish a probe within its deadline: drained, though
	// its step could not judge the others; a link or a rank that could
	// not is said.
	stuck := func(nodes []string, ranks ...int) report.SummaryLocateSuspect {
		s := nodeSuspect(nodes[0], 0.00008, "pairs")
		s.Kind, s.Nodes, s.Ranks = KindUnresponsive, nodes, append([]int{}, ranks...)
		return s
	}
	unresponsive := locate(stuck([]string{"node3"}), stuck([]string{"node1", "node2"}), stuck([]string{"node4"}, 7), nodeSuspect("node2", 0.2, "pairs"))
	unresponsive.Steps[1].Inconclusive = "the spread is too wide: healthy units spread to 4.52x the median"
	for _, c := range []struct {
		name    string
		l       report.SummaryLocate
		verdict string
		want    map[string]string // node(s) -> action
		why     string            // in the kept one's why, or the plan's
	}{
		{"one node far below is drained", locate(nodeSuspect("node3", 0.0029, "pairs")), VerdictDrain,
			map[string]string{"node3": ActionDrain}, "beyond the healthy spread"},
		// The masking case: node4 is a suspect, but within the margin;
		// it neither is drained nor makes node3 look like the fabric.
		{"a marginal second node masks nothing", locate(nodeSuspect("node3", 0.0029, "pairs"), nodeSuspect("node4", 0.2, "pairs")),
			VerdictDrain, map[string]string{"node3": ActionDrain, "node4": ActionKeep}, "marginal: 3.85x beyond the healthy spread (1.3x) of step pairs, less than the margin 4x"},
		{"two far below of four is the fabric", locate(nodeSuspect("node3", 0.0029, "pairs"), nodeSuspect("node4", 0.003, "inside")),
			VerdictFabric, map[string]string{"node3": ActionKeep, "node4": ActionKeep}, "the fabric"},
		{"an inconclusive step drains nothing", inconclusive, VerdictInconclusive, map[string]string{"node2": ActionKeep},
			"step pairs, which named it, was inconclusive"},
		{"inconclusive with no suspect", noSuspect, VerdictInconclusive, map[string]string{}, "step inside: too few units"},
		{"a link is said", locate(link), VerdictSuspects, map[string]string{"node1-node2": ActionKeep}, "a link is said, not drained"},
		{"intermittent is said", flapping, VerdictHealthy, map[string]string{"node4": ActionKeep}, "intermittent: slow in 3 of 3 repeats"},
		{"no step named it", old, VerdictSuspects, map[string]string{"node3": ActionKeep}, "does not say which step named it"},
		{"healthy", locate(), VerdictHealthy, map[string]string{}, "no suspect, and every step could judge"},
		{"an unresponsive node is drained whatever the spread", unresponsive, VerdictDrain,
			map[string]string{"node3": ActionDrain, "node1-node2": ActionKeep, "node4": ActionKeep, "node2": ActionKeep},
			"an unresponsive link or rank is said, not drained"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := Decide(c.l, 4, DefaultRule)
			if p.Verdict != c.verdict || !equalMaps(actions(p), c.want) {
				t.Errorf("verdict %s, actions %v; want %s, %v (%+v)", p.Verdict, actions(p), c.verdict, c.want, p)
			}
			said := strings.Contains(p.Why, c.why) || slices.ContainsFunc(p.Entries, func(e Entry) bool { return strings.Contains(e.Why, c.why) })
			if !said {
				t.Errorf("nothing says %q: %+v", c.why, p)
			}
		})
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// The margin is what decides: a node at 0.1x with a spread of 2x is 5
// spreads below (drained at margin 4), but not 6 (kept at margin 6).
func TestTheMarginDecides(t *testing.T) {
	l := locate(nodeSuspect("node2", 0.1, "inside"))
	l.Steps[0].Spread = 2
	if a := actions(Decide(l, 4, Rule{Margin: 4, MaxFraction: 0.25}))["node2"]; a != ActionDrain {
		t.Errorf("margin 4: %s, want drain", a)
	}
	if a := actions(Decide(l, 4, Rule{Margin: 6, MaxFraction: 0.25}))["node2"]; a != ActionKeep {
		t.Errorf("margin 6: %s, want keep", a)
	}
	// Two of four far below: the fabric at a quarter, drained at a half.
	two := locate(nodeSuspect("node2", 0.01, "inside"), nodeSuspect("node3", 0.01, "inside"))
	if v := Decide(two, 4, Rule{Margin: 4, MaxFraction: 0.5}).Verdict; v != VerdictDrain {
		t.Errorf("2 of 4 at max fraction 0.5: %s, want drain", v)
	}
}

func TestShort(t *testing.T) {
	for _, c := range []struct {
		figure  float64
		problem string
		want    string
	}{
		{0.31, "bandwidth", "0.31x bw"},
		{0.069, "bandwidth", "0.07x bw"},
		{0.0029, "latency", "0.003x lat"},
		{0.00001, "bandwidth", "<0.001x bw"},
		{0.00001, "latency", "<0.001x lat"},
		{0, "bandwidth", "0x bw"},
		{0.5, "$(reboot)", "0.50x ?"},
	} {
		if got := Short(c.figure, c.problem); got != c.want {
			t.Errorf("Short(%v, %q) = %q, want %q", c.figure, c.problem, got, c.want)
		}
		// The job's reason, "rsag SHORT jID": sinfo -R's 20 columns show
		// the figure whole, and the space after it.
		if r := "rsag " + Short(c.figure, c.problem); len(r) > 19 {
			t.Errorf("the reason %q is %d columns before the job id: sinfo -R shows 20", r, len(r))
		}
	}
}

// crafted is a run whose suspects' strings hold what a shell or a
// terminal would act on: a newline, a space, `;`, `$( )`, ESC sequences,
// a NUL, a C1 control. Each is a node far below the others; only node3,
// the one whose name is a host name, may be drained.
func crafted(t *testing.T) string {
	t.Helper()
	var sps []report.SummaryLocateSuspect
	for _, name := range []string{"node1\nnode2", "node1 node2", "node2;scontrol update NodeName=node1 State=DRAIN", "$(touch pwned)",
		"\x1b[2J\x1b]0;owned\x07node4", "node4\x00node1", "node4\u009b2J", "`id`", "node4,node1", "node3"} {
		sp := nodeSuspect(name, 0.003, "pairs")
		sp.Text = name + " (bandwidth 0.003x median)\r\x1b[1A\x1b[2KPASSED\n"
		sps = append(sps, sp)
	}
	forged := nodeSuspect("node2", 0.003, "pairs")
	forged.Kind, forged.Problem = "node\ndrain\tnode\tnode1", "bandwidth\x1b[31m"
	l := locate(append(sps, forged)...)
	return writeRun(t, l, outdir.StatusComplete)
}

// controls are the control characters in s other than those in allowed.
func controls(s, allowed string) []rune {
	var out []rune
	for _, r := range s {
		if (r < 0x20 || (r >= 0x7f && r <= 0x9f)) && !strings.ContainsRune(allowed, r) {
			out = append(out, r)
		}
	}
	return out
}

func TestCraftedTextForgesNothing(t *testing.T) {
	dir := crafted(t)
	const entries = 11
	t.Run("text", func(t *testing.T) {
		code, stdout, stderr := run(t, dir)
		if code != ExitOK {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		if c := controls(stdout, "\n\t"); len(c) > 0 {
			t.Errorf("raw control characters %q in:\n%s", c, stdout)
		}
		lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
		if len(lines) != entries+1 {
			t.Fatalf("%d lines, want %d (one a suspect, and the verdict):\n%s", len(lines), entries+1, stdout)
		}
		var drained []string
		for _, l := range lines[:entries] {
			f := strings.Split(l, "\t")
			if len(f) != 5 || (f[0] != ActionDrain && f[0] != ActionKeep) {
				t.Errorf("the line %q is not ACTION KIND NODES FIGURE WHY", l)
				continue
			}
			if f[0] == ActionDrain {
				drained = append(drained, f[2])
			}
		}
		if !slices.Equal(drained, []string{"node3"}) || lines[entries] != "verdict: drain: 1 of 4 nodes far below the healthy spread: node3" {
			t.Errorf("drained %q, verdict %q; want node3 alone", drained, lines[entries])
		}
		for _, want := range []string{`"node1 node2"`, `"node1\nnode2"`, `"$(touch pwned)"`, `"node4\x00node1"`, `\x1b[2J`} {
			if !strings.Contains(stdout, want) {
				t.Errorf("no %s in:\n%s", want, stdout)
			}
		}
	})
	t.Run("json", func(t *testing.T) {
		code, stdout, stderr := run(t, "-format", "json", dir)
		if code != ExitOK {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		if c := controls(stdout, "\n"); len(c) > 0 {
			t.Errorf("raw control characters %q in:\n%s", c, stdout)
		}
		var p Plan
		if err := json.Unmarshal([]byte(stdout), &p); err != nil {
			t.Fatal(err)
		}
		var drained []string
		names := map[string]bool{}
		for _, e := range p.Entries {
			if e.Action == ActionDrain {
				drained = append(drained, e.Nodes...)
			}
			names[e.Nodes[0]] = true
		}
		if p.Verdict != VerdictDrain || len(p.Entries) != entries || !slices.Equal(drained, []string{"node3"}) {
			t.Errorf("verdict %s, %d entries, drained %q; want drain, %d, node3 alone", p.Verdict, len(p.Entries), drained, entries)
		}
		// The names are data: each as the summary has it.
		for _, n := range []string{"node1\nnode2", "node4\x00node1", "node4\u009b2J"} {
			if !names[n] {
				t.Errorf("the name %q is not in the JSON as it is in the summary", n)
			}
		}
	})
	t.Run("nul", func(t *testing.T) {
		code, stdout, stderr := run(t, "-format", "nul", dir)
		if code != ExitOK {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		if c := controls(stdout, "\x00"); len(c) > 0 {
			t.Errorf("control characters %q besides the separators", c)
		}
		fields := strings.Split(strings.TrimSuffix(stdout, "\x00"), "\x00")
		if len(fields) != 6*(entries+1) {
			t.Fatalf("%d fields, want %d: 6 for the verdict and for each of %d suspects", len(fields), 6*(entries+1), entries)
		}
		if fields[0] != "verdict" || fields[1] != VerdictDrain {
			t.Errorf("the first record is %q", fields[:6])
		}
		var drained []string
		for i := 6; i < len(fields); i += 6 {
			if fields[i] == ActionDrain {
				drained = append(drained, fields[i+2])
				if fields[i+3] != "0.003x bw" {
					t.Errorf("the drained node's short figure is %q", fields[i+3])
				}
			}
		}
		if !slices.Equal(drained, []string{"node3"}) {
			t.Errorf("drained %q, want node3 alone", drained)
		}
	})
}

// An unresponsive node's drain reason says so, in the columns sinfo -R has.
func TestAnUnresponsiveNodesReason(t *testing.T) {
	s := nodeSuspect("node3", 0.00008, "pairs")
	s.Kind = KindUnresponsive
	p := Decide(locate(s), 4, DefaultRule)
	if len(p.Entries) != 1 || p.Entries[0].Action != ActionDrain || p.Entries[0].Short != "unresp bw" {
		t.Errorf("%+v, want node3 drained with the short reason \"unresp bw\"", p.Entries)
	}
}
