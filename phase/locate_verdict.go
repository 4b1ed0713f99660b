package phase

import (
	"fmt"
	"math"
	"rsag/internal/quantile"
	"slices"
	"strings"

	"rsag/coll"
	"rsag/locate"
	"rsag/phases"
	"rsag/report"
)

// LocateRows turns one rank's locate result into rows.
func LocateRows(rank int, host string, res phases.LocateResult) ([]report.LocateRow, []report.LocateCommRow, []report.LocateRankRow) {
	var rows []report.LocateRow
	for _, s := range res.Samples {
		rows = append(rows, report.LocateRow{Rank: rank, Step: s.Step, Round: s.Round, Repeat: s.Repeat, Unit: s.Unit, A: s.A, B: s.B,
			Probe: s.Probe, Collective: s.Collective, SizeBytes: s.SizeBytes, Bytes: s.Bytes, Ranks: s.Ranks,
			DurationUS: s.DurationUS, Host: host})
	}
	var comms []report.LocateCommRow
	for _, c := range res.Comms {
		comms = append(comms, report.LocateCommRow{Rank: rank, Step: c.Step, Round: c.Round, Member: c.Member, SplitUS: c.SplitUS, FreeUS: c.FreeUS})
	}
	return rows, comms, []report.LocateRankRow{{Rank: rank, Seconds: res.Seconds, WaitedS: res.WaitedS}}
}

// LocateInput is what the summary's locate section is judged from, beyond
// the rows: the plan every rank ran and the config's threshold.
type LocateInput struct {
	Plan      phases.LocatePlan
	Threshold float64
	// Crowded says, by node, where its ranks outnumber its processors
	// (Crowded): their ranks are not judged, since a rank waiting for a
	// processor looks the same as a slow one.
	Crowded []string
}

// unitKey is a unit within its step.
type unitKey struct {
	round, a, b int
}

// stepData is one step's measurements: per unit, per probe and repeat,
// the slowest rank's time and the bus bandwidth from it.
type stepData struct {
	units []unitKey
	speed map[unitKey][][]float64 // [probe][repeat] GB/s
	// abandoned are the probes a unit abandoned (phases.LocateAbandoned):
	// the slowest rank's one operation, per probe.
	abandoned map[unitKey]map[int]report.LocateRow
}

