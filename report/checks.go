package report

import (
	"fmt"
	"io"
	"strings"
)

// The checks and terminal tables of the phases whose results summary.json
// has a section for (report's own structs): each registers here, as its
// CSVs do in files.go, and the list (verdicts.go) and WriteTables read them
// like any other phase's.
func init() {
	RegisterChecks(Checker{Phase: Contracts, Title: "Contracts", Has: func(s Summary) bool { return len(s.Contracts) > 0 }, Checks: contractChecks,
		Table: func(w io.Writer, s Summary) error { return ContractsTable(w, s.Contracts, s.WorldSize) }})
	RegisterChecks(Checker{Phase: Timing, Title: "Timing results", Has: func(s Summary) bool { return len(s.Timing) > 0 }, Checks: timingChecks,
		Table: timingTables})
	RegisterChecks(Checker{Phase: Memory, Title: "Memory", Has: func(s Summary) bool { return len(s.Memory) > 0 }, Checks: memoryChecks,
		Table: func(w io.Writer, s Summary) error { return MemoryTable(w, s.Memory) }})
	RegisterChecks(Checker{Phase: Numerics, Title: "Numerics", Has: func(s Summary) bool { return len(s.Numerics) > 0 }, Checks: numericsChecks,
		Table: func(w io.Writer, s Summary) error { return NumericsTable(w, s.Numerics) }})
	RegisterChecks(Checker{Phase: Locate, Title: "Locate", Has: func(s Summary) bool { return s.Locate != nil }, Checks: locateChecks,
		Table: func(w io.Writer, s Summary) error { return LocateTable(w, *s.Locate) }})
	RegisterChecks(Checker{Phase: Soak, Title: "Soak", Has: func(s Summary) bool { return s.Soak != nil }, Checks: soakChecks})
}

func contractChecks(s Summary) PhaseVerdict {
	var pv PhaseVerdict
	for _, k := range s.Contracts {
		c := Check{Name: k.Name, Outcome: Held, Kind: KindContract, Message: "held on every rank: " + k.Detail}
		if len(k.FailedRanks) > 0 || k.HeldOn < s.WorldSize {
			c.Outcome, c.Message = Failed, fmt.Sprintf("%s failed on rank(s) %s: %s", k.Name, listText(k.FailedRanks), k.Detail)
		}
		pv.Checks = append(pv.Checks, c)
	}
	pv.Text = fmt.Sprintf("all %d held on every one of %s", len(s.Contracts), plural(s.WorldSize, "rank", "ranks"))
	return pv
}

// timingChecks are each case's output and each run's bus-bandwidth gate
// (GatesOf). A case whose samples were not all checked (timing.check =
// "last") says so: it held in what was looked at, no more.
func timingChecks(s Summary) PhaseVerdict {
	var pv PhaseVerdict
	unchecked, samples := 0, 0
	for _, st := range s.Timing {
		name := GateResult{Stat: st}.Name() + " " + string(st.Mode)
		c := Check{Name: name + ": output correct", Outcome: Held, Kind: KindCheck, Message: "every sample's output correct on every rank"}
		if st.Unchecked > 0 {
			c.Message = fmt.Sprintf("the checked samples' outputs correct on every rank; %d samples (over ranks) not checked (timing.check = \"last\")", st.Unchecked)
		}
		if !st.Correct {
			c.Outcome, c.Message = Failed, name+": a timed output was wrong on some rank"
		}
		unchecked += st.Unchecked
		samples += (st.Samples + st.Discarded) * max(st.Ranks, 1)
		pv.Checks = append(pv.Checks, c)
	}
	for _, g := range Gates(s.Timing, GatesOf(s)) {
		c := Check{Name: "gate " + g.Name() + fmt.Sprintf(": busbw%s >= %.2f GB/s", g.statisticText(), g.MinGBps),
			Outcome: Held, Kind: KindGate, Message: "held: " + g.Held()}
		if !g.Passed() {
			c.Outcome, c.Message = Failed, g.Failure()
		}
		pv.Checks = append(pv.Checks, c)
	}
	cases := plural(len(s.Timing), "case", "cases")
	pv.Text = fmt.Sprintf("every sample of the %s checked correct on every rank", cases)
	if unchecked > 0 {
		pv.Note = "only the last samples checked"
		pv.Text = fmt.Sprintf("only the last sample of each mode was checked (timing.check = \"last\"), correct on every rank in the %s; "+
			"%d of %d samples (over ranks) were not checked: a wrong result among them would not be seen", cases, unchecked, max(samples, unchecked))
	}
	if n := len(pv.Checks) - len(s.Timing); n > 0 {
		pv.Text += "; " + plural(n, "bus-bandwidth gate", "bus-bandwidth gates") + " held"
	}
	return pv
}

