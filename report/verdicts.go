package report

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// The run's one list of verdicts: every check of every phase, each held,
// failed, inconclusive or not run, with its message. It is computed once
// from the summary (VerdictsOf), kept in summary.json's "verdict", and
// every writer renders it: the terminal's verdict line, report.html's
// banner, junit.xml, rsag.prom and the exit status (job's checksGate). A
// writer names no phase; a phase reaches them all through its checks
// (RegisterChecks), or, for a phase with a table of its own, through its
// table's failed and inconclusive rows.

// Outcome is what one check found.
type Outcome string

// The outcomes. Inconclusive is not held: the check ran but
// could not judge (a spread too wide, too few repeats), and says why.
const (
	Held         Outcome = "held"
	Inconclusive Outcome = "inconclusive"
	NotRun       Outcome = "not run"
	Failed       Outcome = "failed"
)

// Outcomes are every outcome, in rsag.prom's and the docs' order.
var Outcomes = []Outcome{Held, Failed, Inconclusive, NotRun}

// The kinds of check: what a failure is, as junit.xml's failure type says
// it. A suspect is a finding about the cluster (a slow node, link or
// rank), not a failed proof: it fails the run only where the config asks
// (locate.fail_on_suspect).
const (
	KindRun      = "run"
	KindContract = "contract"
	KindCheck    = "check"
	KindGate     = "gate"
	KindSuspect  = "suspect"
	KindStep     = "step"
)

// Check is one row of the list: one check of one phase.
type Check struct {
	Name    string  `json:"check"`
	Outcome Outcome `json:"outcome"`
	Kind    string  `json:"kind"`
	Message string  `json:"message"`
}

// PhaseVerdict is one phase's checks and, in one line, what they say.
type PhaseVerdict struct {
	Phase string `json:"phase"`
	// Title names the phase in a banner line: "Contracts", a table's
	// title.
	Title   string  `json:"title"`
	Outcome Outcome `json:"outcome"`
	// Text is the phase's line: what held, or what failed and why.
	Text string `json:"text"`
	// Note is what the verdict line adds to the phase's words: what its
	// checks did not look at ("only the last samples checked"); "" for
	// nothing.
	Note   string  `json:"note,omitempty"`
	Checks []Check `json:"checks"`
}

// Verdicts is the run's list: the run's own status first, then each phase
// in the order it ran.
type Verdicts struct {
	// Outcome is the run's, over every phase but the suspects it found:
	// failed over not run over inconclusive over held.
	Outcome Outcome        `json:"outcome"`
	Phases  []PhaseVerdict `json:"phases"`
}

// RunPhase is the list's first entry: the run's own status.
const RunPhase = "run"

// Checker is a phase's checks over a summary. Has says whether the
// summary holds the phase's results (nil: whenever summary.json's phases
// list it); Checks are its checks, its Title and its line when every check
// held (Text; "" for the list's own words).
type Checker struct {
	Phase, Title string
	Has          func(s Summary) bool
	Checks       func(s Summary) PhaseVerdict
	// Table prints the phase's tables on the terminal (WriteTables); nil
	// for none, or a table of its own (PhaseTables prints it).
	Table func(w io.Writer, s Summary) error
}

var checkers []Checker

// RegisterChecks adds a phase's checks to the list; it is called from
// init (report's own sections here, any other phase through
// phase.Register). A phase with a table of its own needs none: its
// table's rows are its checks.
func RegisterChecks(c Checker) {
	if c.Phase == "" || c.Checks == nil {
		panic(fmt.Sprintf("report: checks of %q registered without a phase or checks", c.Phase))
	}
	if slices.ContainsFunc(checkers, func(d Checker) bool { return d.Phase == c.Phase }) {
		panic(fmt.Sprintf("report: checks of %q registered twice", c.Phase))
	}
	checkers = append(checkers, c)
}