// summaryLocate judges the phase from every rank's rows.
func LocateSummary(in LocateInput, rows report.Rows) *report.SummaryLocate {
	plan := in.Plan
	spec := plan.Spec
	probes := spec.Probes()
	out := &report.SummaryLocate{Threshold: in.Threshold, Repeats: spec.Repeats}
	var lp []locate.Probe
	for _, p := range probes {
		bound := locate.Probe{Latency: p.Latency}.Problem()
		out.Probes = append(out.Probes, report.SummaryLocateProbe{Collective: p.Collective.Name, SizeBytes: p.SizeBytes, Bound: bound})
		lp = append(lp, locate.Probe{Name: p.Collective.Label + " " + report.SizeText(p.SizeBytes), Latency: p.Latency})
	}
	for _, r := range rows.LocateRanks {
		out.Seconds = max(out.Seconds, r.Seconds)
	}
	data := map[string]*stepData{}
	for _, st := range plan.Steps {
		out.Steps = append(out.Steps, stepSummary(st, rows.LocateComms))
		if st.Skip != "" {
			continue
		}
		d := &stepData{speed: map[unitKey][][]float64{}, abandoned: map[unitKey]map[int]report.LocateRow{}}
		for r, round := range st.Rounds {
			for _, u := range round {
				k := unitKey{r, u.A, u.B}
				d.units = append(d.units, k)
				d.speed[k] = nanGrid(len(probes), spec.Repeats)
			}
		}
		// A measurement of a unit is as slow as its slowest rank.
		type measurement struct {
			unit          unitKey
			probe, repeat int
		}
		slowest := map[measurement]report.LocateRow{}
		for _, row := range rows.Locate {
			m := measurement{unitKey{row.Round, row.A, row.B}, row.Probe, row.Repeat}
			if row.Step == st.Name && row.DurationUS >= slowest[m].DurationUS {
				slowest[m] = row
			}
		}
		for m, row := range slowest {
			if _, ok := d.speed[m.unit]; ok && m.repeat == phases.LocateAbandoned && m.probe >= 0 && m.probe < len(probes) {
				if d.abandoned[m.unit] == nil {
					d.abandoned[m.unit] = map[int]report.LocateRow{}
				}
				d.abandoned[m.unit][m.probe] = row
				continue
			}
			grid, ok := d.speed[m.unit]
			if !ok || m.probe < 0 || m.probe >= len(probes) || m.repeat < 0 || m.repeat >= spec.Repeats || row.DurationUS <= 0 {
				continue
			}
			grid[m.probe][m.repeat] = busBW(probes[m.probe].Collective, row.Bytes, row.Ranks, row.DurationUS)
		}
		data[st.Name] = d
	}
	crowdedRanks := map[int]string{} // rank: its node's crowding
	var crowded []string
	for n, why := range in.Crowded {
		if why == "" || n >= len(plan.Ranks) {
			continue
		}
		crowded = append(crowded, plan.Nodes[n]+" ("+why+")")
		for _, r := range plan.Ranks[n] {
			crowdedRanks[r] = why
		}
	}
	// A rank that waited for a processor for a noticeable share of the
	// phase (another process on its core: a CPU hog) has the scheduler's
	// times, not its own: judged as a crowded node's ranks are.
	var waited []string
	for _, r := range rows.LocateRanks {
		if _, ok := crowdedRanks[r.Rank]; !ok && r.Seconds > 0 && r.WaitedS >= waitedShare*r.Seconds {
			why := fmt.Sprintf("waited for a processor %.0f%% of the phase", 100*r.WaitedS/r.Seconds)
			crowdedRanks[r.Rank] = why
			waited = append(waited, fmt.Sprintf("rank %d (%s)", r.Rank, why))
		}
	}
	slices.Sort(waited)
	// Said before the levels are judged: a step that could not judge
	// names no suspect (locate_confirm.go).
	if len(crowded) > 0 || len(waited) > 0 {
		var why []string
		if len(crowded) > 0 {
			why = append(why, "ranks outnumber processors on "+strings.Join(crowded, ", "))
		}
		if len(waited) > 0 {
			why = append(why, strings.Join(waited, ", "))
		}
		for i, st := range plan.Steps {
			if st.Level.OfRanks && out.Steps[i].Ran {
				out.Steps[i].Inconclusive = strings.Join(why, "; ") +
					": a rank waiting for a processor looks the same as a slow one, so no such rank is judged"
			}
		}
	}
	excluded := make([]bool, 0)
	for _, level := range phases.LocateLevels {
		excluded = judgeLevel(out, plan, level, lp, data, in.Threshold, excluded, crowdedRanks)
	}
	out.Verdict = phaseVerdict(*out)
	return out
}

// waitedShare is the share of the phase a rank may wait for a processor
// and still be judged: 5%, far above the scheduler's own noise on an idle
// core (well under 1%).
const waitedShare = 0.05

// phaseVerdict is the phase's verdict in a word (report.SummaryLocate.Verdict).
func phaseVerdict(l report.SummaryLocate) string {
	switch {
	case len(l.Suspects) > 0:
		return "suspects"
	case len(l.Intermittent) > 0:
		return "intermittent"
	case slices.ContainsFunc(l.Steps, func(s report.SummaryLocateStep) bool { return s.Ran && s.Inconclusive != "" }):
		return "inconclusive"
	case slices.ContainsFunc(l.Nodes, func(n report.SummaryLocateNode) bool { return strings.HasPrefix(n.Verdict, "inconclusive") }),
		slices.ContainsFunc(append(slices.Clone(l.Pairs), l.RankPairs...),
			func(p report.SummaryLocatePair) bool { return strings.HasPrefix(p.Verdict, "inconclusive") }):
		// A unit within the noise: its step judged the others.
		return "inconclusive"
	}
	return "healthy"
}

func nanGrid(probes, repeats int) [][]float64 {
	g := make([][]float64, probes)
	for i := range g {
		g[i] = make([]float64, repeats)
		for j := range g[i] {
			g[i][j] = math.NaN()
		}
	}
	return g
}

// busBW is nccl-tests' bus bandwidth in GB/s of bytes moved in us on ranks.
func busBW(c coll.Collective, bytes int64, ranks int, us float64) float64 {
	return float64(bytes) / us / 1e3 * c.BusFactor(ranks)
}

