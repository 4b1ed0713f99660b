package e2e

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"rsag/coll"
	"rsag/report"
)

// shortened is how each shipped CPU config runs here: cut where it is long
// (fewer cycles, sizes, repeats, seconds), keeping what shapes its tables
// (its modes, dimensions, phases, and a sweep's 128 cases of two sizes).
// A config missing here, and not NCCL's alone, fails the test.
var shortened = map[string][]string{
	"smoke.toml": {"-set", "timing.cycles=2"},
	"ch7.toml": {"-set", "required_ranks=2", "-set", "timing.sizes_bytes=[1024,65536,1048576]", "-set", "timing.cycles=2",
		"-set", "memory.payload_bytes=1048576"},
	"model-mpi.toml": {"-set", "timing.cycles=3", "-set", "timing.discard=1", "-set", "timing.max_bytes=\"256K\"",
		"-set", "numerics.sizes_bytes=[\"4K\",\"64K\"]"},
	"sweep-mpi.toml": {"-set", "timing.cycles=2", "-set", "timing.warmups=0", "-set", "numerics.sizes_bytes=[6720]"},
	"hierarchy.toml": {"-set", "timing.cycles=2"},
	"locate.toml":    {"-set", "locate.sizes_bytes=[\"8K\",\"64K\"]", "-set", "locate.repeats=1", "-set", "locate.iterations=2"},
	"soak.toml":      {"-set", "soak.duration_s=2"},
	"bench-imb.toml": {"-set", "timing.cycles=4", "-set", "timing.batch=10"},
	"sweep.toml":     nil, // NCCL's alone: float16, bfloat16, avg and graphs
}

// nccl are the shipped configs the MPI backend cannot run.
var nccl = map[string]bool{"sweep.toml": true}

// footnote is a line that explains others: "[3] ..." or "note: ...".
var footnote = regexp.MustCompile(`^(\[[0-9]+\] |note: )`)

// Every shipped CPU config, on ranks in this process (inproc: a table's
// shape is the run's logic, whatever the backend), prints no line wider than
// the terminal (120 columns), no footnote twice, and no more "no fit" rows
// than it has modes: a row or a note stands for the many cases it covers
// (sweep-mpi once printed 256 rows of "no fit: 2 sizes" and 128 copies of
// one note).
func TestEveryShippedConfigFitsTheTerminal(t *testing.T) {
	t.Parallel()
	configs, err := filepath.Glob("../configs/*.toml")
	if err != nil || len(configs) == 0 {
		t.Fatalf("no configs: %v", err)
	}
	for _, path := range configs {
		name := filepath.Base(path)
		args, ok := shortened[name]
		if nccl[name] {
			continue
		}
		if !ok {
			t.Errorf("%s: not in this test's list; add how to run it shortly, keeping its tables' shapes", name)
			continue
		}
		t.Run(strings.TrimSuffix(name, ".toml"), func(t *testing.T) {
			dir := t.TempDir()
			r := inproc(t, 2, 2*time.Minute, append([]string{"-config", path, "-backend", "mpi", "-output-dir", dir}, args...)...)
			if r.code != 0 {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
			}
			checkTerminal(t, r.stdout)
			checkStreamedMedians(t, r.stdout, completeSummary(t, filepath.Join(dir, report.SummaryFile)))
		})
	}
}

// checkTerminal fails on a line of out wider than report.TerminalWidth, a
// footnote said twice, and a "no fit" row repeated past one per mode.
func checkTerminal(t *testing.T, out string) {
	t.Helper()
	seen := map[string]bool{}
	noFit := 0
	for _, line := range strings.Split(out, "\n") {
		if n := utf8.RuneCountInString(line); n > report.TerminalWidth {
			t.Errorf("a line of %d columns:\n%s", n, line)
		}
		if footnote.MatchString(line) {
			text := line[strings.Index(line, " ")+1:]
			if seen[text] {
				t.Errorf("a footnote said twice: %s", line)
			}
			seen[text] = true
		}
		if strings.HasPrefix(line, "|") && strings.Contains(line, "no fit") {
			noFit++
		}
	}
	if noFit > 6 {
		t.Errorf("%d \"no fit\" rows; one row per mode stands for the cases that share it:\n%s", noFit, out)
	}
	if t.Failed() {
		t.Logf("stdout:\n%s", out)
	}
}

// checkStreamedMedians: the line streamed as a case ends gives every mode
// the median the Timings table and summary.json give it (the slowest
// rank's per cycle, over the kept cycles), not rank 0's own. Every case
// has its line when there are few; a sweep of many streams one per eighth
// of them, "[k/N]" first.
func checkStreamedMedians(t *testing.T, out string, s report.Summary) {
	t.Helper()
	numbered := regexp.MustCompile(`^\[[0-9]+/[0-9]+\] `)
	streamed := map[string]string{} // case -> its line, folded lines joined
	for _, l := range strings.Split(unfolded(out), "\n") {
		l = numbered.ReplaceAllString(l, "")
		if !strings.HasPrefix(l, "timing ") || !strings.Contains(l, ": ") {
			continue
		}
		k, rest, _ := strings.Cut(strings.TrimPrefix(l, "timing "), ": ")
		streamed[k] = " " + rest
	}
	cases := map[string]bool{}
	for _, st := range s.Timing {
		cases[st.Pair().String()] = true
	}
	if len(cases) > 0 && (len(streamed) == 0 || len(cases) <= 32 && len(streamed) != len(cases) || len(cases) > 32 && len(streamed) > 8) {
		t.Errorf("%d cases, %d streamed lines: want one a case up to 32 cases, 1 to 8 past", len(cases), len(streamed))
	}
	for _, st := range s.Timing {
		m, _ := coll.ModeOf(st.Mode)
		line, ok := streamed[st.Pair().String()]
		if want := " " + m.Short + " " + report.USText(st.MedianUS) + " "; ok && !strings.Contains(line, want) {
			t.Errorf("%s: the streamed line %q lacks the table's median %q", st.Case, line, want)
		}
	}
}

// unfolded is out with the terminal's folds undone: a continuation line
// (indented two columns past the line it continues) joined to it.
func unfolded(out string) string {
	lines := strings.Split(out, "\n")
	var b strings.Builder
	for i, l := range lines {
		if i > 0 {
			prev := lines[i-1]
			indent := len(prev) - len(strings.TrimLeft(prev, " "))
			if !strings.HasPrefix(prev, "|") && !strings.HasPrefix(prev, "+") && strings.HasPrefix(l, strings.Repeat(" ", indent+2)) &&
				utf8.RuneCountInString(prev) > report.TerminalWidth/2 {
				b.WriteString(" " + strings.TrimSpace(l))
				continue
			}
			b.WriteString("\n")
		}
		b.WriteString(l)
	}
	return b.String()
}