func checkerOf(phase string) (Checker, bool) {
	i := slices.IndexFunc(checkers, func(c Checker) bool { return c.Phase == phase })
	if i < 0 {
		return Checker{}, false
	}
	return checkers[i], true
}

func (c Checker) has(s Summary) bool {
	if c.Has != nil {
		return c.Has(s)
	}
	return slices.ContainsFunc(s.Phases, func(p SummaryPhase) bool { return p.Name == c.Phase })
}

// VerdictsIn is the summary's list: its own when it has one (a run's,
// computed once), else VerdictsOf's.
func VerdictsIn(s Summary) Verdicts {
	if s.Verdict != nil {
		return *s.Verdict
	}
	return VerdictsOf(s)
}

// VerdictsOf computes the list from the summary: the run's status, then
// every phase that ran (summary.json's phases, in order, and any section
// an older summary holds without them), then each phase the config
// enables that has no results (not run). A phase this rsag has no checks
// for keeps the rows the summary's own list gave it.
func VerdictsOf(s Summary) Verdicts {
	v := Verdicts{Phases: []PhaseVerdict{runVerdict(s)}}
	var order []string
	for _, p := range s.Phases {
		if !slices.Contains(order, p.Name) {
			order = append(order, p.Name)
		}
	}
	for _, c := range checkers {
		if !slices.Contains(order, c.Phase) && c.Has != nil && c.Has(s) {
			order = append(order, c.Phase)
		}
	}
	for _, name := range order {
		if pv, ok := phaseVerdict(s, name); ok {
			v.Phases = append(v.Phases, pv)
		}
	}
	for _, c := range checkers {
		if slices.Contains(order, c.Phase) || !enabledIn(s, c.Phase) {
			continue
		}
		why := "enabled in the config, but summary.json has no results of it: the run stopped before it"
		if s.EndedEarly {
			why = "the run ended: " + orNone(s.Reason)
		}
		v.Phases = append(v.Phases, finish(PhaseVerdict{Phase: c.Phase, Title: c.Title, Checks: []Check{
			{Name: c.Phase, Outcome: NotRun, Kind: KindCheck, Message: why}}}))
	}
	v.Outcome = overall(v.Phases)
	return v
}

// phaseVerdict is the checks of the phase named: its checker's, its
// table's, or those the summary's list gave it; false when it has none.
func phaseVerdict(s Summary, name string) (PhaseVerdict, bool) {
	if c, ok := checkerOf(name); ok {
		if !c.has(s) {
			why := "the phase ran, but summary.json has no results of it"
			if s.EndedEarly {
				why = "the phase ran, but the run ended before its results were gathered: " + orNone(s.Reason)
			}
			return finish(PhaseVerdict{Phase: name, Title: c.Title, Checks: []Check{{Name: name, Outcome: NotRun, Kind: KindCheck,
				Message: why}}}), true
		}
		pv := c.Checks(s)
		pv.Phase, pv.Title = name, c.Title
		return finish(pv), true
	}
	i := slices.IndexFunc(s.Phases, func(p SummaryPhase) bool { return p.Name == name })
	if i >= 0 && s.Phases[i].Table != nil {
		if !s.Phases[i].Table.Checks {
			return PhaseVerdict{}, false
		}
		return finish(tableVerdict(name, *s.Phases[i].Table)), true
	}
	if s.Verdict != nil {
		for _, pv := range s.Verdict.Phases {
			if pv.Phase == name {
				return finish(pv), true
			}
		}
	}
	return PhaseVerdict{}, false
}

// enabledIn says whether the summary's config has [phase] enabled = true.
func enabledIn(s Summary, phase string) bool {
	cfg, _ := s.Config.(map[string]any)
	sec, _ := cfg[phase].(map[string]any)
	on, _ := sec["enabled"].(bool)
	return on
}