// stepSummary says what a step ran and what its sub-communicators cost.
func stepSummary(st phases.PlannedStep, comms []report.LocateCommRow) report.SummaryLocateStep {
	s := report.SummaryLocateStep{Name: st.Name, Title: st.Title, Ran: st.Skip == "", Note: st.Skip, Rounds: len(st.Rounds),
		Schedule: st.Schedule.Kind, Strides: st.Schedule.Strides}
	if s.Note == "" {
		s.Note = st.Note
	}
	for _, r := range st.Rounds {
		s.Units += len(r)
	}
	split, free := map[int]float64{}, map[int]float64{}
	for _, c := range comms {
		if c.Step == st.Name {
			split[c.Round], free[c.Round] = max(split[c.Round], c.SplitUS), max(free[c.Round], c.FreeUS)
		}
	}
	s.SplitUS, s.FreeUS = medianOfMap(split), medianOfMap(free)
	return s
}

func medianOfMap(m map[int]float64) float64 {
	if len(m) == 0 {
		return 0
	}
	var v []float64
	for _, x := range m {
		v = append(v, x)
	}
	return quantile.Median(v)
}

// judgeLevel solves one level (nodes, or ranks) from its steps' data:
// the step of single members is its inside measurement, the step of pairs
// its pairs. excluded are the members of the level above that are
// suspects (for ranks: the ranks of suspect nodes); it returns this
// level's, for the next. crowded ranks (of a node whose ranks outnumber
// its processors) keep their figures but are judged neither suspect nor
// intermittent, nor are their pairs: their verdict says why.
func judgeLevel(out *report.SummaryLocate, plan phases.LocatePlan, level phases.LocateLevel, probes []locate.Probe,
	data map[string]*stepData, threshold float64, excludedRanks []bool, crowded map[int]string) []bool {
	var inside, pairs *phases.PlannedStep
	for i, st := range plan.Steps {
		if st.Level.Name != level.Name || data[st.Name] == nil {
			continue
		}
		if st.Pairs {
			pairs = &plan.Steps[i]
		} else {
			inside = &plan.Steps[i]
		}
	}
	world := 0
	for _, r := range plan.Ranks {
		world += len(r)
	}
	node := make([]int, world) // each rank's node
	for n, ranks := range plan.Ranks {
		for _, r := range ranks {
			node[r] = n
		}
	}
	members := len(plan.Nodes)
	if level.OfRanks {
		members = world
	}
	in := locate.Input{Members: members, Probes: probes, Threshold: threshold}
	if level.OfRanks {
		in.Excluded = excludedRanks
	}
	if inside != nil {
		d := data[inside.Name]
		in.Inside = make([][][]float64, len(probes))
		for pr := range probes {
			in.Inside[pr] = make([][]float64, members)
			for m := range members {
				in.Inside[pr][m] = nanGrid(1, plan.Spec.Repeats)[0]
			}
			for _, k := range d.units {
				in.Inside[pr][k.a] = d.speed[k][pr]
			}
		}
	}
	var keys []unitKey
	if pairs != nil {
		d := data[pairs.Name]
		keys = d.units
		in.Speed = make([][][]float64, len(probes))
		for _, k := range keys {
			in.Pairs = append(in.Pairs, locate.Pair{A: k.a, B: k.b})
		}
		for pr := range probes {
			for _, k := range keys {
				in.Speed[pr] = append(in.Speed[pr], d.speed[k][pr])
			}
		}
	}
	if inside == nil && pairs == nil {
		return make([]bool, world)
	}
	res := locate.Solve(in)
	by := map[string]string{locate.ByInside: stepName(inside), locate.ByPartners: stepName(pairs)}
	judgedStep(out, inside, res.InsideJudged)
	judgedStep(out, pairs, res.PartnersJudged, res.PairsJudged)

	nameOf := func(m int) ([]string, []int) {
		if level.OfRanks {
			return []string{plan.Nodes[node[m]]}, []int{m}
		}
		return []string{plan.Nodes[m]}, []int{}
	}
	pairName := func(k unitKey) ([]string, []int) {
		if level.OfRanks {
			return []string{plan.Nodes[node[k.a]]}, []int{k.a, k.b}
		}
		return []string{plan.Nodes[k.a], plan.Nodes[k.b]}, []int{}
	}
	memberNote, pairNote := confirmLevel(out, &res, in, level, keys, inside, pairs, crowded, by,
		func(m int) string {
			nodes, ranks := nameOf(m)
			return report.SuspectText(suspect(level.Member, nodes, ranks, res.Members[m], probes, plan.Spec), false)
		},
		func(i int) string {
			nodes, ranks := pairName(keys[i])
			return report.SuspectText(suspect(level.Pair, nodes, ranks, res.Pairs[i], probes, plan.Spec), false)
		})
	suspectRanks := make([]bool, world)
	for m, v := range res.Members {
		var named []string // the steps that name it
		for _, b := range v.By {
			named = append(named, by[b])
		}
		if !level.OfRanks {
			n := report.SummaryLocateNode{Host: plan.Nodes[m], Ranks: plan.Ranks[m], Suspect: v.Suspect, Intermittent: v.Intermittent,
				Verdict: unitVerdict(v, probes, named, by), Inside: figures(res.Inside, m), Pairs: figures(res.Partners, m)}
			if note, ok := memberNote[m]; ok {
				n.Verdict = note
			}
			if v.Suspect {
				for _, r := range plan.Ranks[m] {
					suspectRanks[r] = true
				}
			}
			out.Nodes = append(out.Nodes, n)
		} else if _, ok := crowded[m]; ok {
			continue
		} else if v.Suspect {
			suspectRanks[m] = true
		}
		if !v.Suspect && !v.Intermittent {
			continue
		}
		nodes, ranks := nameOf(m)
		s := suspect(level.Member, nodes, ranks, v, probes, plan.Spec)
		s.By = named
		s.Text = report.SuspectText(s, v.Intermittent)
		if v.Suspect {
			out.Suspects = append(out.Suspects, s)
		} else {
			out.Intermittent = append(out.Intermittent, s)
		}
	}
	for i, v := range res.Pairs {
		k := keys[i]
		p := report.SummaryLocatePair{Round: k.round, Figures: figures(res.Pairs, i), Suspect: v.Suspect, Intermittent: v.Intermittent,
			Ranks: []int{}, Verdict: unitVerdict(v, probes, []string{pairs.Name}, map[string]string{"": pairs.Name})}
		if note, ok := pairNote[i]; ok {
			p.Verdict = note
		}
		if p.Verdict == "healthy" && slices.ContainsFunc(p.Figures, func(f report.SummaryLocateFigure) bool { return f.Repeats > 0 && f.SlowRepeats == f.Repeats }) {
			// Slow in every repeat, but no suspect itself: a suspect member
			// explains it (a slowed rank slows each pair it is in), and a
			// row that said "healthy" beside 0.01x would read as a lie.
			for _, m := range []int{k.a, k.b} {
				if res.Members[m].Suspect {
					nodes, ranks := nameOf(m)
					who := nodes[0]
					if level.OfRanks {
						who = fmt.Sprintf("rank %d", ranks[0])
					}
					p.Verdict = "slow through its suspect member, " + who
				}
			}
		}
		if level.OfRanks {
			p.Nodes, p.Ranks = []string{plan.Nodes[node[k.a]]}, []int{k.a, k.b}
			why, ok := crowded[k.a]
			if !ok {
				why, ok = crowded[k.b]
			}
			if ok {
				p.Suspect, p.Intermittent, p.Verdict = false, false, "not judged: "+why
				for i := range p.Figures {
					p.Figures[i].Suspect, p.Figures[i].Intermittent = false, false
				}
				out.RankPairs = append(out.RankPairs, p)
				continue
			}
			out.RankPairs = append(out.RankPairs, p)
		} else {
			p.Nodes = []string{plan.Nodes[k.a], plan.Nodes[k.b]}
			out.Pairs = append(out.Pairs, p)
		}
		if !v.Suspect && !v.Intermittent {
			continue
		}
		s := suspect(level.Pair, p.Nodes, p.Ranks, v, probes, plan.Spec)
		s.By = []string{pairs.Name}
		s.Text = report.SuspectText(s, v.Intermittent)
		if v.Suspect {
			out.Suspects = append(out.Suspects, s)
		} else {
			out.Intermittent = append(out.Intermittent, s)
		}
	}
	nameUnresponsive(out, plan, level, probes, inside, pairs, data, node, suspectRanks, crowded, in.Excluded)
	for r, x := range excludedRanks {
		suspectRanks[r] = suspectRanks[r] || x
	}
	return suspectRanks
}

