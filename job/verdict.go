package job

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"rsag/outdir"
	"rsag/report"
)

// verdictWidth is the most columns the verdict line takes: a terminal's
// width, so that the last line of a run is whole on screen.
const verdictWidth = 120

// printVerdict prints, on rank 0, the line that ends every run that ends
// through Main, passing or not: PASSED or FAILED, what held or what
// failed, and where the results are. It is the run's last line, once
// run.json is final. (A run that the watchdog or a signal ends gets its
// verdict from printEndedVerdict.)
func (s *session) printVerdict(st *state, code int, err error) {
	if s.comm.Rank() != 0 {
		return
	}
	dir := ""
	if st.log.status() != "" {
		dir = s.opts.OutputDir
	}
	s.printf("%s\n", verdictLine(code, err, st.sum, dir))
}

// printEndedVerdict is printVerdict for a run that the watchdog or a
// signal ends (watchdog.Ender), from its goroutine: msg is what ended it.
func (s *session) printEndedVerdict(code int, msg string) {
	dir := ""
	if d := s.noteDir.Load(); d != nil {
		if _, err := os.Lstat(filepath.Join(*d, outdir.RunFile)); err == nil {
			dir = *d
		}
	}
	s.printf("%s\n", verdictLine(code, errors.New(msg), nil, dir))
}

// verdictLine is the verdict of a run that ended with code and err (nil
// when it passed), with sum when it got that far, and its results in dir
// ("": nothing was written). The reason, then the path's start, is cut
// to fit verdictWidth: the whole reason is said above.
func verdictLine(code int, err error, sum *report.Summary, dir string) string {
	word, what := "PASSED", heldText(sum)
	switch {
	case code == ExitSuspects:
		word, what = "SUSPECTS FOUND (exit 4)", firstLine(err)
	case code != ExitOK:
		word, what = fmt.Sprintf("FAILED (exit %d)", code), firstLine(err)
	}
	head, tail := "rsag: "+word+": ", "; nothing was written"
	if dir != "" {
		tail = "; results in " + dir
	}
	room := verdictWidth - utf8.RuneCountInString(head) - utf8.RuneCountInString(tail)
	if room < 24 { // a long path: the reason keeps 24 columns, the path loses its start
		room = min(24, utf8.RuneCountInString(what))
		tail = "; results in " + cutStart(dir, verdictWidth-utf8.RuneCountInString(head)-room-len("; results in "))
	}
	return head + cutEnd(what, room) + tail
}

// heldText says what a passing run held and measured.
func heldText(sum *report.Summary) string {
	if sum == nil {
		return "every check held"
	}
	var parts []string
	if n := len(sum.Contracts); n > 0 {
		parts = append(parts, fmt.Sprintf("%d contracts held", n))
	}
	if n := len(sum.Timing); n > 0 {
		parts = append(parts, fmt.Sprintf("%d cases timed", n))
	}
	if n := len(sum.Memory); n > 0 {
		parts = append(parts, fmt.Sprintf("%d memory modes measured", n))
	}
	if n := len(sum.Numerics); n > 0 {
		parts = append(parts, fmt.Sprintf("%d numerics cases", n))
	}
	if sum.Soak != nil {
		parts = append(parts, fmt.Sprintf("%d soak iterations held", sum.Soak.Iterations))
	}
	if sum.Locate != nil {
		if n := len(report.SuspectTexts(sum.Locate)); n > 0 {
			parts = append(parts, fmt.Sprintf("locate named %d suspects (see above)", n))
		} else {
			parts = append(parts, "locate named no suspect")
		}
	}
	for _, p := range sum.Phases {
		if t := p.Table; t != nil && t.Checks {
			parts = append(parts, fmt.Sprintf("%s: %d rows held", p.Name, len(t.Rows)-len(t.Failed)))
		}
	}
	if len(parts) == 0 {
		return "every check held"
	}
	return strings.Join(parts, ", ")
}

func firstLine(err error) string {
	if err == nil {
		return "the run failed"
	}
	line, _, _ := strings.Cut(err.Error(), "\n")
	return line
}

// cutEnd is s in at most n columns, its end cut to "...".
func cutEnd(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:max(n-3, 0)]) + "..."
}

// cutStart is s in at most n columns, its start cut to "...".
func cutStart(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return "..." + string(r[len(r)-max(n-3, 0):])
}
