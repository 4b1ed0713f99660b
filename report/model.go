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
		points[i] = model.Point{Case: s.Case, MedianUS: s.MedianUS}
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
// AllReduce comes within 5% of direct, and where its time goes.
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
	t := newTable(w, append(names, "mode", "alpha us", "B GB/s", "R^2", "max rel residual", "sizes")...)
	for _, f := range s.Fits {
		row := append(dims(f.Case), string(f.Mode))
		if !f.OK() {
			row = append(row, "-", "-", "-", "-", "no fit: "+f.Reason)
		} else {
			row = append(row, fmt.Sprintf("%.2f", f.AlphaUS), fmt.Sprintf("%.2f", f.BandwidthGBps), fmt.Sprintf("%.4f", f.R2),
				fmt.Sprintf("%.3f", f.MaxRelResidual), sizesText(f.SizesBytes))
		}
		t.Append(row)
	}
	if err := t.Render(); err != nil {
		return err
	}
	for _, f := range s.Fits {
		if f.OK() && f.MaxRelResidual > PoorFitResidual {
			fmt.Fprintf(w, "note: the %s fit%s misses a measured median by %.0f%%: the times are noisy, or no line holds from %s to %s; "+
				"trust its alpha, B and crossover less, and rerun with more cycles on a quiet machine\n",
				f.Mode, caseText(names, dims(f.Case)), 100*f.MaxRelResidual,
				SizeText(f.SizesBytes[0]), SizeText(f.SizesBytes[len(f.SizesBytes)-1]))
		}
	}
	if len(s.Crossover) > 0 {
		fmt.Fprintf(w, "Crossover (the smallest size from which the decomposition stays within %.0f%% of direct AllReduce)\n", 100*model.Tolerance)
		t := newTable(w, append(names, "decomposition", "measured", "from the fits", "extra latency us", "B ratio")...)
		var notes crossoverNotes
		for _, c := range s.Crossover {
			about := string(c.Mode) + caseText(names, dims(c.Case))
			row := append(dims(c.Case), string(c.Mode),
				notes.cell(c.Measured, about+", measured"), notes.cell(c.Fitted, about+", from the fits"))
			if c.FromFits {
				row = append(row, fmt.Sprintf("%+.2f", c.ExtraLatencyUS), fmt.Sprintf("%.3f", c.BandwidthRatio))
			} else {
				row = append(row, "-", "-")
			}
			t.Append(row)
		}
		if err := t.Render(); err != nil {
			return err
		}
		fmt.Fprintf(w, "B ratio: direct's B / the decomposition's, the ratio of their times at large sizes (above %.2f: never within %.0f%%)\n",
			1+model.Tolerance, 100*model.Tolerance)
		for i, n := range notes {
			fmt.Fprintf(w, "[%d] %s\n", i+1, n)
		}
	}
	if len(s.Breakdown) > 0 {
		fmt.Fprintln(w, "Where the decomposition's time goes (each part timed alone, share of the whole's median)")
		t := newTable(w, append(names, "decomposition", "size", "whole us", "parts", "unexplained")...)
		for _, b := range s.Breakdown {
			for _, sh := range b.Shares {
				var parts []string
				for _, p := range sh.Parts {
					parts = append(parts, fmt.Sprintf("%s %.2f us (%.0f%%)", p.Mode, p.US, 100*p.Share))
				}
				t.Append(append(dims(b.Case), string(b.Mode), SizeText(sh.SizeBytes), fmt.Sprintf("%.2f", sh.WholeUS),
					strings.Join(parts, " + "), fmt.Sprintf("%.2f us (%.0f%%)", sh.UnexplainedUS, 100*sh.UnexplainedShare)))
			}
		}
		return t.Render()
	}
	return nil
}

// crossoverNotes are the explanations of the Crossover table's cells
// that found no crossover, said once each under the table, so that the
// cells stay short enough for an 80-column terminal.
type crossoverNotes []string

// cell is a crossing's cell: its size, "at every size", or "none [N]"
// with note N saying why, about which decomposition and case.
func (n *crossoverNotes) cell(c model.Crossing, about string) string {
	switch {
	case c.Found && c.Bytes == 0:
		return "at every size"
	case c.Found:
		return approxSize(c.Bytes)
	}
	note := about + ": " + c.Why
	i := slices.Index(*n, note)
	if i < 0 {
		*n = append(*n, note)
		i = len(*n) - 1
	}
	return fmt.Sprintf("none [%d]", i+1)
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
