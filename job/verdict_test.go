package job

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"rsag/report"
)

// The verdict line says PASSED or FAILED first, what held or failed, and
// where the results are, in at most 120 columns however long the reason
// or the path.
func TestVerdictLine(t *testing.T) {
	sum := &report.Summary{Contracts: make([]report.SummaryContract, 5), Timing: make([]report.TimingStat, 24),
		Memory: make([]report.SummaryMemory, 5)}
	long := errors.New("timing check failed on rank(s) [1]: " + strings.Repeat("element 0 is 3.0000002, want 3; ", 20))
	deep := "/tmp/" + strings.Repeat("d", 150) + "/out"
	for _, c := range []struct {
		code      int
		err       error
		sum       *report.Summary
		dir, want string
	}{
		{ExitOK, nil, sum, "results/20261202-184512-smoke",
			"rsag: PASSED: 5 contracts held, 24 cases timed, 5 memory modes measured; results in results/20261202-184512-smoke"},
		{ExitFailed, errors.New("bus bandwidth below the gate on rank(s) [0]"), nil, "r",
			"rsag: FAILED (exit 1): bus bandwidth below the gate on rank(s) [0]; results in r"},
		{ExitBadArgs, errors.New("timeout_s: 0 is not a deadline\nmore"), nil, "",
			"rsag: FAILED (exit 2): timeout_s: 0 is not a deadline; nothing was written"},
		{ExitFailed, long, sum, "results/x", "rsag: FAILED (exit 1): timing check failed on rank(s) [1]: element 0 is 3.0000002"},
		{ExitFailed, long, sum, deep, "rsag: FAILED (exit 1): timing check failed o...; results in ..."},
		{ExitOK, nil, sum, deep, "rsag: PASSED: 5 contracts held, 24 ...; results in ..."},
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
