package page

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"rsag/coll"
	"rsag/model"
	"rsag/outdir"
	"rsag/report"
	"rsag/report/plot"
)

// Section ids, in the page's order: the browser test and the golden file
// look for each.
var SectionIDs = []string{"contracts", "timing", "model", "breakdown", "memory", "numerics", "nodes", "fastest", "environment"}

// runView builds a run's page.
func runView(s report.Summary) (view, error) {
	s = Complete(s)
	figs, err := figuresOf(s)
	if err != nil {
		return view{}, err
	}
	v := view{Verdict: verdictOf(s)}
	word := "held"
	if !v.Verdict.Held {
		word = "FAILED"
	}
	v.Title = fmt.Sprintf("rsag: %s, %s on %s, %s", word, s.Backend, plural(s.WorldSize, "rank", "ranks"), strings.TrimPrefix(whenText(s.Started, ""), "started "))
	v.Sections = []section{
		contractsSection(s),
		timingSection(s, figs),
		modelSection(s, figs),
		breakdownSection(s),
		memorySection(s, figs),
		numericsSection(s),
	}
	// The soak's and locate's sections are there when those phases ran,
	// as their banner lines are.
	if s.Soak != nil {
		v.Sections = append(v.Sections, soakSection(*s.Soak))
	}
	if s.Locate != nil {
		v.Sections = append(v.Sections, locateSection(*s.Locate, figs))
	}
	v.Sections = append(v.Sections, phaseSections(s)...)
	v.Sections = append(v.Sections,
		nodesSection(s),
		fastestSection(s),
		environmentSection(s))
	v.Footer = fmt.Sprintf("Written from summary.json (schema_version %d) of a run of rsag %s (commit %s). "+
		"rsag report DIR writes this page again from it; the figures are in the run's directory as SVG and PNG too.",
		s.SchemaVersion, s.RSAG.Version, s.RSAG.Commit)
	return v, nil
}

// Complete fills in what a summary.json written by an older rsag of the
// same schema lacks, as the current rsag would have written it: the
// ratios, the model (fits, crossovers, breakdowns) and the node table are
// derived from the timing statistics and the ranks. A summary that has
// them is returned as it is.
func Complete(s report.Summary) report.Summary {
	if s.Ratios == nil && len(s.Timing) > 0 {
		s.Ratios = report.Ratios(s.Timing)
	}
	if s.Fits == nil && s.Crossover == nil && s.Breakdown == nil && len(s.Timing) > 0 {
		s.Fits, s.Crossover, s.Breakdown = report.FitsOf(s.Timing)
	}
	if s.Nodes == nil && len(s.Ranks) > 0 {
		infos := make([]coll.Info, len(s.Ranks))
		for i, r := range s.Ranks {
			infos[i] = coll.Info{Host: r.Host, LocalRank: r.LocalRank, Device: r.Device}
		}
		s.Nodes = report.Nodes(infos)
	}
	return s
}

// configured is a value of the run's resolved config (summary.json's
// "config"), by its keys: configured(s, "timing", "enabled").
func configured(s report.Summary, keys ...string) (any, bool) {
	v := s.Config
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[k]; !ok {
			return nil, false
		}
	}
	return v, true
}

// absent says why a phase has no results: its config turned it off, or
// the run stopped before it.
func absent(s report.Summary, phase string) string {
	if on, ok := configured(s, phase, "enabled"); ok && on == false {
		return fmt.Sprintf("Not run: [%s] enabled = false in this run's config.", phase)
	}
	return "No results: the run stopped before this phase (see the verdict above)."
}

// checkAbsent is absent as a banner line: "not run: ...".
func checkAbsent(s report.Summary, phase string) string {
	a := strings.TrimSuffix(absent(s, phase), ".")
	return strings.ToLower(a[:1]) + a[1:]
}

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

// caseText names a statistic's case: "run default float32 sum out-of-place per-op".
func caseText(t report.TimingStat) string {
	var parts []string
	for i, d := range coll.Dims {
		if v := d.Text(t.Case); v != d.Usual {
			if i == 0 {
				v = d.Name + " " + v
			}
			parts = append(parts, v)
		}
	}
	return strings.Join(parts, " ")
}

// modeLabel is how a table heads a mode (a coll.Mode, or its name).
func modeLabel(mode any) string {
	name := coll.Mode(text(mode))
	if m, ok := coll.ModeOf(name); ok {
		return m.Label
	}
	return string(name)
}

// modelFindings are the banner's model headlines: for each decomposition
// of AllReduce, what it costs per call and from which size it stays within
// 5% of AllReduce, or that it never does.
func modelFindings(s report.Summary) []string {
	var out []string
	for _, mode := range unique(s.Crossover, func(c report.SummaryCrossover) string { return string(c.Mode) }) {
		var cs []report.SummaryCrossover
		for _, c := range s.Crossover {
			if string(c.Mode) == mode {
				cs = append(cs, c)
			}
		}
		h := crossoverHeadline(modeLabel(mode), cs)
		if len(cs) == 1 && poorFit(s.Fits, cs[0]) {
			h += " The fits miss a median by more than 25%: trust their latency and crossover less (see Model and crossover)."
		}
		out = append(out, h)
	}
	if len(out) == 0 && len(s.Timing) > 0 {
		out = append(out, "Model: no crossover: it needs the modes direct and decomposed of one case (see Model and crossover below).")
	}
	return out
}