func runVerdict(s Summary) PhaseVerdict {
	c := Check{Name: "status", Outcome: Held, Kind: KindRun, Message: "the run complete: every file written"}
	if s.Status != Statuses[0] {
		c.Outcome, c.Message = Failed, fmt.Sprintf("the run %s: %s", s.Status, orNone(s.Reason))
	}
	return finish(PhaseVerdict{Phase: RunPhase, Title: "Run", Text: strings.TrimPrefix(c.Message, "the run "), Checks: []Check{c}})
}

func orNone(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// tableVerdict is a phase table's checks: one per row, failed or
// inconclusive where the phase marked it; a checked table without rows
// fails.
func tableVerdict(name string, t PhaseTable) PhaseVerdict {
	pv := PhaseVerdict{Phase: name, Title: t.Title}
	for i, r := range t.Rows {
		c := Check{Name: rowName(t, i), Outcome: Held, Kind: KindCheck, Message: "held"}
		var cells []string
		for j, v := range r {
			if j < len(t.Columns) {
				cells = append(cells, t.Columns[j]+"="+v)
			}
		}
		switch {
		case slices.Contains(t.Failed, i):
			c.Outcome, c.Message = Failed, "failed: "+strings.Join(cells, " ")
		case slices.Contains(t.Inconclusive, i):
			c.Outcome, c.Message = Inconclusive, "could not judge: "+strings.Join(cells, " ")
		}
		pv.Checks = append(pv.Checks, c)
	}
	if len(t.Rows) == 0 {
		pv.Checks = []Check{{Name: "rows", Outcome: Failed, Kind: KindCheck, Message: "the phase checks its rows, but wrote none"}}
	}
	if len(t.Failed) == 0 && len(t.Inconclusive) == 0 && len(t.Rows) > 0 {
		pv.Text = fmt.Sprintf("all %d rows held (phase %s)", len(t.Rows), name)
	}
	return pv
}

// rowName names a table's row by its first column: "rank 0", "row 3"
// when it has none.
func rowName(t PhaseTable, i int) string {
	if len(t.Columns) > 0 && len(t.Rows[i]) > 0 {
		return t.Columns[0] + " " + t.Rows[i][0]
	}
	return fmt.Sprintf("row %d", i)
}

// finish gives a phase its outcome, and its line where the checker gave
// none, from its checks: the worst of them (a step that did not run
// counts only when nothing ran).
func finish(pv PhaseVerdict) PhaseVerdict {
	if pv.Title == "" {
		pv.Title = TitleOf(pv.Phase)
	}
	pv.Outcome = worst(pv.Checks, false)
	if pv.Text != "" && worst(pv.Checks, true) == Held {
		return pv // the checker's own line: every check held, but for the suspects it names
	}
	pv.Text = lineOf(pv)
	return pv
}

// TitleOf is the title of the phase named: its checks' ("Timing
// results"), else its name capitalized.
func TitleOf(phase string) string {
	if c, ok := checkerOf(phase); ok && c.Title != "" {
		return c.Title
	}
	if phase == "" {
		return ""
	}
	return strings.ToUpper(phase[:1]) + phase[1:]
}

// Disabled are the phases with checks that the summary's config turns
// off ([phase] enabled = false), in the order they registered.
func Disabled(s Summary) []string {
	var out []string
	for _, c := range checkers {
		cfg, _ := s.Config.(map[string]any)
		sec, _ := cfg[c.Phase].(map[string]any)
		if on, ok := sec["enabled"].(bool); ok && !on {
			out = append(out, c.Phase)
		}
	}
	return out
}

// Worst is what a phase's checks come to, the suspects they name apart:
// failed, inconclusive, held; not run when none ran.
func Worst(cs []Check) Outcome { return worst(cs, true) }

// worst is the worst outcome among cs: failed, inconclusive, held; not
// run only when no check ran. Without findings, a suspect does not count.
func worst(cs []Check, skipFindings bool) Outcome {
	out, ran := Held, false
	for _, c := range cs {
		if skipFindings && c.Kind == KindSuspect && c.Outcome == Failed {
			ran = true
			continue
		}
		switch c.Outcome {
		case Failed:
			return Failed
		case Inconclusive:
			out, ran = Inconclusive, true
		case Held:
			ran = true
		}
	}
	if !ran && len(cs) > 0 {
		return NotRun
	}
	return out
}

// overall is the run's outcome over its phases, findings apart.
func overall(ps []PhaseVerdict) Outcome {
	rank := map[Outcome]int{Held: 0, Inconclusive: 1, NotRun: 2, Failed: 3}
	out := Held
	for _, p := range ps {
		if o := worst(p.Checks, true); rank[o] > rank[out] {
			out = o
		}
	}
	return out
}

// lineOf says in a line what a phase's checks found: the failed ones and
// why, else the inconclusive ones, else what did not run, else that all
// held.
func lineOf(pv PhaseVerdict) string {
	of := func(o Outcome) []Check {
		var out []Check
		for _, c := range pv.Checks {
			if c.Outcome == o {
				out = append(out, c)
			}
		}
		return out
	}
	list := func(cs []Check) string {
		var parts []string
		for i, c := range cs {
			if i == 5 {
				parts = append(parts, fmt.Sprintf("and %d more", len(cs)-5))
				break
			}
			parts = append(parts, c.Line())
		}
		return strings.Join(parts, "; ")
	}
	n := len(pv.Checks)
	if f := of(Failed); len(f) > 0 {
		return fmt.Sprintf("%d of %d failed: %s", len(f), n, list(f))
	}
	if i := of(Inconclusive); len(i) > 0 {
		return fmt.Sprintf("inconclusive: %s", list(i))
	}
	if pv.Outcome == NotRun {
		if n == 1 {
			return "not run: " + pv.Checks[0].Message
		}
		return "not run: " + list(pv.Checks)
	}
	if n == 1 {
		return pv.Checks[0].Message
	}
	return fmt.Sprintf("all %d held", n)
}

// Line is the check in a line: its message, after its name unless the
// message starts with it.
func (c Check) Line() string {
	if strings.HasPrefix(c.Message, c.Name) {
		return c.Message
	}
	return c.Name + ": " + c.Message
}

// Counts are how many of a phase's checks had each outcome.
func (p PhaseVerdict) Counts() map[Outcome]int {
	n := map[Outcome]int{}
	for _, c := range p.Checks {
		n[c.Outcome]++
	}
	return n
}

// Findings are the checks that name a suspect, in order.
func (v Verdicts) Findings() []Check {
	var out []Check
	for _, p := range v.Phases {
		for _, c := range p.Checks {
			if c.Kind == KindSuspect && c.Outcome == Failed {
				out = append(out, c)
			}
		}
	}
	return out
}

// Short is the phase in a few words, for the verdict line: "contracts
// 5/5 held", "locate inconclusive (2 of 6 checks)", "echo 1 of 2 failed",
// "locate 1 suspect", with its note.
func (p PhaseVerdict) Short() string {
	n := p.Counts()
	suspects := 0
	for _, c := range p.Checks {
		if c.Kind == KindSuspect && c.Outcome == Failed {
			suspects++
		}
	}
	var t string
	switch {
	case n[Failed] > suspects:
		t = fmt.Sprintf("%s %d of %d failed", p.Phase, n[Failed]-suspects, len(p.Checks))
	case suspects > 0:
		t = fmt.Sprintf("%s %s", p.Phase, plural(suspects, "suspect", "suspects"))
	case n[Inconclusive] > 0:
		t = fmt.Sprintf("%s inconclusive (%d of %d checks)", p.Phase, n[Inconclusive], len(p.Checks))
	case p.Outcome == NotRun:
		t = p.Phase + " not run"
	default:
		t = fmt.Sprintf("%s %d/%d held", p.Phase, n[Held], len(p.Checks))
	}
	if p.Note != "" {
		t += " (" + p.Note + ")"
	}
	return t
}

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}
