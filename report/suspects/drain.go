package suspects

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"rsag/internal/termsafe"
	"rsag/report"
)

// The plan's verdicts, in a word: what a health job does with the run.
const (
	VerdictDrain        = "drain"        // some node is far below the healthy spread: drain it
	VerdictSuspects     = "suspects"     // suspects, none of them a node to drain (a link, a rank, a marginal node)
	VerdictFabric       = "fabric"       // too many nodes far below: the fabric, not a node; nothing drained
	VerdictInconclusive = "inconclusive" // nothing drained, because a step could not judge
	VerdictHealthy      = "healthy"      // no suspect, and every step could judge
)

// KindUnresponsive is the kind of a suspect that could not finish a probe
// within its deadline (phase.SuspectUnresponsive, which report/suspects
// may not import): a node of them is drained on that alone.
const KindUnresponsive = "unresponsive"

// The two actions on a suspect.
const (
	ActionDrain = "drain"
	ActionKeep  = "keep"
)

// Rule is what a drain must pass. A node suspect is drained when its
// figure lies Margin times further below the median than the step's
// healthiest-but-slowest unit (figure < 1 / (Margin × spread)), its step
// could judge, and the nodes that pass are not more than MaxFraction of
// the run's nodes (then the fabric is the likely cause: nothing drained).
type Rule struct {
	Margin      float64
	MaxFraction float64
}

// DefaultRule: a node 4 spreads below, and at most a quarter of the nodes.
// On the local 4-node Slurm a healthy node was named at 0.076x with a
// spread of 4.52x (2.9 spreads), a 10 Mbit/s node at 0.0029x with a spread
// under 2x (over 100).
var DefaultRule = Rule{Margin: 4, MaxFraction: 0.25}

// Plan is what a health job does with one complete run.
type Plan struct {
	Verdict string  `json:"verdict"`
	Why     string  `json:"why"`
	Nodes   int     `json:"nodes"` // the run's nodes, that MaxFraction is of
	Rule    Rule    `json:"-"`
	Entries []Entry `json:"suspects"`
}

// Entry is one suspect (or intermittent unit) and what is done with it.
type Entry struct {
	Action       string   `json:"action"` // drain or keep
	Kind         string   `json:"kind"`   // node, link, rank, rank-link
	Nodes        []string `json:"nodes"`
	Ranks        []int    `json:"ranks"`
	Problem      string   `json:"problem"`
	Figure       float64  `json:"figure"`
	Spread       float64  `json:"spread"` // the widest healthy spread of the steps that named it; 0 unknown
	Intermittent bool     `json:"intermittent"`
	FigureText   string   `json:"figure_text"` // "bandwidth 0.31x median"
	Short        string   `json:"short"`       // "0.003x bw": the figure for a drain reason of 20 columns
	Why          string   `json:"why"`
	Text         string   `json:"text"`
}