// GatesOf are the bus-bandwidth gates of the summary's config: each run's
// min_busbw_gbps and min_busbw_statistic, by run name.
func GatesOf(s Summary) map[string]Gate {
	gates := map[string]Gate{}
	cfg, _ := s.Config.(map[string]any)
	runs, _ := cfg["runs"].([]any)
	for _, r := range runs {
		m, _ := r.(map[string]any)
		name, _ := m["name"].(string)
		statistic, _ := m["min_busbw_statistic"].(string)
		if min, ok := m["min_busbw_gbps"].(float64); ok && min > 0 {
			gates[name] = Gate{MinGBps: min, Statistic: statistic}
		}
	}
	return gates
}

func memoryChecks(s Summary) PhaseVerdict {
	var pv PhaseVerdict
	var differ []string
	for _, m := range s.Memory {
		c := Check{Name: m.Mode + ": output correct", Outcome: Held, Kind: KindCheck, Message: "checked element by element on every rank"}
		if !m.Correct {
			c.Outcome, c.Message = Failed, m.Mode+": a memory run's output was wrong on some rank"
		}
		if !m.MatchesAnalytic {
			differ = append(differ, m.Mode)
		}
		pv.Checks = append(pv.Checks, c)
	}
	pv.Text = plural(len(s.Memory), "mode", "modes") + " checked element by element"
	if len(differ) == 0 {
		pv.Text += "; every delta equals its analytic value"
	} else {
		pv.Text += "; deltas differ from the analytic values in " + strings.Join(differ, ", ")
	}
	return pv
}

func numericsChecks(s Summary) PhaseVerdict {
	var pv PhaseVerdict
	differ, worstRatio := 0, 0.0
	for _, n := range s.Numerics {
		name := fmt.Sprintf("%s %s", n.DType, SizeText(n.SizeBytes))
		c := Check{Name: name + ": within the error bound", Outcome: Held, Kind: KindCheck, Message: n.Verdict()}
		if !n.WithinBound {
			c.Outcome, c.Message = Failed, fmt.Sprintf("%s: error %.3gx the bound of summing %d terms: a bug in the library or the hardware, not rounding",
				name, n.MaxBoundRatio, s.WorldSize)
		}
		if !n.BitwiseEqual {
			differ++
		}
		worstRatio = max(worstRatio, n.MaxBoundRatio)
		pv.Checks = append(pv.Checks, c)
	}
	pv.Text = fmt.Sprintf("AllReduce and RS + AG bitwise equal in all %d dtype and size pairs", len(s.Numerics))
	if differ > 0 {
		pv.Text = fmt.Sprintf("the two paths differ in the last bits in %d of %d dtype and size pairs, all within the bound "+
			"(the largest error is %.3g of it): expected, compare them within the bound, not bitwise", differ, len(s.Numerics), worstRatio)
	}
	return pv
}

func soakChecks(s Summary) PhaseVerdict {
	k := *s.Soak
	c := Check{Name: fmt.Sprintf("%d iterations: every output correct", k.Iterations), Outcome: Held, Kind: KindCheck,
		Message: fmt.Sprintf("%s, every output of every path right (seed %d)", plural(k.Iterations, "iteration", "iterations"), k.Seed)}
	pv := PhaseVerdict{Checks: []Check{c}}
	if k.FailedIterations == 0 {
		return pv
	}
	pv.Checks[0].Outcome, pv.Checks[0].Message = Failed, fmt.Sprintf("%d of %d iterations failed: %s", k.FailedIterations, k.Iterations, k.Verdict)
	// The ranks the first wrong iteration's diagnosis names, with their
	// hosts: findings, as locate's suspects are.
	for _, r := range k.SuspectRanks {
		name := fmt.Sprintf("rank %d", r)
		for _, f := range k.Faults {
			if f.Rank == r {
				name += " on " + f.Host
				break
			}
		}
		pv.Checks = append(pv.Checks, Check{Name: name, Outcome: Failed, Kind: KindSuspect, Message: "a wrong result in the soak"})
	}
	return pv
}

