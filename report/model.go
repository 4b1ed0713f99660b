package report

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"rsag/coll"
	"rsag/model"
)

// SummaryCrossover is where a decomposition of AllReduce (Mode: decomposed,
// or hierarchical) stops costing more than 5% over direct, for one case:
// measured and from the fits, with its extra latency and bandwidth ratio.
// Part of summary.json.
type SummaryCrossover struct {
	Mode coll.Mode `json:"mode"`
	model.Crossover
}

// MarshalJSON writes the crossover with its extra latency and bandwidth
// ratio null when they do not come from two fits (from_fits false), not
// 0, which a reader would take for a measurement.
func (c SummaryCrossover) MarshalJSON() ([]byte, error) {
	j := struct {
		Mode coll.Mode `json:"mode"`
		coll.Case
		Measured       model.Crossing `json:"measured"`
		Fitted         model.Crossing `json:"fitted"`
		FromFits       bool           `json:"from_fits"`
		ExtraLatencyUS *float64       `json:"extra_latency_us"`
		BandwidthRatio *float64       `json:"bandwidth_ratio"`
	}{Mode: c.Mode, Case: c.Case, Measured: c.Measured, Fitted: c.Fitted, FromFits: c.FromFits}
	if c.FromFits {
		j.ExtraLatencyUS, j.BandwidthRatio = &c.ExtraLatencyUS, &c.BandwidthRatio
	}
	return json.Marshal(j)
}

// SummaryBreakdown is where a decomposition's time goes in one case: at
// each size, each part's median (its steps timed alone) and share, and
// what they leave unexplained. Part of summary.json.
type SummaryBreakdown struct {
	Mode coll.Mode `json:"mode"`
	model.Breakdowns
}

// FitsOf fits the Hockney model to every case and mode of stats, then, for
// every mode that is a decomposition of AllReduce (coll's records say
// which, and what its parts are), compares it with direct and splits its
// time between its parts.
func FitsOf(stats []TimingStat) ([]model.Fit, []SummaryCrossover, []SummaryBreakdown) {
	points := make([]model.Point, len(stats))
	for i, s := range stats {
		points[i] = model.Point{Case: s.Case, MedianUS: s.MedianUS, P10US: s.P10US, P90US: s.P90US}
	}
	sw := model.NewSweep(model.Group(points))
	var cross []SummaryCrossover
	var shares []SummaryBreakdown
	for _, name := range coll.Modes {
		m, _ := coll.ModeOf(name)
		if len(m.Parts) == 0 {
			continue
		}
		cs, bs := sw.Compare(model.Modes{Direct: coll.Direct, Decomposed: m.Name, Parts: m.Parts})
		for _, c := range cs {
			cross = append(cross, SummaryCrossover{Mode: m.Name, Crossover: c})
		}
		for _, b := range bs {
			shares = append(shares, SummaryBreakdown{Mode: m.Name, Breakdowns: b})
		}
	}
	return sw.Fits, cross, shares
}

// varyingDims returns the case's dimensions (coll.Dims) that vary over
// cases; one with a single value over the sweep is left out of the
// columns.
func varyingDims(cases []coll.Case) (names []string, of []func(coll.Case) string) {
	for _, d := range coll.Dims {
		if len(uniqueInOrder(cases, d.Text)) > 1 {
			names, of = append(names, d.Name), append(of, d.Text)
		}
	}
	return names, of
}

// PoorFitResidual is the relative residual past which a fit is called out
// under the model table: a median more than 25% off its line means the
// line's latency, bandwidth and crossover should not be trusted.
const PoorFitResidual = 0.25

