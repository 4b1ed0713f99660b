// The page's verdict: its banner, and the line of each check behind it
// (contracts, timing, memory, numerics, soak, locate, the gate).

package page

import (
	"fmt"
	"strings"
	"time"

	"rsag/report"
)

func verdictOf(s report.Summary) verdict {
	list := report.VerdictsIn(s)
	v := verdict{Outcome: list.Outcome, Held: list.Outcome == report.Held, Reason: s.Reason}
	// One line per phase of the run's list of verdicts, then one per
	// phase the config turned off: the banner lists what a run checks
	// and what it did not.
	for _, p := range list.Phases {
		v.Checks = append(v.Checks, check{Name: p.Title, Text: p.Text, State: stateOf(p.Outcome)})
	}
	disabled := report.Disabled(s)
	for _, name := range disabled {
		v.Checks = append(v.Checks, check{Name: report.TitleOf(name), Text: fmt.Sprintf("not run: [%s] enabled = false in this run's config", name), State: "none"})
	}
	for _, c := range list.Findings() {
		v.Suspects = append(v.Suspects, findingText(c))
	}
	switch list.Outcome {
	case report.Held:
		v.Headline = "Held: AllReduce equals ReduceScatter + AllGather; every check passed"
		if len(disabled) > 0 {
			v.Headline = "Held: AllReduce equals ReduceScatter + AllGather; every check that ran passed"
		}
		if len(v.Suspects) > 0 {
			v.Headline = "Held: AllReduce equals ReduceScatter + AllGather; but the run found the collectives slow on " + strings.Join(v.Suspects, ", ")
		}
	case report.Inconclusive:
		v.Headline = "INCONCLUSIVE: " + strings.Join(phasesWith(list, report.Inconclusive), ", ") + " could not judge; no check failed"
	case report.NotRun:
		v.Headline = "NOT RUN: " + strings.Join(phasesWith(list, report.NotRun), ", ") +
			": enabled in the config, but summary.json has no results of them; no check failed"
	default:
		// The run's own line fails with any other: it is named only when
		// nothing else failed (a file not written, a signal).
		failed := phasesWith(list, report.Failed)
		if len(failed) > 1 && failed[0] == report.RunPhase {
			failed = failed[1:]
		} else if len(failed) == 1 && failed[0] == report.RunPhase {
			failed = []string{"the run did not complete"}
		}
		v.Headline = "FAILED: " + strings.Join(failed, ", ")
	}
	about := fmt.Sprintf("rsag %s (commit %s), backend %s, %s on %s", s.RSAG.Version, s.RSAG.Commit, s.Backend,
		plural(s.WorldSize, "rank", "ranks"), plural(len(s.Nodes), "node", "nodes"))
	if len(s.Nodes) > 0 && len(s.Nodes) <= 4 {
		about += " (" + strings.Join(unique(s.Nodes, func(n report.SummaryNode) string { return n.Host }), ", ") + ")"
	}
	v.About = []string{about, whenText(s.Started, s.Ended)}
	v.Findings = modelFindings(s)
	return v
}

// stateOf is a banner line's state: ok, bad, or none (inconclusive or
// not run: neither held nor failed).
func stateOf(o report.Outcome) string {
	switch o {
	case report.Held:
		return "ok"
	case report.Failed:
		return "bad"
	}
	return "none"
}

// phasesWith are the phases whose checks, suspects apart, come to o:
// "contracts", "locate".
func phasesWith(list report.Verdicts, o report.Outcome) []string {
	var out []string
	for _, p := range list.Phases {
		if report.Worst(p.Checks) == o {
			out = append(out, strings.ToLower(p.Title))
		}
	}
	return out
}

// findingText is a suspect as the banner lists it: "node3 (bandwidth
// 0.31x median)", "rank 1 on node2 (a wrong result in the soak)".
func findingText(c report.Check) string {
	if strings.HasPrefix(c.Message, c.Name) {
		return c.Message
	}
	return c.Name + " (" + c.Message + ")"
}

// Class is the banner's class and data-verdict: held, failed,
// inconclusive or not-run.
func (v verdict) Class() string {
	if v.Outcome == "" {
		if v.Held {
			return "held"
		}
		return "failed"
	}
	return strings.ReplaceAll(string(v.Outcome), " ", "-")
}

// word is the verdict in a word, as the page's title and rsag report's
// last line say it.
func (v verdict) word() string {
	switch v.Outcome {
	case report.Held:
		return "held"
	case report.Inconclusive:
		return "INCONCLUSIVE"
	case report.NotRun:
		return "NOT RUN"
	}
	return "FAILED"
}

// whenText says when the run started and how long it took: "started
// 2026-12-01 21:43:04 UTC, took 2m30s" (summary.json's times are whole
// seconds).
func whenText(started, ended string) string {
	a, err := time.Parse(time.RFC3339, started)
	if err != nil {
		return "started " + started
	}
	t := "started " + a.UTC().Format("2006-01-02 15:04:05 UTC")
	if b, err := time.Parse(time.RFC3339, ended); err == nil && !b.Before(a) {
		if d := b.Sub(a); d < time.Second {
			t += ", took under a second"
		} else {
			t += ", took " + d.String()
		}
	}
	return t
}
