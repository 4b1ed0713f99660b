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
// through Main, passing or not: PASSED, INCONCLUSIVE or FAILED, what held,
// could not judge or failed (from the run's list of verdicts), and where
// the results are. It is the run's last line, once
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

// checksGate fails the run, on every rank alike, when a check of the
// run's list of verdicts failed that no phase's own error ended the run
// for (a phase with a table of its own marks its failed rows and goes
// on): the exit status says what the list says. A suspect is a finding,
// left to locate.fail_on_suspect (suspectGate).
func (s *session) checksGate(sum *report.Summary) error {
	var err error
	if failed := failedChecks(sum); len(failed) > 0 {
		err = errors.New(strings.Join(failed, "; "))
	}
	return s.agree(err, ExitFailed, "a check failed")
}

// failedChecks are the failed checks of sum's list, suspects and the
// run's own status apart: "echo rank 1: failed: rank=1 held=false".
func failedChecks(sum *report.Summary) []string {
	if sum == nil {
		return nil
	}
	var failed []string
	for _, p := range report.VerdictsOf(*sum).Phases {
		for _, c := range p.Checks {
			if p.Phase != report.RunPhase && c.Outcome == report.Failed && c.Kind != report.KindSuspect {
				failed = append(failed, p.Phase+" "+c.Line())
			}
		}
	}
	return failed
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
	var word, what string
	switch {
	case code == ExitSuspects:
		word, what = "SUSPECTS FOUND (exit 4)", firstLine(err)
	case code != ExitOK:
		word, what = fmt.Sprintf("FAILED (exit %d)", code), firstLine(err)
	default:
		word, what = passedText(sum)
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

// passedText is the word and the words of a run that exits 0, from its
// list of verdicts: PASSED when every check held; INCONCLUSIVE, first
// naming what could not judge and why, when some check could not; each
// phase's checks in a few words after.
func passedText(sum *report.Summary) (word, what string) {
	if sum == nil {
		return "PASSED", "every check held"
	}
	v := report.VerdictsIn(*sum)
	var first, parts []string
	for _, p := range v.Phases {
		if p.Phase == report.RunPhase {
			continue
		}
		if report.Worst(p.Checks) == report.Inconclusive {
			suspects := 0
			for _, c := range p.Checks {
				if c.Kind == report.KindSuspect && c.Outcome == report.Failed {
					suspects++
				}
			}
			if suspects > 0 { // named, beside what it could not judge
				first = append(first, fmt.Sprintf("%s named %d suspect(s) (see above)", p.Phase, suspects))
			}
			for _, c := range p.Checks {
				if c.Outcome == report.Inconclusive {
					first = append(first, p.Phase+" could not judge: "+c.Line())
					break
				}
			}
			continue
		}
		t := p.Short()
		if len(v.Findings()) > 0 && strings.Contains(t, "suspect") {
			t += " (see above)"
		}
		parts = append(parts, t)
	}
	switch v.Outcome {
	case report.Held:
		word = "PASSED"
	case report.Inconclusive:
		word = "INCONCLUSIVE"
	case report.NotRun:
		word = "INCOMPLETE"
	default:
		word = "CHECKS FAILED"
	}
	what = strings.Join(parts, ", ")
	if len(first) > 0 {
		what = strings.Join(first, "; ") + "; " + what
	}
	if what == "" {
		what = "every check held"
	}
	return word, strings.TrimSuffix(what, "; ")
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