// poorFit says whether the fit of the crossover's case in direct or in
// its decomposition misses a median by more than report.PoorFitResidual.
func poorFit(fits []model.Fit, c report.SummaryCrossover) bool {
	return slices.ContainsFunc(fits, func(f model.Fit) bool {
		return f.Pair() == c.Case && (f.Mode == coll.Direct || f.Mode == c.Mode) && f.OK() && f.MaxRelResidual > report.PoorFitResidual
	})
}

func crossoverHeadline(name string, cs []report.SummaryCrossover) string {
	if len(cs) == 1 {
		c := cs[0]
		var parts []string
		switch {
		case c.FromFits && c.ExtraLatencyUS >= 0:
			parts = append(parts, fmt.Sprintf("%s costs %+.2f µs per call more than AllReduce", name, c.ExtraLatencyUS))
		case c.FromFits:
			parts = append(parts, fmt.Sprintf("%s's fitted latency is %.2f µs below AllReduce's", name, -c.ExtraLatencyUS))
		}
		parts = append(parts, withinText(c))
		return "Model: " + strings.Join(parts, "; ") + "."
	}
	lo, hi, fitted := math.Inf(1), math.Inf(-1), 0
	var from []int64
	never := 0
	for _, c := range cs {
		if c.FromFits {
			lo, hi, fitted = math.Min(lo, c.ExtraLatencyUS), math.Max(hi, c.ExtraLatencyUS), fitted+1
		}
		switch {
		case c.Measured.Found:
			from = append(from, c.Measured.Bytes)
		case neverWithin(c):
			never++
		}
	}
	var parts []string
	if fitted > 0 {
		parts = append(parts, fmt.Sprintf("%s costs %+.2f to %+.2f µs per call against AllReduce", name, lo, hi))
	}
	w := fmt.Sprintf("%s is within %.0f%% of AllReduce in %d of %d cases", name, 100*model.Tolerance, len(from), len(cs))
	switch {
	case len(from) == 0:
	case slices.Min(from) == slices.Max(from):
		w += fmt.Sprintf(" (from %s on)", report.SizeText(from[0]))
	default:
		w += fmt.Sprintf(" (from %s on in one, %s in another)", report.SizeText(slices.Min(from)), report.SizeText(slices.Max(from)))
	}
	if never > 0 {
		w += fmt.Sprintf(", and never in %d, where it is slower per byte on this fabric", never)
	}
	return "Model, over " + plural(len(cs), "case", "cases") + ": " + strings.Join(append(parts, w), "; ") + "."
}

// neverWithin: the fits say the decomposition moves bytes more than 5%
// more slowly, so that no size brings it within.
func neverWithin(c report.SummaryCrossover) bool {
	return !c.Measured.Found && c.FromFits && c.BandwidthRatio > 1+model.Tolerance
}

func withinText(c report.SummaryCrossover) string {
	tol := fmt.Sprintf("%.0f%%", 100*model.Tolerance)
	switch {
	case c.Measured.Found && c.Measured.Bytes == 0:
		return "within " + tol + " of AllReduce at every measured size"
	case c.Measured.Found:
		return "within " + tol + " of AllReduce from " + report.SizeText(c.Measured.Bytes) + " on"
	case neverWithin(c):
		return fmt.Sprintf("never within %s of AllReduce on this fabric, since it moves bytes %.2fx more slowly", tol, c.BandwidthRatio)
	case c.Fitted.Found:
		return "not within " + tol + " at the measured sizes; the fits put it within from " + report.SizeText(c.Fitted.Bytes)
	}
	return "not within " + tol + " of AllReduce at the measured sizes"
}

func contractsSection(s report.Summary) section {
	sec := section{ID: "contracts", Title: "Contracts",
		How: "Each contract is a proof on exact int64 data, run on every rank. An -equivalence contract holds when AllReduce and " +
			"ReduceScatter + AllGather give the same result as the formula; a -rejected one holds when the wrong variant was told apart."}
	if len(s.Contracts) == 0 {
		sec.Empty = absent(s, "contracts")
		return sec
	}
	t := &table{Head: heads("contract", "held on", "failed on ranks", "detail (rank 0)")}
	for _, c := range s.Contracts {
		held := cell{Text: fmt.Sprintf("%d/%d", c.HeldOn, s.WorldSize), Sort: fmt.Sprint(c.HeldOn), Class: "n ok"}
		r := row{}
		if len(c.FailedRanks) > 0 || c.HeldOn < s.WorldSize {
			held.Class, r.Class = "n bad", "bad"
		}
		r.Cells = []cell{plain(c.Name), held, plain(orDash(listText(c.FailedRanks))), wrap(c.Detail)}
		t.Rows = append(t.Rows, r)
	}
	sec.Blocks = []block{{Table: t}}
	return sec
}

