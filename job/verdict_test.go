package job

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"rsag/coll"
	"rsag/outdir"
	"rsag/report"
)

// The verdict line says PASSED or FAILED first, what held or failed, and
// where the results are, in at most 120 columns however long the reason
// or the path.
func TestVerdictLine(t *testing.T) {
	sum := &report.Summary{Status: outdir.StatusComplete, WorldSize: 2}
	for i := range 5 {
		sum.Contracts = append(sum.Contracts, report.SummaryContract{Name: fmt.Sprint("c", i), HeldOn: 2})
		sum.Memory = append(sum.Memory, report.SummaryMemory{Mode: fmt.Sprint("m", i), Correct: true})
	}
	for i := range 24 {
		sum.Timing = append(sum.Timing, report.TimingStat{Case: coll.Case{SizeBytes: int64(i)}, Correct: true})
	}
	long := errors.New("timing check failed on rank(s) [1]: " + strings.Repeat("element 0 is 3.0000002, want 3; ", 20))
	deep := "/tmp/" + strings.Repeat("d", 150) + "/out"
	for _, c := range []struct {
		code      int
		err       error
		sum       *report.Summary
		dir, want string
	}{
		{ExitOK, nil, sum, "results/20261202-184512-smoke",
			"rsag: PASSED: contracts 5/5 held, timing 24/24 held, memory 5/5 held; results in results/20261202-184512-smoke"},
		{ExitFailed, errors.New("bus bandwidth below the gate on rank(s) [0]"), nil, "r",
			"rsag: FAILED (exit 1): bus bandwidth below the gate on rank(s) [0]; results in r"},
		{ExitBadArgs, errors.New("timeout_s: 0 is not a deadline\nmore"), nil, "",
			"rsag: FAILED (exit 2): timeout_s: 0 is not a deadline; nothing was written"},
		{ExitFailed, long, sum, "results/x", "rsag: FAILED (exit 1): timing check failed on rank(s) [1]: element 0 is 3.0000002"},
		{ExitFailed, long, sum, deep, "rsag: FAILED (exit 1): timing check failed o...; results in ..."},
		{ExitOK, nil, sum, deep, "rsag: PASSED: contracts 5/5 held, t...; results in ..."},
	} {
		got := verdictLine(c.code, c.err, c.sum, c.dir)
		if !strings.HasPrefix(got, c.want) || utf8.RuneCountInString(got) > verdictWidth || strings.Contains(got, "\n") {
			t.Errorf("verdictLine(%d, %v): %q (%d columns); want it to start %q, in at most %d columns", c.code, c.err, got,
				utf8.RuneCountInString(got), c.want, verdictWidth)
		}
		if c.dir != "" && !strings.HasSuffix(got, c.dir[max(0, len(c.dir)-20):]) {
			t.Errorf("%q does not end with where its results are (%s)", got, c.dir)
		}
	}
}

// A run that exits 0 with a check that could not judge is INCONCLUSIVE,
// first saying what and why, never PASSED; a locate phase that named no
// suspect but could not judge is not "no suspect". Under timing.check =
// "last" the line says what was not checked.
func TestVerdictLineSaysInconclusive(t *testing.T) {
	sum := &report.Summary{Status: outdir.StatusComplete, WorldSize: 4,
		Contracts: []report.SummaryContract{{Name: "c", HeldOn: 4}},
		Timing:    []report.TimingStat{{Case: coll.Case{SizeBytes: 1}, Correct: true, Samples: 10, Ranks: 4, Unchecked: 36}},
		Locate: &report.SummaryLocate{Verdict: "inconclusive",
			Nodes: []report.SummaryLocateNode{{Host: "n1", Verdict: "inconclusive: the spread is too wide (pairs)"}},
			Steps: []report.SummaryLocateStep{{Title: "pairs", Ran: true, Inconclusive: "the spread is too wide: healthy units spread to 4.52x the median"}}}}
	got := verdictLine(ExitOK, nil, sum, "r")
	if want := "rsag: INCONCLUSIVE: locate could not judge: n1: the spread is too wide (pairs); contracts 1/1 held"; !strings.HasPrefix(got, want) {
		t.Errorf("verdict line %q does not start %q", got, want)
	}
	if strings.Contains(got, "PASSED") || strings.Contains(got, "no suspect") || utf8.RuneCountInString(got) > verdictWidth {
		t.Errorf("verdict line %q says PASSED or no suspect, or is wider than %d", got, verdictWidth)
	}
	// A suspect beside a step that could not judge: both are said.
	sum.Locate.Nodes = append(sum.Locate.Nodes, report.SummaryLocateNode{Host: "n2", Suspect: true, Verdict: "SUSPECT: bandwidth 0.3x median"})
	sum.Timing = nil
	if got := verdictLine(ExitOK, nil, sum, "r"); !strings.HasPrefix(got, "rsag: INCONCLUSIVE: locate named 1 suspect(s) (see above); locate could not judge: n1: ") {
		t.Errorf("a suspect beside an inconclusive step: %q", got)
	}
	sum.Timing = []report.TimingStat{{Case: coll.Case{SizeBytes: 1}, Correct: true, Samples: 10, Ranks: 4, Unchecked: 36}}
	sum.Locate = &report.SummaryLocate{Verdict: "healthy", Nodes: []report.SummaryLocateNode{{Host: "n1", Verdict: "healthy"}}}
	want := "rsag: PASSED: contracts 1/1 held, timing 1/1 held (only the last samples checked), locate"
	if got := verdictLine(ExitOK, nil, sum, "r"); !strings.HasPrefix(got, want) {
		t.Errorf("a healthy locate: %q", got)
	}
}

// A phase with a table of its own that marks a row failed fails the run
// (its exit status is the list's); a suspect does not, and neither does
// the run's own status, which is not final yet when the gate runs.
func TestFailedChecksEndTheRun(t *testing.T) {
	sum := &report.Summary{Status: "running", WorldSize: 2, Contracts: []report.SummaryContract{{Name: "c", HeldOn: 2}},
		Phases: []report.SummaryPhase{{Name: "contracts"}, {Name: "echo", Table: &report.PhaseTable{Phase: "echo", Title: "Echo",
			Columns: []string{"rank", "held"}, Rows: [][]string{{"0", "true"}, {"1", "false"}}, Checks: true, Failed: []int{1}}}},
		Locate: &report.SummaryLocate{Verdict: "suspects", Nodes: []report.SummaryLocateNode{{Host: "n3", Suspect: true}},
			Suspects: []report.SummaryLocateSuspect{{Kind: "node", Nodes: []string{"n3"}, Problem: "bandwidth", Figure: 0.3}}}}
	if got := failedChecks(sum); len(got) != 1 || got[0] != "echo rank 1: failed: rank=1 held=false" {
		t.Errorf("failed checks %q, want the echo row alone", got)
	}
	sum.Phases[1].Table.Failed = []int{}
	if got := failedChecks(sum); len(got) != 0 {
		t.Errorf("failed checks %q of a run whose only finding is a suspect", got)
	}
}
