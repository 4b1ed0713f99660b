package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"rsag/coll"
	"rsag/config"
	"rsag/internal/fold"
	"rsag/internal/testkit/inmem"
	"rsag/outdir"
)

// What rsag says on stderr fits a terminal (issue 57): a refusal that
// names a long path, the NCCL backend's refusal on a node without a GPU
// and the watchdog's hang line fold at fold.Width columns, each
// continuation indented by two, a path longer than the width whole on a
// line of its own; joined again, the message is the one line that
// run.json's reason holds, word for word. On ranks of this process.
func TestStderrFoldsAtTheTerminalWidth(t *testing.T) {
	t.Parallel()
	// One word wider than the terminal: a path stays whole.
	long := filepath.Join(t.TempDir(), strings.Repeat("a-directory-with-a-long-name-", 5), "no-such.toml")
	_, readErr := config.ReadFile(long)
	cases := []struct {
		name string
		run  func(t *testing.T, dir string) result
		// said is the message (the error rank 0 says once), or, where it
		// depends on the machine, a part of it; reason: run.json holds the
		// whole message.
		said   string
		whole  bool
		reason bool
	}{
		{"a refusal naming a long path", func(t *testing.T, dir string) result {
			return inprocMPI(t, 2, time.Minute, "-config", long, "-output-dir", dir)
		}, fmt.Sprintf("rsag: cannot read the config: %v (give an existing TOML file with -config, e.g. configs/smoke.toml)", readErr), true, false},
		{"the NCCL refusal", func(t *testing.T, dir string) result {
			return inprocMPI(t, 2, time.Minute, "-config", "../configs/smoke.toml", "-backend", "nccl", "-output-dir", dir)
		}, "; run on a GPU node (rank(s) [0 1]); fix that, or use -backend mpi", false, false},
		{"the watchdog's hang line", func(t *testing.T, dir string) result {
			// Rank 1 sleeps in its 3rd 4096-byte AllReduce for longer
			// than the watchdog waits.
			calls := 0
			slow := &inmem.Slow{Rank: 1, Delay: func(c string, bytes int) time.Duration {
				if c == coll.AllReduce.Name && bytes == 4096 {
					if calls++; calls == 3 {
						return 20 * time.Second
					}
				}
				return 0
			}}
			return inprocWith(t, 2, inmem.Faults{Slow: slow}, time.Minute, append([]string{"-output-dir", dir,
				"-set", "timeout_s=1.5"}, longTiming...)...)
		}, "did not finish within 1.5s (waited ", false, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "out")
			r := c.run(t, dir)
			if r.code == 0 {
				t.Fatalf("exit 0\nstderr:\n%s", r.rawStderr)
			}
			checkStderrFits(t, r.rawStderr)
			var said []string
			for _, l := range strings.Split(r.stderr, "\n") {
				if strings.Contains(l, c.said) {
					said = append(said, l)
				}
			}
			if len(said) != 1 || !strings.HasPrefix(said[0], "rsag: ") {
				t.Fatalf("want one line saying %q, got %d:\n%s", c.said, len(said), r.rawStderr)
			}
			if c.whole && said[0] != c.said {
				t.Errorf("stderr says, unfolded:\n%s\nwant the error:\n%s", said[0], c.said)
			}
			// The message was folded, into lines that hold its words in
			// order, and nothing but them.
			folded := fold.Line(said[0], fold.Width)
			if !strings.Contains(folded, "\n  ") || !strings.Contains(r.rawStderr, folded+"\n") {
				t.Errorf("the message is not printed folded:\n%s\nwant, among its lines:\n%s", r.rawStderr, folded)
			}
			if strings.Join(strings.Fields(folded), " ") != strings.Join(strings.Fields(said[0]), " ") {
				t.Errorf("folding changed the words:\n%s", folded)
			}
			run, err := outdir.ReadRecord(dir)
			switch {
			case !c.reason:
				if err == nil {
					t.Errorf("a refusal left %s: %+v", outdir.RunFile, run)
				}
			case err != nil:
				t.Errorf("%s: %v", outdir.RunFile, err)
			case run.Reason != strings.TrimPrefix(said[0], "rsag: "):
				t.Errorf("stderr says, unfolded:\n%s\n%s's reason:\n%s", said[0], outdir.RunFile, run.Reason)
			}
		})
	}
}

// checkStderrFits fails on a line of raw wider than fold.Width that is not
// one word alone (a path), and on a continuation that is not indented by
// two under the line it continues.
func checkStderrFits(t *testing.T, raw string) {
	t.Helper()
	for _, l := range strings.Split(raw, "\n") {
		if n := utf8.RuneCountInString(l); n > fold.Width && strings.Contains(strings.TrimLeft(l, " "), " ") {
			t.Errorf("a line of %d columns, above %d:\n%s", n, fold.Width, l)
		}
	}
}
