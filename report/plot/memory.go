package plot

import (
	"image/color"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"rsag/report"
)

const mib = 1 << 20

// memoryByMode is a pair of bars per mode, peak and steady bytes above the
// baseline in MiB on the rank where they are highest, with the analytic
// values marked across each bar.
func memoryByMode(memory []report.SummaryMemory) figure {
	var modes []string
	peak, steady := map[string]int64{}, map[string]int64{}
	first := map[string]report.SummaryMemory{}
	ranks := 0
	for _, m := range memory {
		if len(m.Ranks) == 0 {
			continue
		}
		modes = append(modes, m.Mode)
		first[m.Mode] = m
		ranks = max(ranks, len(m.Ranks))
		peak[m.Mode], steady[m.Mode] = m.Ranks[0].PeakDeltaBytes, m.Ranks[0].SteadyDeltaBytes
		for _, r := range m.Ranks {
			peak[m.Mode] = max(peak[m.Mode], r.PeakDeltaBytes)
			steady[m.Mode] = max(steady[m.Mode], r.SteadyDeltaBytes)
		}
	}
	payload := first[modes[0]].PayloadBytes
	t := "Memory above the baseline, payload " + mibText(payload)
	if ranks > 1 {
		t += ", highest of " + strconv.Itoa(ranks) + " ranks"
	}
	p := newPlot()

	var pv, sv plotter.Values
	var ap, as plotter.XYs
	top := 0.0
	for i, m := range modes {
		pv = append(pv, float64(peak[m])/mib)
		sv = append(sv, float64(steady[m])/mib)
		ap = append(ap, plotter.XY{X: float64(i), Y: float64(first[m].AnalyticPeakBytes) / mib})
		as = append(as, plotter.XY{X: float64(i), Y: float64(first[m].AnalyticSteadyBytes) / mib})
		top = slices.Max([]float64{top, pv[i], sv[i], ap[i].Y, as[i].Y})
	}
	barW := vg.Points(34)
	peakBars, _ := plotter.NewBarChart(pv, barW)
	peakBars.Color, peakBars.LineStyle.Width = okabeBlue, 0
	peakBars.Offset = -barW / 2
	steadyBars, _ := plotter.NewBarChart(sv, barW)
	steadyBars.Color, steadyBars.LineStyle.Width = okabeOrange, 0
	steadyBars.Offset = barW / 2
	p.Add(peakBars, steadyBars)

	// The analytic values, as a black bar across each measured bar.
	mark := func(xy plotter.XYs, off vg.Length) *plotter.Scatter {
		s, _ := plotter.NewScatter(xy)
		s.GlyphStyle = draw.GlyphStyle{Color: color.Black, Radius: barW/2 + vg.Points(3), Shape: acrossGlyph{off}}
		return s
	}
	peakMark, steadyMark := mark(ap, -barW/2), mark(as, barW/2)
	p.Add(peakMark, steadyMark)

	p.NominalX(modes...)
	p.X.Tick.Label.Font.Size = vg.Points(11)
	p.Y.Min, p.Y.Max = 0, top*1.12
	p.Y.Tick.Marker = binaryTicks{}
	p.X.Padding = vg.Points(10)

	legendMark := &plotter.Scatter{GlyphStyle: draw.GlyphStyle{Color: color.Black, Radius: vg.Points(10), Shape: acrossGlyph{}}}
	legend := []legendSection{{entries: []legendEntry{
		{"peak", []plot.Thumbnailer{peakBars}},
		{"steady", []plot.Thumbnailer{steadyBars}},
		{"analytic value", []plot.Thumbnailer{legendMark}},
	}}}
	return figure{name: MemoryByMode, kind: MemoryByMode, title: t, xLabel: "memory mode", yLabel: "bytes above the baseline (MiB)", panels: []*plot.Plot{p}, cols: 1, legend: legend}
}

// acrossGlyph is a horizontal line 2 x radius wide, shifted by dx: the
// analytic value drawn across a bar.
type acrossGlyph struct{ dx vg.Length }

func (g acrossGlyph) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	c.SetLineStyle(draw.LineStyle{Color: sty.Color, Width: vg.Points(2.5)})
	x := pt.X + g.dx
	var path vg.Path
	path.Move(vg.Point{X: x - sty.Radius, Y: pt.Y})
	path.Line(vg.Point{X: x + sty.Radius, Y: pt.Y})
	c.Stroke(path)
}

// mibText writes bytes as MiB when whole, else as bytes.
func mibText(b int64) string {
	if b%mib == 0 {
		return strconv.FormatInt(b/mib, 10) + " MiB"
	}
	return strconv.FormatInt(b, 10) + " bytes"
}

// binaryTicks label a power-of-two step (in MiB) that gives at most 8
// labels, so that N, N/2 and N/W of a power-of-two payload fall on them.
type binaryTicks struct{}

func (binaryTicks) Ticks(min, max float64) []plot.Tick {
	step := 1.0 / 1024
	for (max-min)/step > 8 {
		step *= 2
	}
	var t []plot.Tick
	for i := math.Ceil(min / step * 2); i*step/2 <= max; i++ {
		v := i * step / 2
		tk := plot.Tick{Value: v}
		if int(i)%2 == 0 {
			tk.Label = strconv.FormatFloat(v, 'f', -1, 64)
		}
		t = append(t, tk)
	}
	return t
}