// locateChecks are one check per node (failed when it is a suspect, with
// its figure: "node3: bandwidth 0.31x median"; inconclusive when its
// verdict is), one per suspect or intermittent unit that is not a node,
// and one per step that could not judge or did not run. A suspect is a
// finding (KindSuspect); an intermittent unit or a step that could not
// judge is inconclusive, never held.
func locateChecks(s Summary) PhaseVerdict {
	l := *s.Locate
	var pv PhaseVerdict
	node := map[string]SummaryLocateSuspect{}
	for _, sp := range l.Suspects {
		if sp.Kind == "node" && len(sp.Nodes) == 1 {
			node[sp.Nodes[0]] = sp
		}
	}
	for _, n := range l.Nodes {
		c := Check{Name: n.Host, Outcome: Held, Kind: KindSuspect, Message: n.Verdict}
		sp, named := node[n.Host]
		switch {
		case named:
			c.Outcome, c.Message = Failed, sp.FigureText()
		case n.Suspect:
			c.Outcome = Failed
		case n.Intermittent || strings.HasPrefix(n.Verdict, "inconclusive"):
			c.Outcome, c.Message = Inconclusive, strings.TrimPrefix(n.Verdict, "inconclusive: ")
		case n.Verdict == "not measured":
			c.Outcome = NotRun
		}
		pv.Checks = append(pv.Checks, c)
	}
	listed := map[string]bool{}
	for _, n := range l.Nodes {
		listed[n.Host] = true
	}
	for _, sp := range l.Suspects {
		if sp.Kind != "node" || len(sp.Nodes) != 1 || !listed[sp.Nodes[0]] {
			pv.Checks = append(pv.Checks, Check{Name: sp.Text, Outcome: Failed, Kind: KindSuspect, Message: sp.Text})
		}
	}
	for _, sp := range l.Intermittent {
		if sp.Kind != "node" || len(sp.Nodes) != 1 {
			pv.Checks = append(pv.Checks, Check{Name: sp.Text, Outcome: Inconclusive, Kind: KindSuspect, Message: "intermittent: " + sp.Text})
		}
	}
	for _, st := range l.Steps {
		switch {
		case !st.Ran:
			pv.Checks = append(pv.Checks, Check{Name: st.Title, Outcome: NotRun, Kind: KindStep, Message: st.Note})
		case st.Inconclusive != "":
			pv.Checks = append(pv.Checks, Check{Name: st.Title, Outcome: Inconclusive, Kind: KindStep, Message: st.Inconclusive})
		}
	}
	if l.Verdict == "inconclusive" && !hasOutcome(pv.Checks, Inconclusive) {
		pv.Checks = append(pv.Checks, Check{Name: "verdict", Outcome: Inconclusive, Kind: KindStep, Message: "the phase could not judge its units"})
	}
	switch {
	case len(l.Suspects) > 0:
		pv.Text = plural(len(l.Suspects), "suspect", "suspects") + ": " + strings.Join(SuspectTexts(&l), "; ")
	case len(pv.Checks) == 0 || !hasOutcome(pv.Checks, Held):
		// finish says what the checks say.
	default:
		pv.Text = fmt.Sprintf("no node, link or rank below %.2gx the median in every repeat", l.Threshold)
		for _, st := range l.Steps {
			// A sampled schedule never tried some pairs: their links are
			// neither healthy nor suspect (the step's note names them).
			if st.Ran && st.Schedule == "sampled" {
				pv.Text = fmt.Sprintf("no node, rank or tried link below %.2gx the median in every repeat; %s: %s",
					l.Threshold, st.Title, st.Note)
				break
			}
		}
	}
	return pv
}

func hasOutcome(cs []Check, o Outcome) bool {
	for _, c := range cs {
		if c.Outcome == o {
			return true
		}
	}
	return false
}