// dim is a dimension of a timing case as a table shows it (coll.Dims).
type dim = coll.Dim

// splitDims sorts the dimensions into those that vary over stats (the
// table's columns) and the values of those that do not (its caption).
func splitDims(stats []report.TimingStat, skip ...string) (varying []dim, fixed []string) {
	for _, d := range coll.Dims {
		if slices.Contains(skip, d.Name) {
			continue
		}
		values := unique(stats, func(t report.TimingStat) string { return d.Text(t.Case) })
		if len(values) > 1 {
			varying = append(varying, d)
		} else if len(values) == 1 && values[0] != d.Usual {
			fixed = append(fixed, values[0])
		}
	}
	return varying, fixed
}

func timingSection(s report.Summary, figs map[string][]plot.Inline) section {
	sec := section{ID: "timing", Title: "Timing",
		How: fmt.Sprintf("Microseconds per operation. A sample is the slowest of the %d ranks in one cycle; a row gives a case's mode the median "+
			"[p10..p90], the p99 and the maximum of its kept samples, the terminal's figures, and draws them: the whisker from the minimum to the maximum, "+
			"the box from p10 to p90, the bar at the median, the dot at the p99, on one log scale from half the median to %gx it (the faint line is 2x), "+
			"so that the tails of every row compare. Bus bandwidth (GB/s) is nccl-tests' from the median; vs AR is the median over direct AllReduce's; "+
			"the slowest rank is the one whose own median is highest. A click on a column's heading sorts by it.", s.WorldSize, distHi)}
	if len(s.Timing) == 0 {
		sec.Empty = absent(s, "timing")
		return sec
	}
	if len(s.Nodes) > 1 {
		sec.Blocks = append(sec.Blocks, block{Notes: []string{fmt.Sprintf("Across %d nodes: the bandwidth is bounded by the network between them (NIC, switch), not by NVLink.", len(s.Nodes))}})
	}
	runs := unique(s.Timing, func(t report.TimingStat) string { return text(t.Run) })
	for _, run := range runs {
		var stats []report.TimingStat
		for _, t := range s.Timing {
			if text(t.Run) == run {
				stats = append(stats, t)
			}
		}
		// The figures first, to read at a glance, then the table to look
		// values up in: a sweep's table runs to hundreds of rows.
		if len(runs) > 1 || run != "default" {
			sec.Blocks = append(sec.Blocks, block{Heading: "Run " + run})
		}
		for _, kind := range []string{plot.TimeVsSize, plot.BusBWVsSize, plot.RatioVsSize} {
			sec.Blocks = append(sec.Blocks, figuresFor(figs, kind, run)...)
		}
		sec.Blocks = append(sec.Blocks, block{Table: timingTable(stats)})
	}
	return sec
}

// timingTable is one run's timings as the terminal shows them: a row per
// case and mode, its median [p10..p90], p99 and maximum, a strip of that
// distribution (distStrip), its bus bandwidth, its median over direct
// AllReduce's and its slowest rank.
func timingTable(stats []report.TimingStat) *table {
	varying, fixed := splitDims(stats, "run")
	direct := map[coll.Case]report.TimingStat{}
	modes := map[coll.Mode]bool{}
	for _, st := range stats {
		modes[st.Mode] = true
		if st.Mode == coll.Direct {
			direct[st.Pair()] = st
		}
	}
	vsAR := len(direct) > 0 && len(modes) > 1
	var legend []string
	for _, name := range coll.Modes {
		if m, _ := coll.ModeOf(name); modes[name] {
			legend = append(legend, m.Short+" "+m.Title)
		}
	}
	t := &table{Sortable: true, Caption: strings.Join(append(fixed, "µs per operation; a sample is the slowest rank's in a cycle; modes: "+
		strings.Join(legend, ", ")), " · ")}
	for _, d := range varying {
		t.Head = append(t.Head, headCell{Text: d.Name})
	}
	t.Head = append(t.Head, heads("size", "mode", "median [p10..p90]", "p99", "max", "distribution", "busbw GB/s")...)
	if vsAR {
		t.Head = append(t.Head, headCell{Text: "vs AR"})
	}
	t.Head = append(t.Head, headCell{Text: "slowest rank"})
	// Rows in the order of the cases, each case's modes in coll.Modes' order.
	var pairs []coll.Case
	byPair := map[coll.Case][]report.TimingStat{}
	for _, st := range stats {
		if _, ok := byPair[st.Pair()]; !ok {
			pairs = append(pairs, st.Pair())
		}
		byPair[st.Pair()] = append(byPair[st.Pair()], st)
	}
	var ordered []report.TimingStat
	for _, p := range pairs {
		of := byPair[p]
		slices.SortStableFunc(of, func(a, b report.TimingStat) int {
			return rankOf(coll.Modes, a.Mode) - rankOf(coll.Modes, b.Mode)
		})
		ordered = append(ordered, of...)
	}
	for _, st := range ordered {
		m, _ := coll.ModeOf(st.Mode)
		var r row
		for _, d := range varying {
			r.Cells = append(r.Cells, plain(orDash(d.Text(st.Case))))
		}
		med := cell{Text: fmt.Sprintf("%s [%s..%s]", report.USText(st.MedianUS), report.USText(st.P10US), report.USText(st.P90US)),
			Sort: sortKey(st.MedianUS), Class: "n"}
		if !st.Correct {
			med.Text, med.Class, r.Class = med.Text+" ✗ wrong", "n bad", "bad"
		}
		r.Cells = append(r.Cells, size(st.SizeBytes), cell{Text: orDash(m.Short), Class: "m m-" + string(st.Mode)}, med,
			us(st.P99US), us(st.MaxUS), cell{HTML: distStrip(st), Sort: sortKey(st.MaxUS / math.Max(st.MedianUS, 1e-9))},
			num("%.2f", st.BusBWGBps))
		if vsAR {
			if d, ok := direct[st.Pair()]; ok && st.Mode != coll.Direct && d.MedianUS > 0 {
				r.Cells = append(r.Cells, num("%.3f", st.MedianUS/d.MedianUS))
			} else {
				r.Cells = append(r.Cells, plain("-"))
			}
		}
		r.Cells = append(r.Cells, cell{Text: fmt.Sprint(st.SlowestRank), Sort: fmt.Sprint(st.SlowestRank), Class: "n"})
		t.Rows = append(t.Rows, r)
	}
	return t
}

