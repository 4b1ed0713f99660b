package phase

import (
	"fmt"
	"slices"
	"strings"

	"rsag/locate"
	"rsag/phases"
	"rsag/report"
)

// What may name a suspect (issue 57): a step that cannot call its units
// healthy (its healthy units spread wider than the threshold, too few
// units or repeats, crowded ranks) cannot tell a slow unit from its noise
// either, so it names none. What it would have named is said as
// "unconfirmed" in the step's inconclusive line and the unit's verdict,
// never in the suspects, which a health job drains from.

// noisyRounds are the rounds of a pair step in which every judged pair, two
// or more, is a suspect: the pairs of a round run at the same time, so a
// whole round slow in every repeat is that round's moment on a shared
// machine (a CPU hog, another job), not each of its links. judged says
// which pairs count (neither member a suspect, excluded or not judged).
func noisyRounds(pairs []locate.Verdict, keys []unitKey, judged func(i int) bool) []int {
	count, slow := map[int]int{}, map[int]int{}
	for i, v := range pairs {
		if !judged(i) {
			continue
		}
		count[keys[i].round]++
		if v.Suspect {
			slow[keys[i].round]++
		}
	}
	var out []int
	for r, n := range count {
		if n >= 2 && slow[r] == n {
			out = append(out, r)
		}
	}
	slices.Sort(out)
	return out
}

// addInconclusive adds why to step st's inconclusive line.
func addInconclusive(out *report.SummaryLocate, st string, why string) {
	i := slices.IndexFunc(out.Steps, func(s report.SummaryLocateStep) bool { return s.Name == st })
	if i < 0 || why == "" {
		return
	}
	if out.Steps[i].Inconclusive == "" {
		out.Steps[i].Inconclusive = why
		return
	}
	out.Steps[i].Inconclusive += "; " + why
}

// inconclusiveStep says whether step st (nil: none) could not judge.
func inconclusiveStep(out *report.SummaryLocate, st string) bool {
	i := slices.IndexFunc(out.Steps, func(s report.SummaryLocateStep) bool { return s.Name == st })
	return i >= 0 && out.Steps[i].Inconclusive != ""
}

// unconfirm makes a suspect of an inconclusive step no suspect: its figures
// stay, none of them marked a suspect.
func unconfirm(v *locate.Verdict) {
	v.Suspect = false
	for i := range v.Figures {
		v.Figures[i].Suspect = false
	}
}

// unconfirmedText says, for a step's inconclusive line, what it would
// have named: "unconfirmed: node4 (bandwidth 0.076x median)".
func unconfirmedText(texts []string) string {
	if len(texts) == 0 {
		return ""
	}
	if len(texts) > shownUnconfirmed {
		return fmt.Sprintf("unconfirmed: %s and %d more (their verdicts say which)", strings.Join(texts[:shownUnconfirmed], ", "),
			len(texts)-shownUnconfirmed)
	}
	return "unconfirmed: " + strings.Join(texts, ", ")
}

// shownUnconfirmed bounds the units a step's line names as unconfirmed;
// the nodes' and pairs' verdicts say it of each.
const shownUnconfirmed = 4

// unconfirmedVerdict is the verdict of a unit an inconclusive step would
// have named.
func unconfirmedVerdict(v locate.Verdict, probes []locate.Probe, steps []string) string {
	return fmt.Sprintf("inconclusive: unconfirmed %s (%s)", problemText(v, probes), strings.Join(steps, ", "))
}

// confirmLevel applies the rules above to one level's result, before its
// summary is written: a round whose every judged pair is a suspect makes
// the pair step inconclusive, and every suspect named only by inconclusive
// steps becomes unconfirmed (no suspect; its text in the step's line).
// It returns the verdicts of the unconfirmed members and pairs; memberText
// and pairText name a member's and a pair's would-be suspect.
func confirmLevel(out *report.SummaryLocate, res *locate.Result, in locate.Input, level phases.LocateLevel, keys []unitKey,
	inside, pairs *phases.PlannedStep, crowded map[int]string, by map[string]string,
	memberText, pairText func(int) string) (memberNote, pairNote map[int]string) {
	memberNote, pairNote = map[int]string{}, map[int]string{}
	notJudged := func(m int) bool {
		if m < len(in.Excluded) && in.Excluded[m] {
			return true
		}
		_, ok := crowded[m]
		return ok && level.OfRanks
	}
	if pairs != nil {
		judged := func(i int) bool {
			k := keys[i]
			return !res.Members[k.a].Suspect && !res.Members[k.b].Suspect && !notJudged(k.a) && !notJudged(k.b)
		}
		if rounds := noisyRounds(res.Pairs, keys, judged); len(rounds) > 0 {
			var rs []string
			for _, r := range rounds {
				rs = append(rs, fmt.Sprint(r))
			}
			addInconclusive(out, pairs.Name, fmt.Sprintf("every pair of round %s was slow in every repeat: that round's noise, "+
				"not its links", strings.Join(rs, ", ")))
		}
	}
	unsure := map[string]bool{
		locate.ByInside:   inside != nil && inconclusiveStep(out, inside.Name),
		locate.ByPartners: pairs != nil && inconclusiveStep(out, pairs.Name),
	}
	unconfirmed := map[string][]string{} // step: what it would have named
	var steps []string                   // in the order they first say something
	note := func(st, text string) {
		if !slices.Contains(steps, st) {
			steps = append(steps, st)
		}
		unconfirmed[st] = append(unconfirmed[st], text)
	}
	for m := range res.Members {
		v := &res.Members[m]
		if !v.Suspect || notJudged(m) {
			continue
		}
		var keep, dropped []string
		for _, b := range v.By {
			if unsure[b] {
				dropped = append(dropped, by[b])
			} else {
				keep = append(keep, b)
			}
		}
		if len(keep) > 0 {
			v.By = keep
			continue
		}
		text := memberText(m)
		for _, st := range dropped {
			note(st, text)
		}
		memberNote[m] = unconfirmedVerdict(*v, in.Probes, dropped)
		unconfirm(v)
	}
	if unsure[locate.ByPartners] {
		for i := range res.Pairs {
			v := &res.Pairs[i]
			if !v.Suspect || notJudged(keys[i].a) || notJudged(keys[i].b) {
				continue
			}
			note(pairs.Name, pairText(i))
			pairNote[i] = unconfirmedVerdict(*v, in.Probes, []string{pairs.Name})
			unconfirm(v)
		}
	}
	for _, st := range steps {
		addInconclusive(out, st, unconfirmedText(unconfirmed[st]))
	}
	return memberNote, pairNote
}