// caseText names a case by its varying dimensions, for notes.
func caseText(names, values []string) string {
	if len(names) == 0 {
		return ""
	}
	var parts []string
	for i := range names {
		parts = append(parts, names[i]+" "+values[i])
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// ModelTable explains the timings: the Hockney fit of each case and mode
// (why there is none, when there is not), where each decomposition of
// AllReduce comes within 5% of direct, and where its time goes. Whatever
// many cases share (a fit's absence and its reason, a crossover's cells, a
// poor fit's warning) is said once: a row stands for the cases it repeats
// (collapseRows) and a note for every row it explains.
func ModelTable(w io.Writer, s Summary) error {
	if len(s.Fits) == 0 {
		return nil
	}
	var cases []coll.Case
	for _, f := range s.Fits {
		cases = append(cases, f.Case)
	}
	names, of := varyingDims(cases)
	dims := func(c coll.Case) []string {
		var row []string
		for _, f := range of {
			row = append(row, f(c))
		}
		return row
	}
	fmt.Fprintln(w, "Model (t(n) = alpha + n/B, weighted least squares on the medians, weights 1/t^2)")
	var fitNotes tableNotes
	var rows [][]string
	for _, f := range s.Fits {
		row := append(dims(f.Case), string(f.Mode))
		if !f.OK() {
			row = append(row, "-", "-", "-", "-", "no fit "+fitNotes.ref(f.Reason))
		} else {
			row = append(row, fmt.Sprintf("%.2f", f.AlphaUS), fmt.Sprintf("%.2f", f.BandwidthGBps), fmt.Sprintf("%.4f", f.R2),
				fmt.Sprintf("%.3f", f.MaxRelResidual), sizesText(f.SizesBytes))
		}
		rows = append(rows, row)
	}
	if err := foldTable(w, names, []string{"mode", "alpha us", "B GB/s", "R^2", "max rel residual", "sizes"}, collapseRows(rows, len(names))); err != nil {
		return err
	}
	fitNotes.write(w, "no fit: ")
	poorFitNote(w, s.Fits, names, dims)
	negativeAlphaNote(w, s.Fits, names, dims)
	if len(s.Crossover) > 0 {
		fmt.Fprintf(w, "Crossover (the smallest size from which the decomposition stays within %.0f%% of direct AllReduce)\n", 100*model.Tolerance)
		var notes tableNotes
		var rows [][]string
		for _, c := range s.Crossover {
			mode := string(c.Mode)
			row := append(dims(c.Case), mode,
				crossingCell(&notes, c.Measured, mode+", measured"), crossingCell(&notes, c.Fitted, mode+", from the fits"))
			if c.FromFits {
				row = append(row, fmt.Sprintf("%+.2f", c.ExtraLatencyUS), fmt.Sprintf("%.3f", c.BandwidthRatio))
			} else {
				row = append(row, "-", "-")
			}
			rows = append(rows, row)
		}
		if err := foldTable(w, names, []string{"decomposition", "measured", "from the fits", "extra latency us", "B ratio"}, collapseRows(rows, len(names))); err != nil {
			return err
		}
		fmt.Fprintf(w, "B ratio: direct's B / the decomposition's, the ratio of their times at large sizes (above %.2f: never within %.0f%%)\n",
			1+model.Tolerance, 100*model.Tolerance)
		notes.write(w, "")
	}
	if len(s.Breakdown) > 0 {
		fmt.Fprintln(w, "Where the decomposition's time goes (each part timed alone: its median in us and share of the whole's median)")
		var notes tableNotes
		var rows [][]string
		for _, b := range s.Breakdown {
			for _, sh := range b.Shares {
				parts, rest, note := ShareText(sh)
				if note != "" {
					rest += " " + notes.ref(note)
				}
				rows = append(rows, append(dims(b.Case), string(b.Mode), SizeText(sh.SizeBytes), USText(sh.WholeUS), parts, rest))
			}
		}
		if err := foldTable(w, names, []string{"decomposition", "size", "whole us", "parts", "rest"}, rows); err != nil {
			return err
		}
		notes.write(w, "")
	}
	return nil
}

// ShareText is a share's parts and rest as the model decided them
// (model.SplitOf): shares where the time splits; where noise makes a share
// impossible, the parts' times alone, a rest that says so, and note, why
// in words ("" where the time splits). The terminal and the page print it.
func ShareText(sh model.Share) (parts, rest, note string) {
	var ps []string
	for _, p := range sh.Parts {
		text := shortMode(p.Mode) + " " + USText(p.US)
		if p.Share != nil {
			text += fmt.Sprintf(" (%.0f%%)", 100**p.Share)
		}
		ps = append(ps, text)
	}
	parts = strings.Join(ps, " + ")
	switch sh.Split {
	case model.SplitWithinNoise:
		return parts, "0 within noise", "within noise: the parts alone add up to more than the whole, " +
			"by less than the runs' p10..p90 spread; the rest is zero within noise, and the shares are of the parts' sum"
	case model.NotSplit:
		return parts, "not split", "not split: the parts timed alone add up to more than the whole, beyond the runs' " +
			"p10..p90 spread, which no split explains (a part cannot take longer than the whole that holds it): the runs saw different " +
			"conditions, a busy machine; rerun with more cycles on a quiet one"
	}
	if sh.UnexplainedShare == nil { // a summary written before the split was decided
		return parts, USText(sh.UnexplainedUS), ""
	}
	return parts, fmt.Sprintf("%s (%.0f%%)", USText(sh.UnexplainedUS), 100**sh.UnexplainedShare), ""
}

// shortMode is a mode's short name ("RS", "H-AG"), or the mode itself when
// coll has no record of it.
func shortMode(m coll.Mode) string {
	if t, ok := coll.ModeOf(m); ok && t.Short != "" {
		return t.Short
	}
	return string(m)
}

// poorFitNote calls out, in one note, every usable fit whose residual
// passes PoorFitResidual, naming at most four.
func poorFitNote(w io.Writer, fits []model.Fit, names []string, dims func(coll.Case) []string) {
	var poor []string
	for _, f := range fits {
		if f.OK() && f.MaxRelResidual > PoorFitResidual {
			poor = append(poor, fmt.Sprintf("%s%s by %.0f%%", f.Mode, caseText(names, dims(f.Case)), 100*f.MaxRelResidual))
		}
	}
	if len(poor) == 0 {
		return
	}
	const named = 4
	list := strings.Join(poor[:min(len(poor), named)], ", ")
	if len(poor) > named {
		list += fmt.Sprintf(" and %d more", len(poor)-named)
	}
	what := "fit misses"
	if len(poor) > 1 {
		what = fmt.Sprintf("%d fits miss", len(poor))
	}
	fmt.Fprintf(w, "note: the %s a measured median by more than %.0f%% (%s): the times are noisy, or no line holds over the sizes; "+
		"trust their alpha, B and crossover less, and rerun with more cycles on a quiet machine\n", what, 100*PoorFitResidual, list)
}

// NegativeAlphaText says what a fit whose alpha is below zero means: no
// call costs less than nothing, so the intercept is the straight line's,
// not a latency.
const NegativeAlphaText = "alpha < 0: the fit's intercept is below zero, which no latency is: the line through the larger sizes " +
	"passes below the smallest ones (a latency below what the sweep resolves, or a protocol switch); read B only"

// negativeAlphaNote calls out, in one note, every usable fit whose alpha
// is negative, naming at most four.
func negativeAlphaNote(w io.Writer, fits []model.Fit, names []string, dims func(coll.Case) []string) {
	var neg []string
	for _, f := range fits {
		if f.OK() && f.AlphaUS < 0 {
			neg = append(neg, fmt.Sprintf("%s%s %.2f us", f.Mode, caseText(names, dims(f.Case)), f.AlphaUS))
		}
	}
	if len(neg) == 0 {
		return
	}
	list := strings.Join(neg[:min(len(neg), 4)], ", ")
	if len(neg) > 4 {
		list += fmt.Sprintf(" and %d more", len(neg)-4)
	}
	fmt.Fprintf(w, "note: %s (%s)\n", NegativeAlphaText, list)
}

// collapseRows keeps a table from repeating itself: rows that agree in
// every cell past their ndims dimension cells, three or more of them,
// become one row, where the first of them was, whose dimensions say how
// many cases it stands for.
func collapseRows(rows [][]string, ndims int) [][]string {
	if ndims == 0 {
		return rows
	}
	key := func(r []string) string { return strings.Join(r[ndims:], "\x00") }
	count := map[string]int{}
	cases := map[string]bool{}
	for _, r := range rows {
		count[key(r)]++
		cases[strings.Join(r[:ndims], "\x00")] = true
	}
	var out [][]string
	done := map[string]bool{}
	for _, r := range rows {
		k := key(r)
		if count[k] < 3 {
			out = append(out, r)
			continue
		}
		if done[k] {
			continue
		}
		done[k] = true
		row := make([]string, ndims)
		row[0] = fmt.Sprintf("%d cases", count[k])
		if count[k] == len(cases) {
			row[0] = fmt.Sprintf("all %d cases", count[k])
		}
		for i := 1; i < ndims; i++ {
			row[i] = "*"
		}
		out = append(out, append(row, r[ndims:]...))
	}
	return out
}

// tableNotes are the explanations of a table's cells, said once each under
// it, so that the cells stay short: a cell holds "[N]", and note N says
// why for every cell that holds it.
type tableNotes []string

// ref is the reference to note, "[N]", adding the note if it is new.
func (n *tableNotes) ref(note string) string {
	i := slices.Index(*n, note)
	if i < 0 {
		*n = append(*n, note)
		i = len(*n) - 1
	}
	return fmt.Sprintf("[%d]", i+1)
}

// write prints each note under its number, after prefix. A last clause
// (after ": ") that several notes end with is said once, after them, under
// their numbers: eight crossings "none" for one reason are eight short
// notes and one explanation, not eight copies of it.
func (n tableNotes) write(w io.Writer, prefix string) {
	tail := func(note string) string {
		if i := strings.LastIndex(note, ": "); i >= 0 {
			return note[i+2:]
		}
		return ""
	}
	by := map[string][]int{}
	var tails []string
	for i, note := range n {
		if t := tail(note); t != "" {
			if by[t] == nil {
				tails = append(tails, t)
			}
			by[t] = append(by[t], i+1)
		}
	}
	for i, note := range n {
		if t := tail(note); len(by[t]) > 1 {
			note = strings.TrimSuffix(note, ": "+t)
		}
		fmt.Fprintf(w, "[%d] %s%s\n", i+1, prefix, note)
	}
	for _, t := range tails {
		if len(by[t]) > 1 {
			fmt.Fprintf(w, "[%s] %s\n", ListText(by[t], ","), t)
		}
	}
}

// crossingCell is a crossing's cell: its size, "at every size", or
// "none [N]" with note N saying why, about which decomposition.
func crossingCell(n *tableNotes, c model.Crossing, about string) string {
	switch {
	case c.Found && c.Bytes == 0:
		return "at every size"
	case c.Found:
		return approxSize(c.Bytes)
	}
	return "none " + n.ref(about+": "+c.Why)
}

// approxSize writes a size that is no whole number of K, M or G as bytes
// and roughly: "3694737 (3.52M)".
func approxSize(b int64) string {
	t := SizeText(b)
	if t != fmt.Sprint(b) || b < 1<<10 {
		return t
	}
	for _, u := range []struct {
		s string
		m float64
	}{{"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}} {
		if float64(b) >= u.m {
			return fmt.Sprintf("%d (%.3g%s)", b, float64(b)/u.m, u.s)
		}
	}
	return t
}

func sizesText(sizes []int64) string {
	if len(sizes) == 0 {
		return "-"
	}
	return fmt.Sprintf("%d, %s..%s", len(sizes), SizeText(sizes[0]), SizeText(sizes[len(sizes)-1]))
}