// rankOf is v's place in order, past every known one when it is not there.
func rankOf[T comparable](order []T, v T) int {
	if i := slices.Index(order, v); i >= 0 {
		return i
	}
	return len(order)
}

// caseDim is a dimension of a case as a table shows it (coll.Dims).
type caseDim = coll.Dim

// modelCaseDims are the dimensions of the model's cases that vary over
// them.
func modelCaseDims(cases []coll.Case) []caseDim {
	var out []caseDim
	for _, d := range coll.Dims {
		if len(unique(cases, d.Text)) > 1 {
			out = append(out, d)
		}
	}
	return out
}

func dimCells(dims []caseDim, c coll.Case) []cell {
	var out []cell
	for _, d := range dims {
		out = append(out, plain(orDash(d.Text(c))))
	}
	return out
}

func dimHeads(dims []caseDim) []headCell {
	var out []headCell
	for _, d := range dims {
		out = append(out, headCell{Text: d.Name})
	}
	return out
}

func modelSection(s report.Summary, figs map[string][]plot.Inline) section {
	sec := section{ID: "model", Title: "Model and crossover",
		How: fmt.Sprintf("The line t(n) = α + n/B through each mode's medians (weighted least squares, weights 1/t², so that a 2 µs point counts as "+
			"much as a 2 ms one): α is what one call costs however small, B the rate at which it moves its buffer. The crossover is the smallest "+
			"size from which the decomposition costs at most %.0f%% more than AllReduce, at that size and every larger one. Below it, bucket "+
			"gradients into buffers past it; when B direct / B decomp stays above %.2f, no bucket size saves you.", 100*model.Tolerance, 1+model.Tolerance)}
	if len(s.Timing) == 0 {
		sec.Empty = absent(s, "timing")
		return sec
	}
	if len(s.Fits) == 0 {
		sec.Empty = "No fits: the timing phase timed no mode at several sizes."
		return sec
	}
	var cases []coll.Case
	for _, f := range s.Fits {
		cases = append(cases, f.Case)
	}
	dims := modelCaseDims(cases)
	fits := &table{Sortable: true, Caption: "Hockney fits, one per case and mode",
		Head: append(dimHeads(dims), heads("mode", "α µs", "B GB/s", "R²", "max rel residual", "sizes")...)}
	var notes []string
	// The modes without a fit are said once per reason, not row by row: a
	// sweep of two sizes has none, for hundreds of cases alike.
	var reasons []string
	without := map[string]int{}
	for _, f := range s.Fits {
		if !f.OK() {
			if without[f.Reason] == 0 {
				reasons = append(reasons, f.Reason)
			}
			without[f.Reason]++
			continue
		}
		r := row{Cells: append(dimCells(dims, f.Case), plain(text(f.Mode)), num("%.2f", f.AlphaUS), num("%.2f", f.BandwidthGBps),
			num("%.4f", f.R2), num("%.3f", f.MaxRelResidual), plain(sizesText(f.SizesBytes)))}
		if f.MaxRelResidual > report.PoorFitResidual {
			r.Class = "warn"
			notes = append(notes, fmt.Sprintf("The %s fit%s misses a measured median by %.0f%%: the times are noisy, or no line holds from %s to %s; "+
				"trust its α, B and crossover less, and rerun with more cycles on a quiet machine.", f.Mode, caseNote(dims, f.Case),
				100*f.MaxRelResidual, report.SizeText(f.SizesBytes[0]), report.SizeText(f.SizesBytes[len(f.SizesBytes)-1])))
		}
		fits.Rows = append(fits.Rows, r)
	}
	for _, why := range reasons {
		notes = append(notes, fmt.Sprintf("No fit for %d of the %d modes and cases: %s.", without[why], len(s.Fits), why))
	}
	if len(fits.Rows) == 0 {
		fits = nil
	}
	sec.Blocks = append(sec.Blocks, block{Table: fits, Notes: notes})
	if len(s.Crossover) > 0 {
		ct := &table{Sortable: true, Caption: fmt.Sprintf("Crossover: from which size the decomposition stays within %.0f%% of direct AllReduce", 100*model.Tolerance),
			Head: append(dimHeads(dims), heads("decomposition", "measured", "from the fits", "extra latency µs", "B direct / B decomp")...)}
		for _, c := range s.Crossover {
			r := row{Cells: append(dimCells(dims, c.Case), plain(modeLabel(c.Mode)), crossingCell(c.Measured), crossingCell(c.Fitted))}
			if c.FromFits {
				r.Cells = append(r.Cells, num("%+.2f", c.ExtraLatencyUS), num("%.3f", c.BandwidthRatio))
			} else {
				r.Cells = append(r.Cells, plain("-"), plain("-"))
			}
			ct.Rows = append(ct.Rows, r)
		}
		sec.Blocks = append(sec.Blocks, block{Table: ct})
	}
	for _, run := range unique(s.Timing, func(t report.TimingStat) string { return text(t.Run) }) {
		sec.Blocks = append(sec.Blocks, figuresFor(figs, plot.CrossoverVsSize, run)...)
	}
	return sec
}