// hostName is what a node name must look like to be drained: a host name
// (RFC 1123 letters, digits, dots, hyphens; underscores, which some sites
// use). A name with a space, a newline or `;` is kept, never passed on.
var hostName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,252}$`)

// Decide turns a complete run's locate section into a plan under rule.
func Decide(l report.SummaryLocate, nodes int, rule Rule) Plan {
	p := Plan{Nodes: nodes, Rule: rule, Entries: []Entry{}}
	if p.Nodes <= 0 {
		p.Nodes = len(l.Nodes)
	}
	steps := map[string]report.SummaryLocateStep{}
	var unsure []string // the ran steps that could not judge, with why
	for _, s := range l.Steps {
		steps[s.Name] = s
		if s.Ran && s.Inconclusive != "" {
			unsure = append(unsure, fmt.Sprintf("step %s: %s", s.Name, s.Inconclusive))
		}
	}
	for _, sp := range l.Suspects {
		e := entry(sp, false, steps)
		e.Why = keepWhy(sp, steps, rule)
		switch {
		case e.Why == "" && sp.Kind == KindUnresponsive:
			e.Action = ActionDrain
			e.Why = "unresponsive: it could not finish a probe within the deadline, whatever the others' spread"
		case e.Why == "":
			e.Action = ActionDrain
			e.Why = fmt.Sprintf("%s, more than the margin %gx", beyond(sp, e.Spread), rule.Margin)
		}
		e.Why = termsafe.String(e.Why)
		p.Entries = append(p.Entries, e)
	}
	for _, sp := range l.Intermittent {
		e := entry(sp, true, steps)
		e.Why = fmt.Sprintf("intermittent: slow in %d of %d repeats; one run cannot drain it (the history's per-node counts can)",
			sp.SlowRepeats, sp.Repeats)
		p.Entries = append(p.Entries, e)
	}
	var drain []string
	for _, e := range p.Entries {
		if e.Action == ActionDrain {
			drain = append(drain, e.Nodes[0])
		}
	}
	switch {
	case len(drain) > 0 && p.Nodes <= 0:
		p.Verdict, p.Why = VerdictSuspects, "the summary lists no nodes: the share of nodes far below cannot be told; nothing drained"
		keepAll(&p, "the summary lists no nodes")
	case len(drain) > 0 && float64(len(drain)) > rule.MaxFraction*float64(p.Nodes):
		p.Verdict = VerdictFabric
		p.Why = fmt.Sprintf("%d of %d nodes (%s) are far below the others, more than the fraction %g: "+
			"a switch, a cable or a setting they share", len(drain), p.Nodes, strings.Join(drain, " "), rule.MaxFraction)
		keepAll(&p, "the fabric, not a node")
	case len(drain) > 0:
		p.Verdict, p.Why = VerdictDrain, fmt.Sprintf("%d of %d nodes far below the healthy spread: %s", len(drain), p.Nodes, strings.Join(drain, " "))
		if len(unsure) > 0 {
			p.Why += "; others could not be judged (" + strings.Join(unsure, "; ") + ")"
		}
	case len(unsure) > 0:
		p.Verdict, p.Why = VerdictInconclusive, strings.Join(unsure, "; ")
	case len(l.Suspects) > 0:
		p.Verdict, p.Why = VerdictSuspects, "no suspect is a node far below the healthy spread: each is said, none drained"
	default:
		p.Verdict, p.Why = VerdictHealthy, "no suspect, and every step could judge"
		if len(l.Intermittent) > 0 {
			p.Why = fmt.Sprintf("no suspect; %d intermittent, not drained", len(l.Intermittent))
		}
	}
	p.Why = termsafe.String(p.Why)
	return p
}

// keepAll keeps every suspect the plan drained, saying why first.
func keepAll(p *Plan, why string) {
	for i := range p.Entries {
		if p.Entries[i].Action == ActionDrain {
			p.Entries[i].Action, p.Entries[i].Why = ActionKeep, why+": "+p.Entries[i].Why
		}
	}
}

// entry is sp as data, every string but the node names (checked by
// keepWhy) made safe for a terminal.
func entry(sp report.SummaryLocateSuspect, intermittent bool, steps map[string]report.SummaryLocateStep) Entry {
	e := Entry{Action: ActionKeep, Kind: termsafe.String(sp.Kind), Nodes: slices.Clone(sp.Nodes), Ranks: slices.Clone(sp.Ranks),
		Problem: termsafe.String(sp.Problem), Figure: sp.Figure, Intermittent: intermittent, FigureText: termsafe.String(sp.FigureText()), Short: Short(sp.Figure, sp.Problem),
		Text: termsafe.String(sp.Text)}
	if e.Nodes == nil {
		e.Nodes = []string{}
	}
	if e.Ranks == nil {
		e.Ranks = []int{}
	}
	if sp.Kind == KindUnresponsive {
		e.Short = "unresp " + problemShort(sp.Problem)
	}
	for _, b := range sp.By {
		e.Spread = math.Max(e.Spread, steps[b].Spread)
	}
	return e
}

// keepWhy says why a suspect is not drained; "" when it is.
func keepWhy(sp report.SummaryLocateSuspect, steps map[string]report.SummaryLocateStep, rule Rule) string {
	switch {
	case sp.Kind == KindUnresponsive && (len(sp.Nodes) != 1 || len(sp.Ranks) > 0):
		return "an unresponsive link or rank is said, not drained: only a node is"
	case sp.Kind != "node" && sp.Kind != KindUnresponsive || len(sp.Nodes) != 1:
		return fmt.Sprintf("a %s is said, not drained: only a node is", termsafe.String(sp.Kind))
	case !hostName.MatchString(sp.Nodes[0]):
		return fmt.Sprintf("its node name %s is not a host name", termsafe.String(strconv.Quote(sp.Nodes[0])))
	case sp.Kind == KindUnresponsive:
		// Its evidence is a fixed deadline, not the healthy units'
		// spread (docs/locate.md): neither an inconclusive step nor the
		// margin keeps it.
		return ""
	}
	if len(sp.By) == 0 {
		return "the summary does not say which step named it (steps[] and by[] are schema 3's): one cannot tell its step could judge"
	}
	spread := 1.0
	for _, b := range sp.By {
		st, ok := steps[b]
		switch {
		case !ok || !st.Ran:
			return fmt.Sprintf("it is named by step %s, which the summary does not list as run", termsafe.String(strconv.Quote(b)))
		case st.Inconclusive != "":
			return fmt.Sprintf("step %s, which named it, was inconclusive: it cannot be told from the noise", termsafe.String(b))
		}
		spread = math.Max(spread, st.Spread)
	}
	if !(sp.Figure >= 0) || math.IsInf(sp.Figure, 0) || sp.Figure >= 1 {
		return fmt.Sprintf("its figure %v is not a figure below the median", sp.Figure)
	}
	if sp.Figure*spread*rule.Margin >= 1 {
		return fmt.Sprintf("marginal: %s, less than the margin %gx", beyond(sp, spread), rule.Margin)
	}
	return ""
}

// beyond is how far sp lies beyond the healthy spread: "265x beyond the
// healthy spread (1.3x) of step pairs".
func beyond(sp report.SummaryLocateSuspect, spread float64) string {
	spread = math.Max(spread, 1)
	return fmt.Sprintf("%.3gx beyond the healthy spread (%.3gx) of step %s", 1/(sp.Figure*spread), spread, strings.Join(sp.By, ", "))
}

// Short is a figure and problem in at most 11 columns, for a drain reason
// ("rsag SHORT jID") whose figure sinfo -R's 20 columns show whole: "0.31x
// bw", "0.003x lat", "<0.001x bw".
// Built from the number and a known word only: nothing of the file's text.
func Short(figure float64, problem string) string {
	f := "?x"
	switch {
	case !(figure >= 0) || math.IsInf(figure, 0):
	case figure == 0:
		f = "0x"
	case figure < 0.001:
		f = "<0.001x"
	case figure < 0.1:
		f = fmt.Sprintf("%.1g", figure) + "x"
		if strings.Contains(f, "e") {
			f = "<0.001x"
		}
	default:
		f = fmt.Sprintf("%.2fx", figure)
	}
	return f + " " + problemShort(problem)
}

// problemShort is a problem in a word a drain reason has room for; "?" for
// one rsag does not write.
func problemShort(problem string) string {
	if p, ok := map[string]string{"bandwidth": "bw", "latency": "lat"}[problem]; ok {
		return p
	}
	return "?"
}