// judgedStep records on st's summary how its probes were judged: the
// widest healthy spread, and the first reason it cannot call its units
// healthy, with the probe ("" when it can).
func judgedStep(out *report.SummaryLocate, st *phases.PlannedStep, judged ...[]locate.Judgement) {
	if st == nil {
		return
	}
	i := slices.IndexFunc(out.Steps, func(s report.SummaryLocateStep) bool { return s.Name == st.Name })
	if i < 0 {
		return
	}
	s := &out.Steps[i]
	for _, js := range judged {
		for pr, j := range js {
			if j.Spread > s.Spread && !math.IsInf(j.Spread, 0) {
				s.Spread = j.Spread
			}
			if j.Inconclusive != "" && s.Inconclusive == "" {
				s.Inconclusive = j.Detail(out.Threshold) + " (" + report.ProbeText(out.Probes[pr]) + ")"
			}
		}
	}
}

// unitVerdict is a unit's verdict in words: "healthy", "not measured",
// "SUSPECT: bandwidth 0.31x median (pairs)", "INTERMITTENT: slow in 4 of
// 9 repeats, bandwidth (pairs)", or "inconclusive: the spread is too wide
// (ranks)"; by maps the solver's step names to the phase's.
func unitVerdict(v locate.Verdict, probes []locate.Probe, named []string, by map[string]string) string {
	switch {
	case v.Worst < 0:
		return "not measured"
	case v.Suspect:
		return fmt.Sprintf("SUSPECT: %s (%s)", problemText(v, probes), strings.Join(named, ", "))
	case v.Intermittent:
		f := v.Figures[v.Worst]
		return fmt.Sprintf("INTERMITTENT: slow in %d of %d repeats, %s (%s)", f.Dips, f.Repeats, v.Problem(probes), strings.Join(named, ", "))
	case len(v.Unsure) > 0:
		var reasons, where []string
		for _, u := range v.Unsure {
			if !slices.Contains(reasons, u.Reason) {
				reasons = append(reasons, u.Reason)
			}
			w := by[u.By]
			if !slices.Contains(where, w) {
				where = append(where, w)
			}
		}
		return fmt.Sprintf("inconclusive: %s (%s)", strings.Join(reasons, "; "), strings.Join(where, "; "))
	}
	return "healthy"
}

