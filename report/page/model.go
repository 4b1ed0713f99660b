// The page's model and breakdown sections: the fits, the crossover and
// where the decomposition's time goes.

package page

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"rsag/coll"
	"rsag/model"
	"rsag/report"
	"rsag/report/plot"
)

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
	var reasons, negative []string
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
		if f.AlphaUS < 0 {
			r.Class = "warn"
			negative = append(negative, fmt.Sprintf("%s%s (%.2f µs)", f.Mode, caseNote(dims, f.Case), f.AlphaUS))
		}
		fits.Rows = append(fits.Rows, r)
	}
	if len(negative) > 0 {
		list := strings.Join(negative[:min(len(negative), 4)], ", ")
		if len(negative) > 4 {
			list += fmt.Sprintf(" and %d more", len(negative)-4)
		}
		notes = append(notes, fmt.Sprintf("α < 0 in %s: the fit's intercept is below zero, which no latency is (the line through the larger "+
			"sizes passes below the smallest ones: a latency below what the sweep resolves, or a protocol switch); read B only.",
			plural(len(negative), "fit", "fits")+": "+list))
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