func caseNote(dims []caseDim, c coll.Case) string {
	var parts []string
	for _, d := range dims {
		parts = append(parts, d.Name+" "+d.Text(c))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

func crossingCell(c model.Crossing) cell {
	switch {
	case c.Found && c.Bytes == 0:
		return cell{Text: "at every size", Sort: "0", Class: "n ok"}
	case c.Found:
		return cell{Text: report.SizeText(c.Bytes), Sort: fmt.Sprint(c.Bytes), Class: "n ok"}
	}
	return cell{Text: c.Why, Sort: fmt.Sprint(math.MaxInt64), Class: "wrap"}
}

func sizesText(sizes []int64) string {
	if len(sizes) == 0 {
		return "-"
	}
	return fmt.Sprintf("%d, %s..%s", len(sizes), report.SizeText(sizes[0]), report.SizeText(sizes[len(sizes)-1]))
}

func breakdownSection(s report.Summary) section {
	sec := section{ID: "breakdown", Title: "Where the decomposition's time goes",
		How: "At each size, ReduceScatter alone and AllGather alone (their medians in µs) as shares of the decomposition's median, and what is left: " +
			"what running the two back to back costs beyond their sum (synchronisation, a cache or protocol effect). The parts run one after the other inside the whole, " +
			"so they cannot add up to more: where they do by less than the runs' noise the rest is zero within noise, and where they do beyond it the time is not split."}
	if len(s.Breakdown) == 0 {
		if len(s.Timing) == 0 {
			sec.Empty = absent(s, "timing")
		} else {
			sec.Empty = "Not measured: time the modes reduce-scatter and all-gather alone besides decomposed (as configs/model-mpi.toml does)."
		}
		return sec
	}
	var cases []coll.Case
	for _, b := range s.Breakdown {
		cases = append(cases, b.Case)
	}
	dims := modelCaseDims(cases)
	t := &table{Sortable: true, Head: append(dimHeads(dims), heads("decomposition", "size", "whole µs", "parts µs (share)", "rest µs (share)")...)}
	for _, b := range s.Breakdown {
		for _, sh := range b.Shares {
			parts, rest, note := report.ShareText(sh)
			if note != "" {
				rest = note // it begins with the verdict: "not split: ...", "within noise: ..."
			}
			t.Rows = append(t.Rows, row{Cells: append(dimCells(dims, b.Case), plain(modeLabel(b.Mode)), size(sh.SizeBytes),
				us(sh.WholeUS), plain(parts),
				cell{Text: rest, Sort: fmt.Sprint(sh.UnexplainedUS), Class: "n wrap"})})
		}
	}
	sec.Blocks = []block{{Table: t}}
	return sec
}

func memorySection(s report.Summary, figs map[string][]plot.Inline) section {
	sec := section{ID: "memory", Title: "Memory",
		How: "Memory (binary units: 1 MiB = 1048576 bytes; summary.json has the bytes) above the baseline while each strategy holds its result (steady) and at its highest (peak), on the rank where they are " +
			"highest, against what the buffers' sizes say they must be; x is the multiple of the payload. The device count (cuMemGetInfo) includes the library's own buffers."}
	if len(s.Memory) == 0 {
		sec.Empty = absent(s, "memory")
		return sec
	}
	t := &table{Sortable: true, Head: heads("mode", "steady", "x", "peak", "x", "analytic steady / peak", "match", "device steady / peak", "checked")}
	for _, m := range s.Memory {
		if len(m.Ranks) == 0 {
			continue
		}
		var steady, peak, dSteady, dPeak []int64
		for _, r := range m.Ranks {
			steady, peak = append(steady, r.SteadyDeltaBytes), append(peak, r.PeakDeltaBytes)
			if r.DeviceSteadyDeltaBytes != nil && r.DevicePeakDeltaBytes != nil {
				dSteady, dPeak = append(dSteady, *r.DeviceSteadyDeltaBytes), append(dPeak, *r.DevicePeakDeltaBytes)
			}
		}
		payload := float64(m.PayloadBytes)
		device := "n/a"
		if len(dSteady) > 0 {
			device = rangeText(dSteady) + " / " + rangeText(dPeak)
		}
		r := row{Cells: []cell{plain(m.Mode), {Text: rangeText(steady), Sort: fmt.Sprint(slices.Max(steady)), Class: "n"},
			num("%.3f", float64(slices.Max(steady))/payload), {Text: rangeText(peak), Sort: fmt.Sprint(slices.Max(peak)), Class: "n"},
			num("%.3f", float64(slices.Max(peak))/payload), {Text: report.BytesText(m.AnalyticSteadyBytes) + " / " + report.BytesText(m.AnalyticPeakBytes), Class: "n"},
			yesNo(m.MatchesAnalytic), {Text: device, Class: "n"}, yesNo(m.Correct)}}
		if !m.Correct {
			r.Class = "bad"
		}
		t.Rows = append(t.Rows, r)
	}
	sec.Blocks = append([]block{{Table: t}}, figuresFor(figs, plot.MemoryByMode, "")...)
	return sec
}

func rangeText(v []int64) string {
	lo, hi := slices.Min(v), slices.Max(v)
	if lo == hi {
		return report.BytesText(lo)
	}
	return report.BytesText(lo) + ".." + report.BytesText(hi)
}

func numericsSection(s report.Summary) section {
	sec := section{ID: "numerics", Title: "Numerics",
		How: fmt.Sprintf("AllReduce against ReduceScatter + AllGather on the same seeded random floats, element by element, and each against the exact "+
			"sum; the worst rank. On 2 ranks both paths add a + b and are bitwise equal; on more, the library's two algorithms add in different "+
			"orders and may differ in the last bits, which is harmless while the error stays within the bound for summing %d terms.", s.WorldSize)}
	if len(s.Numerics) == 0 {
		sec.Empty = absent(s, "numerics")
		return sec
	}
	t := &table{Sortable: true, Head: heads("dtype", "size", "AllReduce vs RS + AG", "max abs error AR", "max abs error RS+AG", "bound", "error / bound", "within bound")}
	for _, n := range s.Numerics {
		r := row{Cells: []cell{plain(text(n.DType)), size(n.SizeBytes), plain(n.Verdict()), num("%.3g", n.MaxAbsErrorDirect),
			num("%.3g", n.MaxAbsErrorDecomposed), num("%.3g", n.Bound), num("%.3f", n.MaxBoundRatio), yesNo(n.WithinBound)}}
		if !n.WithinBound {
			r.Class = "bad"
		}
		t.Rows = append(t.Rows, r)
	}
	sec.Blocks = []block{{Table: t}}
	return sec
}

// soakSection is the soak: what it ran, and every wrong output it found,
// the first wrong element of each.
func soakSection(k report.SummarySoak) section {
	sec := section{ID: "soak", Title: "Soak",
		How: "Iteration after iteration, a case drawn from the seed: AllReduce and ReduceScatter + AllGather (and the hierarchical form " +
			"with groups) on the same exactly checkable input, every element of every step's output checked. Chunk q is the part rank q " +
			"holds after ReduceScatter: one rank wrong in the chunk it reduced is a reduction fault on it; every rank wrong in one chunk " +
			"after AllGather is a transfer from that chunk's owner."}
	notDrawn := "none"
	if len(k.NotDrawn) > 0 {
		notDrawn = strings.Join(k.NotDrawn, ", ")
	}
	runs := &table{Head: heads("seed", "iterations", "failed", "failure rate", "bytes moved (rank 0)", "seconds", "not drawn at this width"),
		Rows: []row{{Cells: []cell{plain(fmt.Sprint(k.Seed)), num("%.0f", float64(k.Iterations)), num("%.0f", float64(k.FailedIterations)),
			num("%.3g", k.FailureRate), bytesCell(k.BytesMoved), num("%.1f", k.ElapsedS), plain(notDrawn)}}}}
	sec.Blocks = []block{{Table: runs}}
	if len(k.Faults) == 0 {
		return sec
	}
	faults := &table{Sortable: true, Caption: "every wrong output, in iteration, mode, step and rank order",
		Head: heads("iteration", "rank", "host", "mode", "step", "wrong / elements", "chunks", "first element", "expected", "got")}
	for _, f := range k.Faults {
		faults.Rows = append(faults.Rows, row{Class: "bad", Cells: []cell{num("%.0f", float64(f.Iteration)), num("%.0f", float64(f.Rank)),
			plain(f.Host), plain(text(f.Mode)), plain(f.Collective), plain(fmt.Sprintf("%d / %d", f.Wrong, f.Elements)), plain(listText(f.Chunks)),
			num("%.0f", float64(f.Index)), plain(valueBits(f.Expected, f.ExpectedBits)), plain(valueBits(f.Got, f.GotBits))}})
	}
	sec.Blocks = append(sec.Blocks, block{Table: faults})
	return sec
}

// valueBits is an element's value in full, not in an exponent (the soak's
// values are integers or exact sums), and its bits: "837648698 (0x31ed813a)".
func valueBits(v float64, bits string) string {
	return strconv.FormatFloat(v, 'f', -1, 64) + " (" + bits + ")"
}

// locateSection is the locate phase: every node's verdict, and the pair
// matrix.
func locateSection(l report.SummaryLocate, figs map[string][]plot.Inline) section {
	sec := section{ID: "locate", Title: "Locate",
		How: fmt.Sprintf("Each unit (a node inside, a pair of nodes, a pair of ranks of a node) on its own sub-communicator; its figure is its "+
			"bus bandwidth over the median of its step's units at the same collective and size. A suspect is below %.2gx in all %d repeats "+
			"and beyond the healthy units' spread; a node slow with most of its partners is the node's fault, a pair slow while neither node "+
			"is, the link's (docs/locate.md).", l.Threshold, l.Repeats)}
	nodes := &table{Sortable: true, Caption: plural(len(l.Nodes), "node", "nodes"), Head: heads("host", "ranks", "verdict")}
	for _, n := range l.Nodes {
		r := row{Cells: []cell{plain(n.Host), plain(listText(n.Ranks)), plain(n.Verdict)}}
		if n.Suspect {
			r.Class = "bad"
		}
		nodes.Rows = append(nodes.Rows, r)
	}
	sec.Blocks = []block{{Table: nodes}}
	if len(l.RankPairs) > 0 {
		ranks := &table{Sortable: true, Caption: plural(len(l.RankPairs), "rank pair", "rank pairs") + " within nodes",
			Head: heads("host", "ranks", "figures", "verdict")}
		for _, p := range l.RankPairs {
			var figs []string
			for _, f := range p.Figures {
				figs = append(figs, fmt.Sprintf("%.3g", f.Figure))
			}
			r := row{Cells: []cell{plain(p.Nodes[0]), plain(listText(p.Ranks)), plain(strings.Join(figs, " ")), plain(p.Verdict)}}
			if p.Suspect {
				r.Class = "bad"
			}
			ranks.Rows = append(ranks.Rows, r)
		}
		sec.Blocks = append(sec.Blocks, block{Table: ranks})
	}
	for _, f := range figs[plot.LocatePairs] {
		sec.Blocks = append(sec.Blocks, figureBlock(f))
	}
	return sec
}

func nodesSection(s report.Summary) section {
	sec := section{ID: "nodes", Title: "Nodes",
		How: "Where each rank ran: its host, its rank among the ranks of that host (on GPU nodes, its GPU) and its device."}
	if len(s.Ranks) == 0 {
		sec.Empty = "No ranks recorded."
		return sec
	}
	grouped := slices.ContainsFunc(s.Nodes, func(n report.SummaryNode) bool { return len(n.Groups) > 0 })
	nodes := &table{Sortable: true, Caption: plural(len(s.Nodes), "node", "nodes"), Head: heads("host", "ranks", "local ranks", "device")}
	if grouped {
		nodes.Head = append(nodes.Head, headCell{Text: "hierarchy groups"})
	}
	for _, n := range s.Nodes {
		r := row{Cells: []cell{plain(n.Host), {Text: listText(n.Ranks), Sort: fmt.Sprint(n.Ranks[0]), Class: "n"},
			{Text: listText(n.LocalRanks), Class: "n"}, plain(n.Device)}}
		if grouped {
			var g []string
			for _, x := range n.Groups {
				g = append(g, fmt.Sprint(x))
			}
			r.Cells = append(r.Cells, cell{Text: strings.Join(g, ","), Class: "n"})
		}
		nodes.Rows = append(nodes.Rows, r)
	}
	ranks := &table{Sortable: true, Caption: plural(len(s.Ranks), "rank", "ranks"), Head: heads("rank", "host", "local rank", "device", "bus id")}
	for _, r := range s.Ranks {
		ranks.Rows = append(ranks.Rows, row{Cells: []cell{{Text: fmt.Sprint(r.Rank), Sort: fmt.Sprint(r.Rank), Class: "n"}, plain(r.Host),
			{Text: fmt.Sprint(r.LocalRank), Sort: fmt.Sprint(r.LocalRank), Class: "n"}, plain(r.Device), plain(orDash(r.BusID))}})
	}
	sec.Blocks = []block{{Table: nodes}, {Table: ranks}}
	if len(s.Ranks) > report.FoldRanksAbove {
		// A row a rank would be thousands: the nodes' rows say it.
		nodes.Caption = fmt.Sprintf("%s; %s, one row a node (above %d ranks the rank rows fold)", nodes.Caption,
			plural(len(s.Ranks), "rank", "ranks"), report.FoldRanksAbove)
		sec.Blocks = []block{{Table: nodes}}
	}
	return sec
}

// fastestSection names, for each size and mode of a sweep over NCCL's
// fast paths, the configuration with the lowest median against the best
// plain buffers on a default communicator (report.FastestTable's rows).
func fastestSection(s report.Summary) section {
	sec := section{ID: "fastest", Title: "Fastest configuration",
		How: "Per size and mode, the buffers, CTA policy and method with the lowest median, and how much faster it is than the best plain " +
			"buffers on a default communicator: what registration, symmetric windows or the CTA policy buy."}
	if len(s.Timing) == 0 {
		sec.Empty = absent(s, "timing")
		return sec
	}
	rows := report.Fastest(s.Timing)
	if rows == nil {
		sec.Empty = "Every case ran plain buffers on a default communicator: nothing to compare. Sweep buffers or cta_policies (NCCL) to see what they buy."
		return sec
	}
	tb := &table{Sortable: true, Head: heads("run", "dtype", "op", "placement", "size", "mode", "fastest", "median µs", "plain/default", "median µs", "gain")}
	for _, b := range rows {
		g := b.Problem
		base, baseUS, gain := plain("-"), plain("-"), plain("-")
		if b.HaveBaseline {
			base, baseUS = plain(coll.MethodText(b.Baseline.Method, b.Baseline.Batch)), num("%.2f", b.Baseline.MedianUS)
			if b.Fastest.MedianUS > 0 {
				gain = num("%.2fx", b.Baseline.MedianUS/b.Fastest.MedianUS)
			}
		}
		tb.Rows = append(tb.Rows, row{Cells: []cell{plain(g.Run), plain(text(g.DType)), plain(text(g.Op)), plain(text(g.Placement)), size(g.SizeBytes), plain(text(g.Mode)),
			plain(orDash(coll.VariantText(b.Fastest.Buffers, b.Fastest.CTAPolicy)) + " " + coll.MethodText(b.Fastest.Method, b.Fastest.Batch)), num("%.2f", b.Fastest.MedianUS),
			base, baseUS, gain}})
	}
	sec.Blocks = []block{{Table: tb}}
	return sec
}

func environmentSection(s report.Summary) section {
	sec := section{ID: "environment", Title: "Environment",
		How: "What ran, where, with which libraries and settings: enough to run it again, and to tell two runs apart."}
	kv := &table{Head: heads("what", "value")}
	add := func(k, v string) { kv.Rows = append(kv.Rows, row{Cells: []cell{plain(k), wrap(v)}}) }
	add("rsag", fmt.Sprintf("%s (commit %s)", s.RSAG.Version, s.RSAG.Commit))
	add("summary.json", fmt.Sprintf("schema_version %d", s.SchemaVersion))
	add("status", s.Status+orEmpty(": ", s.Reason))
	add("started, ended", s.Started+", "+s.Ended)
	add("backend", s.Backend)
	add("world size", fmt.Sprint(s.WorldSize))
	add("MPI library", orDash(s.MPILibrary))
	for _, l := range s.Libraries {
		if l.Version != s.MPILibrary { // the MPI backend's library is the MPI library
			add("library "+l.Name, l.Version+orEmpty(" at ", l.Path))
		}
	}
	add("CUDA driver", orDash(s.Driver))
	var devices []string
	for _, d := range unique(s.Ranks, func(r report.SummaryRank) string { return r.Device }) {
		n := 0
		for _, r := range s.Ranks {
			if r.Device == d {
				n++
			}
		}
		devices = append(devices, fmt.Sprintf("%d x %s", n, d))
	}
	add("devices", orDash(strings.Join(devices, ", ")))
	if len(s.Command) > 0 {
		add("command line (rank 0)", strings.Join(s.Command, " "))
	}
	env := &table{Sortable: true, Caption: "NCCL_* and UCX_* variables rank 0 saw", Head: heads("variable", "value")}
	keys := make([]string, 0, len(s.Environment))
	for k := range s.Environment {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		env.Rows = append(env.Rows, row{Cells: []cell{plain(k), wrap(s.Environment[k])}})
	}
	sec.Blocks = []block{{Table: kv}}
	if len(keys) > 0 {
		sec.Blocks = append(sec.Blocks, block{Table: env})
	} else {
		sec.Blocks = append(sec.Blocks, block{Notes: []string{"No NCCL_* or UCX_* variable was set on rank 0."}})
	}
	cfg, err := json.MarshalIndent(s.Config, "", "  ")
	if err != nil {
		cfg = []byte(err.Error())
	}
	sec.Blocks = append(sec.Blocks, block{Heading: "Config (resolved, after -set and -backend)", Pre: string(cfg)})
	return sec
}

func orEmpty(sep, s string) string {
	if s == "" {
		return ""
	}
	return sep + s
}
