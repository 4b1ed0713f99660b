package phase

import (
	"fmt"
	"math"
	"slices"
	"time"

	"rsag/internal/quantile"
	"rsag/locate"
	"rsag/phases"
	"rsag/report"
)

// SuspectUnresponsive is the kind of a suspect that could not finish a
// probe within the deadline (phases.LocateSpec.OpDeadline): a node, a
// link, a rank or a rank pair, by its nodes and ranks.
const SuspectUnresponsive = "unresponsive"

// nameUnresponsive names, at one level, what abandoned probes
// (phases.LocateAbandoned): a member whose inside unit abandoned one, or
// whose pairs did with most of its partners and every one of up to three
// (the rule a slow member's pairs follow, locate's partnerSpeed); then
// each pair that abandoned one while neither member is named. Its
// evidence is against a fixed deadline, not the healthy units' spread, so
// it is named whether or not its step could judge the others. It takes
// the place of any suspect of the same member; suspectRanks gains a named
// node's ranks.
func nameUnresponsive(out *report.SummaryLocate, plan phases.LocatePlan, level phases.LocateLevel, probes []locate.Probe,
	inside, pairs *phases.PlannedStep, data map[string]*stepData, node []int, suspectRanks []bool, crowded map[int]string, excluded []bool) {
	// A crowded rank waits for a processor, not for its node, and a rank of
	// a suspect node is its node's: neither is judged here either.
	notJudged := func(m int) bool {
		_, ok := crowded[m]
		return level.OfRanks && (ok || m < len(excluded) && excluded[m])
	}
	type evidence struct {
		step string
		unit unitKey
		of   int // partners abandoned with, of partners (pairs only)
		all  int
	}
	named := map[int]evidence{}
	if inside != nil {
		d := data[inside.Name]
		for _, k := range d.units {
			if len(d.abandoned[k]) > 0 {
				named[k.a] = evidence{step: inside.Name, unit: k}
			}
		}
	}
	if pairs == nil && len(named) == 0 {
		return
	}
	var d *stepData
	partners, stuck := map[int][]unitKey{}, map[int][]unitKey{}
	if pairs != nil {
		d = data[pairs.Name]
		for _, k := range d.units {
			for _, m := range []int{k.a, k.b} {
				partners[m] = append(partners[m], k)
				if len(d.abandoned[k]) > 0 {
					stuck[m] = append(stuck[m], k)
				}
			}
		}
		for m, ks := range stuck {
			n := len(partners[m])
			if _, ok := named[m]; !ok && !notJudged(m) && len(ks) >= max(n/2+1, min(n, 3)) {
				named[m] = evidence{step: pairs.Name, unit: worstUnit(d, ks, plan), of: len(ks), all: n}
			}
		}
	}
	members := make([]int, 0, len(named))
	for m := range named {
		members = append(members, m)
	}
	slices.Sort(members)
	for _, m := range members {
		e := named[m]
		var nodes []string
		ranks, who := []int{}, ""
		if level.OfRanks {
			nodes, ranks, who = []string{plan.Nodes[node[m]]}, []int{m}, fmt.Sprintf("rank %d on %s", m, plan.Nodes[node[m]])
		} else {
			nodes, who = []string{plan.Nodes[m]}, plan.Nodes[m]
		}
		s, what, short := unresponsiveSuspect(plan, probes, data[e.step], e.unit, e.step, nodes, ranks)
		if e.all > 0 {
			what += fmt.Sprintf(", with %d of %d partners", e.of, e.all)
		}
		s.Text = who + " (" + what + ")"
		// The member's own suspect, if any, is this one.
		same := func(x report.SummaryLocateSuspect) bool {
			return x.Kind == level.Member && slices.Equal(x.Nodes, s.Nodes) && slices.Equal(x.Ranks, s.Ranks)
		}
		out.Suspects = append(slices.DeleteFunc(out.Suspects, same), s)
		out.Intermittent = slices.DeleteFunc(out.Intermittent, same)
		if !level.OfRanks {
			for i := range out.Nodes {
				if out.Nodes[i].Host == plan.Nodes[m] {
					out.Nodes[i].Suspect, out.Nodes[i].Intermittent = true, false
					out.Nodes[i].Verdict = "UNRESPONSIVE: " + short + " (" + e.step + ")"
				}
			}
			for _, r := range plan.Ranks[m] {
				suspectRanks[r] = true
			}
		} else {
			suspectRanks[m] = true
		}
	}
	if pairs == nil {
		return
	}
	for _, k := range d.units {
		_, na := named[k.a]
		_, nb := named[k.b]
		if len(d.abandoned[k]) == 0 || na || nb || notJudged(k.a) || notJudged(k.b) {
			continue
		}
		var nodes []string
		ranks, who := []int{}, ""
		if level.OfRanks {
			nodes, ranks = []string{plan.Nodes[node[k.a]]}, []int{k.a, k.b}
			who = fmt.Sprintf("ranks %d-%d on %s", k.a, k.b, nodes[0])
		} else {
			nodes = []string{plan.Nodes[k.a], plan.Nodes[k.b]}
			who = nodes[0] + "-" + nodes[1]
		}
		s, what, short := unresponsiveSuspect(plan, probes, d, k, pairs.Name, nodes, ranks)
		s.Text = fmt.Sprintf("%s (%s, %s)", who, level.Pair, what)
		out.Suspects = append(out.Suspects, s)
		list := &out.Pairs
		if level.OfRanks {
			list = &out.RankPairs
		}
		for i := range *list {
			p := &(*list)[i]
			if p.Round == k.round && slices.Equal(p.Nodes, nodes) && slices.Equal(p.Ranks, ranks) {
				p.Suspect, p.Intermittent, p.Verdict = true, false, "UNRESPONSIVE: "+short+" ("+pairs.Name+")"
			}
		}
	}
}