func stepName(s *phases.PlannedStep) string {
	if s == nil {
		return ""
	}
	return s.Name
}

// figures are unit u's figures in vs, or none when vs is nil or it was not
// measured.
func figures(vs []locate.Verdict, u int) []report.SummaryLocateFigure {
	out := []report.SummaryLocateFigure{}
	if vs == nil || vs[u].Figures == nil {
		return out
	}
	for pr, f := range vs[u].Figures {
		if math.IsNaN(f.Ratio) {
			continue
		}
		out = append(out, report.SummaryLocateFigure{Probe: pr, Figure: f.Ratio, BusBWGBps: f.Speed, MedianBusBWGBps: f.Median,
			SlowRepeats: f.SlowRepeats, Dips: f.Dips, Repeats: f.Repeats, Suspect: f.Suspect, Intermittent: f.Intermittent})
	}
	return out
}

func suspect(kind string, nodes []string, ranks []int, v locate.Verdict, probes []locate.Probe, spec phases.LocateSpec) report.SummaryLocateSuspect {
	f := v.Figures[v.Worst]
	p := spec.Probes()[v.Worst]
	return report.SummaryLocateSuspect{Kind: kind, Nodes: nodes, Ranks: ranks, Problem: v.Problem(probes), By: []string{},
		Collective: p.Collective.Name, SizeBytes: p.SizeBytes, Figure: f.Ratio, BusBWGBps: f.Speed, MedianBusBWGBps: f.Median,
		SlowRepeats: slowRepeats(v), Repeats: f.Repeats}
}

// slowRepeats are the repeats a unit was slow in: below the threshold for
// a suspect, beyond the spread of single measurements for an intermittent
// one.
func slowRepeats(v locate.Verdict) int {
	if v.Intermittent {
		return v.Figures[v.Worst].Dips
	}
	return v.Figures[v.Worst].SlowRepeats
}

// problemText is "bandwidth 0.31x median".
func problemText(v locate.Verdict, probes []locate.Probe) string {
	return fmt.Sprintf("%s %s median", v.Problem(probes), report.FigureText(v.Figures[v.Worst].Ratio))
}
