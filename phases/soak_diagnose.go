package phases

import (
	"fmt"
	"slices"
	"strings"

	"rsag/coll"
)

// diagnose reasons from what every rank found wrong in one iteration: for
// each mode, the first step whose output was wrong anywhere is where the
// fault arose (its inputs, the outputs of the step before, were right on
// every rank); the ranks and chunks it was wrong in tell who: one rank
// wrong in its own chunk (its ReduceScatter shard) is a reduction fault on
// that rank; one rank wrong in others' chunks received them wrong; every
// rank wrong in the same chunks got them wrong from the rank that holds
// them. Comparing the modes on the same input says which path it is in.
// It returns the verdict and the suspect ranks; nothing in it names a
// collective: the records say what each step is.
func diagnose(iter int, c coll.Case, modes []coll.TimedMode, faults []SoakFault, hosts []string) (string, []int) {
	world := len(hosts)
	on := func(r int) string { return fmt.Sprintf("rank %d on %s", r, hosts[r]) }
	var wrong, right []string
	var suspects []int
	var findings, evidence []string
	for _, m := range modes {
		var mine []SoakFault
		for _, f := range faults {
			if f.Mode == m.Name {
				mine = append(mine, f)
			}
		}
		if len(mine) == 0 {
			right = append(right, m.Title)
			continue
		}
		wrong = append(wrong, m.Title)
		first := slices.MinFunc(mine, func(a, b SoakFault) int { return a.Step - b.Step }).Step
		var at []SoakFault
		for _, f := range mine {
			if f.Step == first {
				at = append(at, f)
			}
		}
		step := stepText(at[0], m)
		finding, who := blame(step, at, world, on)
		suspects = append(suspects, who...)
		// What the later steps of the mode then carried.
		for s := first + 1; s < len(m.Steps); s++ {
			var ranks []int
			chunks := map[int]string{}
			var label string
			for _, f := range mine {
				if f.Step == s {
					ranks, label = append(ranks, f.Rank), stepText(f, m)
					for _, q := range f.Chunks {
						chunks[q] = ""
					}
				}
			}
			if len(ranks) > 0 {
				finding += fmt.Sprintf("; %s then was wrong on %s, in %s", label, ranksText(ranks, world), chunksText(keys(chunks)))
			}
		}
		findings = append(findings, finding)
		for _, same := range sameEvidence(at) {
			evidence = append(evidence, faultText(same, m, world))
		}
	}
	paths := strings.Join(wrong, " and ") + " wrong"
	if len(right) > 0 {
		paths += ", " + strings.Join(right, " and ") + " right, on the same input"
	}
	slices.Sort(suspects)
	suspects = slices.Compact(suspects)
	suspect := "no single rank stands out"
	if len(suspects) > 0 {
		var names []string
		for _, r := range suspects {
			names = append(names, on(r))
		}
		suspect = "suspect " + strings.Join(names, ", ")
	}
	const most = 4 // ranks' evidence quoted; the rest are in soak.csv and summary.json
	more := ""
	if len(evidence) > most {
		more = fmt.Sprintf("; and %d more", len(evidence)-most)
		evidence = evidence[:most]
	}
	return fmt.Sprintf("iteration %d (%s): %s. %s: %s. Evidence: %s%s", iter, soakCaseText(c), paths, suspect,
		strings.Join(findings, "; "), strings.Join(evidence, "; "), more), suspects
}

// blame says who the faults at one step, the first wrong one of its mode,
// point to.
func blame(step string, at []SoakFault, world int, on func(int) string) (string, []int) {
	var ranks []int
	common := map[int]int{}
	for _, f := range at {
		ranks = append(ranks, f.Rank)
		for _, q := range f.Chunks {
			common[q]++
		}
	}
	if len(at) == world {
		var shared []int
		for q, n := range common {
			if n == world {
				shared = append(shared, q)
			}
		}
		slices.Sort(shared)
		if len(shared) > 0 && len(shared) < world {
			var who []string
			for _, q := range shared {
				who = append(who, on(q))
			}
			return fmt.Sprintf("in %s every rank's output was wrong in %s, the part %s holds: it was wrong before it left there, "+
				"or on its way from there to every rank (a transfer from that chunk's owner)", step, chunksText(shared), strings.Join(who, ", ")), shared
		}
		return fmt.Sprintf("in %s every rank's output was wrong, in every chunk or each in others: no one rank or transfer explains it "+
			"(a reduction wrong everywhere, such as a rank's input missing from it)", step), nil
	}
	var parts []string
	for _, f := range at {
		what := fmt.Sprintf("%s's %s output was wrong in %s while every other rank's was right", on(f.Rank), step, chunksText(f.Chunks))
		switch allKinds(f.Kinds) {
		case "reduced":
			what += fmt.Sprintf(": a reduction fault on %s (it combined %s from every rank's data there)", on(f.Rank), itOrThem(f.Chunks))
		case "kept":
			what += fmt.Sprintf(": %s held %s right before this step and not after it (a fault in its own copy)", on(f.Rank), itOrThem(f.Chunks))
		default:
			what += fmt.Sprintf(": %s received %s wrong, or corrupted %s after", on(f.Rank), itOrThem(f.Chunks), itOrThem(f.Chunks))
		}
		parts = append(parts, what)
	}
	return strings.Join(parts, "; "), ranks
}

// sameEvidence groups faults whose evidence reads the same but for the rank.
func sameEvidence(fs []SoakFault) [][]SoakFault {
	var out [][]SoakFault
	key := func(f SoakFault) string {
		return fmt.Sprint(f.Wrong, f.Elements, f.Chunks, f.Index, f.Expected, f.Got)
	}
	for _, f := range fs {
		i := slices.IndexFunc(out, func(g []SoakFault) bool { return key(g[0]) == key(f) })
		if i < 0 {
			out = append(out, nil)
			i = len(out) - 1
		}
		out[i] = append(out[i], f)
	}
	return out
}

func keys(m map[int]string) []int {
	var out []int
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