// worstUnit is the unit of ks whose abandoned probe is furthest below its
// step's median.
func worstUnit(d *stepData, ks []unitKey, plan phases.LocatePlan) unitKey {
	best, worst := ks[0], math.Inf(1)
	for _, k := range ks {
		if _, f, _ := worstAbandoned(d, k, plan); f < worst {
			best, worst = k, f
		}
	}
	return best
}

// worstAbandoned is unit k's abandoned probe furthest below the median of
// the probe's measurements over the step's units and repeats: the probe,
// its figure (the one operation's bus bandwidth over that median; 0
// without a median) and that median.
func worstAbandoned(d *stepData, k unitKey, plan phases.LocatePlan) (int, float64, float64) {
	pr, fig, med := -1, math.Inf(1), math.NaN()
	keys := make([]int, 0, len(d.abandoned[k]))
	for p := range d.abandoned[k] {
		keys = append(keys, p)
	}
	slices.Sort(keys)
	for _, p := range keys {
		var all []float64
		for _, u := range d.units {
			for _, x := range d.speed[u][p] {
				if !math.IsNaN(x) {
					all = append(all, x)
				}
			}
		}
		m, f := math.NaN(), 0.0
		if len(all) > 0 {
			m = quantile.Median(all)
			f = abandonedSpeed(d, k, p, plan) / m
		}
		if pr < 0 || f < fig {
			pr, fig, med = p, f, m
		}
	}
	return pr, fig, med
}

// abandonedSpeed is the bus bandwidth of unit k's one operation of probe p.
func abandonedSpeed(d *stepData, k unitKey, p int, plan phases.LocatePlan) float64 {
	row := d.abandoned[k][p]
	return busBW(plan.Spec.Probes()[p].Collective, row.Bytes, row.Ranks, row.DurationUS)
}

// unresponsiveSuspect is unit k's suspect (without its text), its
// evidence in words, "unresponsive: AllReduce 16M took 13s, past 2.143s,
// 0.0031x median", and in a few for a verdict, "AllReduce 16M 13s > 2.143s".
func unresponsiveSuspect(plan phases.LocatePlan, probes []locate.Probe, d *stepData, k unitKey, step string,
	nodes []string, ranks []int) (report.SummaryLocateSuspect, string, string) {
	pr, fig, med := worstAbandoned(d, k, plan)
	p := plan.Spec.Probes()[pr]
	row := d.abandoned[k][pr]
	s := report.SummaryLocateSuspect{Kind: SuspectUnresponsive, Nodes: nodes, Ranks: ranks, Problem: probes[pr].Problem(),
		By: []string{step}, Collective: p.Collective.Name, SizeBytes: p.SizeBytes, Figure: fig,
		BusBWGBps: abandonedSpeed(d, k, pr, plan), MedianBusBWGBps: med, SlowRepeats: 1, Repeats: 1}
	if math.IsNaN(med) {
		s.MedianBusBWGBps = 0
	}
	took := time.Duration(row.DurationUS * float64(time.Microsecond))
	what := fmt.Sprintf("unresponsive: %s took %s, past %s", probes[pr].Name, took.Round(time.Millisecond),
		plan.Spec.OpDeadline.Round(time.Millisecond))
	if fig > 0 {
		what += ", " + report.FigureText(fig) + " median"
	}
	short := fmt.Sprintf("%s %s > %s", probes[pr].Name, took.Round(time.Millisecond), plan.Spec.OpDeadline.Round(time.Millisecond))
	return s, what, short
}
