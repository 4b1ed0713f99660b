// The page's verdict: its banner, and the line of each check behind it
// (contracts, timing, memory, numerics, soak, locate, the gate).

package page

import (
	"fmt"
	"strings"
	"time"

	"rsag/outdir"
	"rsag/report"
)

func verdictOf(s report.Summary) verdict {
	v := verdict{Held: s.Status == outdir.StatusComplete && s.ChecksPassed, Reason: s.Reason}
	v.Checks = []check{runCheck(s), contractsCheck(s), timingCheck(s), memoryCheck(s), numericsCheck(s)}
	// The soak and locate lines are there only when those phases ran:
	// both are off by default, and the banner lists what a run checks.
	if s.Soak != nil {
		v.Checks = append(v.Checks, soakCheck(*s.Soak))
	}
	if s.Locate != nil {
		v.Checks = append(v.Checks, locateCheck(*s.Locate))
	}
	v.Checks = append(v.Checks, phaseChecks(s)...)
	v.Checks = append(v.Checks, gateCheck(s))
	// The banner is derived from the lines below it, not taken from the
	// summary's flag alone: a summary.json is mailed and hand-edited, and
	// a green banner over a failed row is a lie. A locate suspect is a
	// finding about the cluster, said in the headline, not a failed proof.
	for _, c := range v.Checks {
		if c.State == "bad" && c.Name != locateName {
			v.Held = false
		}
	}
	v.Suspects = suspectsOf(s)
	notRun := 0
	for _, c := range v.Checks {
		if c.State == "none" && c.Name != gateName {
			notRun++
		}
	}
	switch {
	case v.Held && len(v.Suspects) > 0:
		v.Headline = "Held: AllReduce equals ReduceScatter + AllGather; but the locate phase found the collectives slow on " +
			strings.Join(v.Suspects, ", ")
	case v.Held && notRun == 0:
		v.Headline = "Held: AllReduce equals ReduceScatter + AllGather; every check passed"
	case v.Held:
		v.Headline = "Held: AllReduce equals ReduceScatter + AllGather; every check that ran passed"
	default:
		// The run's own line fails with any other: it is named only when
		// nothing else failed (a file not written, a signal, the gate).
		var failed []string
		for _, c := range v.Checks[1:] {
			if c.State == "bad" {
				failed = append(failed, strings.ToLower(c.Name))
			}
		}
		if len(failed) == 0 && v.Checks[0].State == "bad" {
			failed = []string{"the run did not complete"}
		}
		if len(failed) == 0 {
			failed = []string{"a check failed on some rank"}
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

func runCheck(s report.Summary) check {
	if s.Status == outdir.StatusComplete {
		return check{"Run", "complete: every file written", "ok"}
	}
	return check{"Run", s.Status + ": " + orDash(s.Reason), "bad"}
}

func contractsCheck(s report.Summary) check {
	if len(s.Contracts) == 0 {
		return check{"Contracts", checkAbsent(s, "contracts"), "none"}
	}
	var failed []string
	for _, c := range s.Contracts {
		if len(c.FailedRanks) > 0 || c.HeldOn < s.WorldSize {
			failed = append(failed, fmt.Sprintf("%s on ranks %s", c.Name, listText(c.FailedRanks)))
		}
	}
	if len(failed) == 0 {
		return check{"Contracts", fmt.Sprintf("all %d held on every one of %s", len(s.Contracts), plural(s.WorldSize, "rank", "ranks")), "ok"}
	}
	return check{"Contracts", fmt.Sprintf("%d of %d failed: %s", len(failed), len(s.Contracts), strings.Join(failed, "; ")), "bad"}
}

func timingCheck(s report.Summary) check {
	if len(s.Timing) == 0 {
		return check{"Timing results", checkAbsent(s, "timing"), "none"}
	}
	var wrong []string
	for _, t := range s.Timing {
		if !t.Correct {
			wrong = append(wrong, caseText(t)+" "+report.SizeText(t.SizeBytes)+" "+text(t.Mode))
		}
	}
	if len(wrong) == 0 {
		return check{"Timing results", timingCheckedText(s), "ok"}
	}
	if len(wrong) > 5 {
		wrong = append(wrong[:5], fmt.Sprintf("and %d more", len(wrong)-5))
	}
	return check{"Timing results", fmt.Sprintf("wrong results in %d of %d cases: %s", len(wrong), len(s.Timing), strings.Join(wrong, "; ")), "bad"}
}

// timingCheckedText says exactly what was checked of timing results that
// held: every sample, or (timing.check = "last") only some, with how many
// were not looked at.
func timingCheckedText(s report.Summary) string {
	unchecked, samples := 0, 0
	for _, t := range s.Timing {
		unchecked += t.Unchecked
		samples += (t.Samples + t.Discarded) * max(t.Ranks, 1)
	}
	cases := plural(len(s.Timing), "case", "cases")
	if unchecked == 0 {
		return fmt.Sprintf("every sample of the %s checked correct on every rank", cases)
	}
	return fmt.Sprintf("only the last sample of each mode was checked (timing.check = \"last\"), correct on every rank in the %s; "+
		"%d of %d samples (over ranks) were not checked: a wrong result among them would not be seen", cases, unchecked, max(samples, unchecked))
}

func memoryCheck(s report.Summary) check {
	if len(s.Memory) == 0 {
		return check{"Memory", checkAbsent(s, "memory"), "none"}
	}
	var wrong, differ []string
	for _, m := range s.Memory {
		if !m.Correct {
			wrong = append(wrong, m.Mode)
		}
		if !m.MatchesAnalytic {
			differ = append(differ, m.Mode)
		}
	}
	if len(wrong) > 0 {
		return check{"Memory", "wrong results in " + strings.Join(wrong, ", "), "bad"}
	}
	t := fmt.Sprintf("%s checked element by element", plural(len(s.Memory), "mode", "modes"))
	if len(differ) == 0 {
		t += "; every delta equals its analytic value"
	} else {
		t += "; deltas differ from the analytic values in " + strings.Join(differ, ", ")
	}
	return check{"Memory", t, "ok"}
}

func numericsCheck(s report.Summary) check {
	if len(s.Numerics) == 0 {
		return check{"Numerics", checkAbsent(s, "numerics"), "none"}
	}
	var beyond, differ []string
	worst := 0.0
	for _, n := range s.Numerics {
		name := text(n.DType) + " " + report.SizeText(n.SizeBytes)
		if !n.WithinBound {
			beyond = append(beyond, name)
		}
		if !n.BitwiseEqual {
			differ = append(differ, name)
		}
		worst = max(worst, n.MaxBoundRatio)
	}
	switch {
	case len(beyond) > 0:
		return check{"Numerics", fmt.Sprintf("an error beyond the bound of summing %d terms in %s: a bug in the library or the hardware, not rounding",
			s.WorldSize, strings.Join(beyond, ", ")), "bad"}
	case len(differ) == 0:
		return check{"Numerics", fmt.Sprintf("AllReduce and RS + AG bitwise equal in all %d dtype and size pairs", len(s.Numerics)), "ok"}
	}
	return check{"Numerics", fmt.Sprintf("the two paths differ in the last bits in %d of %d dtype and size pairs, all within the bound "+
		"(the largest error is %.3g of it): expected, compare them within the bound, not bitwise", len(differ), len(s.Numerics), worst), "ok"}
}

const (
	gateName   = "Bus-bandwidth gate"
	locateName = "Locate"
)

// soakCheck is the soak's line: how many iterations, and the verdict of
// the first wrong one.
func soakCheck(k report.SummarySoak) check {
	if k.FailedIterations == 0 {
		return check{"Soak", fmt.Sprintf("%s, every output of every path right (seed %d)",
			plural(k.Iterations, "iteration", "iterations"), k.Seed), "ok"}
	}
	// The verdict itself is the run's reason, said above the checks.
	return check{"Soak", fmt.Sprintf("%d of %s found a wrong element; the first names %s (the Soak section lists every wrong output)",
		k.FailedIterations, plural(k.Iterations, "iteration", "iterations"), soakSuspectText(k)), "bad"}
}

// locateCheck is the locate phase's line: a suspect is a finding about the
// cluster, marked as a failed check so that it is seen.
func locateCheck(l report.SummaryLocate) check {
	if len(l.Suspects) == 0 && l.Verdict == "inconclusive" {
		var why []string
		for _, s := range l.Steps {
			if s.Ran && s.Inconclusive != "" {
				why = append(why, s.Title+": "+s.Inconclusive)
			}
		}
		return check{"Locate", "no suspect, but inconclusive: " + strings.Join(why, "; "), "none"}
	}
	if len(l.Suspects) == 0 && len(l.Intermittent) > 0 {
		return check{"Locate", "no suspect; intermittent: " + strings.Join(report.IntermittentTexts(&l), "; "), "bad"}
	}
	if len(l.Suspects) == 0 {
		return check{"Locate", fmt.Sprintf("no node, link or rank below %.2gx the median in every repeat", l.Threshold), "ok"}
	}
	return check{locateName, plural(len(l.Suspects), "suspect", "suspects") + ": " + strings.Join(locateTexts(l), "; "), "bad"}
}

func locateTexts(l report.SummaryLocate) []string {
	var out []string
	for _, x := range l.Suspects {
		out = append(out, x.Text)
	}
	return out
}

// suspectsOf is the banner's list of culprits: the locate phase's
// suspects, and the ranks the soak's verdict names, with their hosts.
func suspectsOf(s report.Summary) []string {
	var out []string
	if s.Locate != nil {
		out = append(out, locateTexts(*s.Locate)...)
	}
	if k := s.Soak; k != nil && k.FailedIterations > 0 {
		for _, r := range soakSuspects(*k) {
			out = append(out, r+" (a wrong result in the soak)")
		}
	}
	return out
}

// soakSuspects are the ranks the soak's verdict names, with their hosts:
// "rank 1 on node2".
func soakSuspects(k report.SummarySoak) []string {
	var out []string
	for _, r := range k.SuspectRanks {
		host := ""
		for _, f := range k.Faults {
			if f.Rank == r {
				host = " on " + f.Host
				break
			}
		}
		out = append(out, fmt.Sprintf("rank %d%s", r, host))
	}
	return out
}

func soakSuspectText(k report.SummarySoak) string {
	if who := soakSuspects(k); len(who) > 0 {
		return strings.Join(who, ", ")
	}
	return "no one rank"
}

// gateCheck is the busbw gate: each run's min_busbw_gbps against its
// direct AllReduce at its largest size.
func gateCheck(s report.Summary) check {
	gates := map[string]report.Gate{}
	runs, _ := configured(s, "runs")
	list, _ := runs.([]any)
	for _, r := range list {
		m, _ := r.(map[string]any)
		name, _ := m["name"].(string)
		statistic, _ := m["min_busbw_statistic"].(string)
		if min, ok := m["min_busbw_gbps"].(float64); ok && min > 0 {
			gates[name] = report.Gate{MinGBps: min, Statistic: statistic}
		}
	}
	if len(gates) == 0 {
		return check{gateName, "not set (min_busbw_gbps = 0)", "none"}
	}
	if len(s.Timing) == 0 {
		return check{gateName, "no timing to gate on", "none"}
	}
	if failures := report.BusBWGate(s.Timing, gates); len(failures) > 0 {
		return check{gateName, strings.Join(failures, "; "), "bad"}
	}
	var held []string
	for _, g := range report.Gates(s.Timing, gates) {
		held = append(held, caseText(g.Stat)+" "+report.SizeText(g.Stat.SizeBytes)+" "+g.Held())
	}
	return check{gateName, "held: AllReduce busbw at the largest size " + strings.Join(held, "; "), "ok"}
}
