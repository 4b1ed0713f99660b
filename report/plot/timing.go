package plot

import (
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"rsag/coll"
	"rsag/model"
	"rsag/report"
)

// The memory figure's two bars take two colours of Okabe and Ito's palette
// ("Color Universal Design", 2008), the one the timed modes' colours come
// from (coll's TimedMode.Colour).
var (
	okabeOrange = rgb(0xe69f00)
	okabeBlue   = rgb(0x0072b2)
)

func rgb(v uint32) color.Color { return color.RGBA{uint8(v >> 16), uint8(v >> 8), uint8(v), 255} }

// otherColour is a line of no known mode.
var otherColour = color.Gray{40}

// modeColour is a timed mode's colour, its record's (TimedMode.Colour);
// the ratio figure's lines (no mode) are the decomposition's, whose cost
// they show.
func modeColour(mode string) color.Color {
	if mode == "" {
		mode = string(coll.Decomposed)
	}
	m, ok := coll.ModeOf(coll.Mode(mode))
	if !ok {
		return otherColour
	}
	v, err := strconv.ParseUint(strings.TrimPrefix(m.Colour, "#"), 16, 32)
	if err != nil || len(m.Colour) != len("#rrggbb") {
		return otherColour
	}
	return rgb(uint32(v))
}

// ModeColour is a timed mode's colour in the figures as CSS writes it,
// "#0072b2", so that an HTML page can mark the modes alike.
func ModeColour(mode string) string {
	r, g, b, _ := modeColour(mode).RGBA()
	return fmt.Sprintf("#%02x%02x%02x", r>>8, g>>8, b>>8)
}

// downGlyph is a filled triangle pointing down: the mirror of max's.
type downGlyph struct{}

func (downGlyph) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	c.SetColor(sty.Color)
	r := sty.Radius + (sty.Radius-sty.Radius*vg.Length(math.Sin(math.Pi/6)))/2
	var p vg.Path
	p.Move(vg.Point{X: pt.X, Y: pt.Y - r})
	p.Line(vg.Point{X: pt.X - r*vg.Length(math.Cos(math.Pi/6)), Y: pt.Y + r*vg.Length(math.Sin(math.Pi/6))})
	p.Line(vg.Point{X: pt.X + r*vg.Length(math.Cos(math.Pi/6)), Y: pt.Y + r*vg.Length(math.Sin(math.Pi/6))})
	p.Close()
	c.Fill(p)
}

// diamondGlyph is a filled square on its corner.
type diamondGlyph struct{}

func (diamondGlyph) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	c.SetColor(sty.Color)
	r := sty.Radius * 1.25
	var p vg.Path
	p.Move(vg.Point{X: pt.X, Y: pt.Y + r})
	p.Line(vg.Point{X: pt.X + r, Y: pt.Y})
	p.Line(vg.Point{X: pt.X, Y: pt.Y - r})
	p.Line(vg.Point{X: pt.X - r, Y: pt.Y})
	p.Close()
	c.Fill(p)
}

// modeStyle returns a timed mode's dashes (its record's TimedMode.Dash;
// finely dotted is the fits') and its legend name.
func modeStyle(mode string) ([]vg.Length, string) {
	m, ok := coll.ModeOf(coll.Mode(mode))
	if !ok {
		return nil, mode
	}
	var dashes []vg.Length
	for _, d := range m.Dash {
		dashes = append(dashes, vg.Points(d))
	}
	return dashes, m.Title
}

// panelKey is what a panel of a run's figure stands for: a case without
// what its figure, lines and x axis show (run, mode, size), so that every
// other dimension of a sweep gets panels of its own, small multiples in
// which each line is one mode of one case.
type panelKey coll.Case

// panelOf is the panel a case's curves are drawn in.
func panelOf(c coll.Case) panelKey {
	c.Run, c.SizeBytes, c.Mode = "", 0, ""
	return panelKey(c)
}

// parts are the panel's dimensions as reports spell them, those in vary
// (the dimensions whose values differ between the figure's panels): "int8
// sum", "out-of-place, batched x20".
func (k panelKey) parts(vary []coll.Dim) []string {
	var parts []string
	for _, d := range vary {
		parts = append(parts, d.Text(coll.Case(k)))
	}
	return parts
}

// fixedParts are the dimensions that have one value over all the panels,
// those that are not the seed's usual ones.
func (lay layout) fixedParts() []string {
	var parts []string
	for _, d := range coll.Dims[1:] {
		if slices.ContainsFunc(lay.vary, func(v coll.Dim) bool { return v.Name == d.Name }) || len(lay.panels) == 0 {
			continue
		}
		if v := d.Text(coll.Case(lay.panels[0])); v != "" && v != d.Usual {
			parts = append(parts, v)
		}
	}
	return parts
}

// label names a panel by what differs between the panels: "int8 sum,
// out-of-place, batched x20".
func (lay layout) label(k panelKey) string { return strings.Join(k.parts(lay.vary), " ") }

// lineKey is one line of a panel; Mode is empty on the ratio figure.
type lineKey struct{ DType, Op, Mode string }

func lineOf(c coll.Case) lineKey { return lineKey{c.DType.String(), c.Op.String(), string(c.Mode)} }

// value is one point of a figure.
type value struct {
	panel panelKey
	line  lineKey
	x, y  float64
}

// layout is what a run's figure shows, each list in report order: the
// element types, reductions and modes (the legend), and the panels.
type layout struct {
	run                string
	dtypes, ops, modes []string
	panels             []panelKey
	vary               []coll.Dim // the dimensions that differ between panels
	cols               int
	ranks              int
	xlo, xhi           float64
}

// known orders: the report's order first, then others as they come.
var (
	dtypeOrder = coll.Names(coll.AllDTypes)
	opOrder    = coll.Names(coll.AllOps)
	modeOrder  = coll.Names(coll.Modes)
)

// rank is v's place in order, or len(order) for a value not in it.
func rank(order []string, v string) int {
	if i := slices.Index(order, v); i >= 0 {
		return i
	}
	return len(order)
}

// sortBy sorts v (values in order of first appearance) by order, stably, so
// that values not in order keep their order of appearance after the rest.
func sortBy(v []string, order []string) []string {
	slices.SortStableFunc(v, func(a, b string) int { return rank(order, a) - rank(order, b) })
	return v
}

func layoutOf(run runStats) layout {
	lay := layout{run: run.name, xlo: math.Inf(1), xhi: math.Inf(-1)}
	seen := map[any]bool{}
	add := func(list *[]string, kind, v string) {
		if k := [2]string{kind, v}; !seen[k] {
			seen[k] = true
			*list = append(*list, v)
		}
	}
	for _, s := range run.stats {
		add(&lay.dtypes, "dtype", s.DType.String())
		add(&lay.ops, "op", s.Op.String())
		add(&lay.modes, "mode", string(s.Mode))
		if k := panelOf(s.Case); !seen[k] {
			seen[k] = true
			lay.panels = append(lay.panels, k)
		}
		lay.ranks = max(lay.ranks, s.Ranks)
		if s.SizeBytes > 0 {
			lay.xlo, lay.xhi = math.Min(lay.xlo, float64(s.SizeBytes)), math.Max(lay.xhi, float64(s.SizeBytes))
		}
	}
	sortBy(lay.dtypes, dtypeOrder)
	sortBy(lay.ops, opOrder)
	sortBy(lay.modes, modeOrder)
	slices.SortStableFunc(lay.panels, func(a, b panelKey) int { return coll.Compare(coll.Case(a), coll.Case(b)) })
	for _, d := range coll.Dims[1:] {
		if len(uniqueText(lay.panels, d)) > 1 {
			lay.vary = append(lay.vary, d)
		}
	}
	// A row per value of the first dimensions, a column per combination of
	// the last ones (placement and method, or op when those do not vary),
	// at most four to a row: every panel of a column shows the same kind
	// of case. One row of up to three panels for a few.
	lay.cols = min(len(lay.panels), 3)
	if len(lay.panels) > 3 {
		lay.cols = 1
		for i := len(lay.vary) - 1; i >= 0; i-- {
			n := len(uniqueText(lay.panels, lay.vary[i]))
			if lay.cols*n > 4 {
				break
			}
			lay.cols *= n
		}
		if lay.cols == 1 {
			lay.cols = min(len(lay.panels), 4)
		}
	}
	return lay
}

// uniqueText is the distinct values of d over panels.
func uniqueText(panels []panelKey, d coll.Dim) []string {
	var out []string
	for _, k := range panels {
		if v := d.Text(coll.Case(k)); !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// title is what the figure shows, then the run (unless it is the seed's
// "default"), the fields that have one value over the figure, and the
// ranks: "Median time per operation: float32 sum out-of-place per-op,
// 2 ranks" or "Median time per operation, run matrix, 2 ranks".
func (lay layout) title(what string) string {
	t := what
	if lay.run != "default" && lay.run != "" {
		t += ", run " + lay.run
	}
	var fixed []string
	fixed = append(fixed, lay.fixedParts()...)
	if len(fixed) > 0 {
		t += ": " + strings.Join(fixed, " ")
	}
	if lay.ranks > 0 {
		t += fmt.Sprintf(", %d ranks", lay.ranks)
	}
	return t
}

// Line and marker sizes: a figure of one panel has room for bold lines.
func (lay layout) lineWidth() vg.Length {
	if len(lay.panels) == 1 {
		return vg.Points(2)
	}
	return vg.Points(1.5)
}

func (lay layout) radius() vg.Length {
	if len(lay.panels) == 1 {
		return vg.Points(3.5)
	}
	return vg.Points(2.8)
}

func (lay layout) lineStyle(l lineKey) draw.LineStyle {
	ls := draw.LineStyle{Color: modeColour(l.Mode), Width: lay.lineWidth()}
	ls.Dashes, _ = modeStyle(l.Mode)
	return ls
}

func (lay layout) glyphStyle(l lineKey) draw.GlyphStyle {
	return draw.GlyphStyle{Color: modeColour(l.Mode), Radius: lay.radius(), Shape: markerOf(len(lay.panels))}
}

// markerOf is a line's marker. Each panel is one case, named in its
// title, so the marker carries nothing the panel does not say: the
// seed's circle, or in small multiples a square, a quarter of a circle's
// bytes in SVG, which a sweep of hundreds of panels needs to stay small
// enough to mail.
func markerOf(panels int) draw.GlyphDrawer {
	if panels > manyPanels {
		return draw.BoxGlyph{}
	}
	return draw.CircleGlyph{}
}

// neutralGrey is the colour of legend entries that stand for no mode: the
// markers.
var neutralGrey = color.Gray{110}

func lineThumb(c color.Color, dashes []vg.Length) plot.Thumbnailer {
	return &plotter.Line{LineStyle: draw.LineStyle{Color: c, Width: vg.Points(2), Dashes: dashes}}
}

func glyphThumb(c color.Color, g draw.GlyphDrawer) plot.Thumbnailer {
	return &plotter.Scatter{GlyphStyle: draw.GlyphStyle{Color: c, Radius: vg.Points(3.5), Shape: g}}
}

// timingLegend is a time or bandwidth figure's legend: the modes, each in
// its colour, line style and marker. The panels name their cases, so the
// legend grows with the modes alone.
func timingLegend(lay layout, modes []string) []legendSection {
	s := legendSection{heading: "mode"}
	for _, m := range modes {
		dashes, name := modeStyle(m)
		s.entries = append(s.entries, legendEntry{name, []plot.Thumbnailer{lineThumb(modeColour(m), dashes),
			glyphThumb(modeColour(m), markerOf(len(lay.panels)))}})
	}
	return []legendSection{s}
}

// refStyle is the ratio figure's line at 1.
var refStyle = draw.LineStyle{Color: color.Gray{60}, Width: vg.Points(1.2), Dashes: []vg.Length{vg.Points(3), vg.Points(3)}}

// ratioLegend is the ratio figure's: the ratio's line in the
// decomposition's colour, and the line at 1.
func ratioLegend(lay layout) []legendSection {
	c := modeColour(string(coll.Decomposed))
	thumbs := []plot.Thumbnailer{lineThumb(c, nil), glyphThumb(c, markerOf(len(lay.panels)))}
	return []legendSection{{entries: []legendEntry{{"RS+AG / AllReduce", thumbs},
		{"1 = no cost", []plot.Thumbnailer{&plotter.Line{LineStyle: refStyle}}}}}}
}

// grid draws a run's values as a figure: a panel per placement and method,
// all on the run's size range and on the y range of every value that
// valid accepts, which setY turns into the axis; decorate adds to each
// panel what goes under the lines (it is told the panel).
func grid(kind, suffix, what, yLabel string, lay layout, vals []value, valid func(float64) bool,
	setY func(p *plot.Plot, lo, hi float64), decorate func(p *plot.Plot, k panelKey), legend []legendSection) figure {
	lo, hi := math.Inf(1), math.Inf(-1)
	byPanel := map[panelKey]map[lineKey]plotter.XYs{}
	for _, v := range vals {
		if !valid(v.y) || !(v.x > 0) {
			continue // a log axis cannot show it, or there is nothing to show
		}
		lo, hi = math.Min(lo, v.y), math.Max(hi, v.y)
		if byPanel[v.panel] == nil {
			byPanel[v.panel] = map[lineKey]plotter.XYs{}
		}
		byPanel[v.panel][v.line] = append(byPanel[v.panel][v.line], plotter.XY{X: v.x, Y: v.y})
	}
	if lo > hi {
		lo, hi = 1, 10
	}
	f := figure{name: kind + suffix, kind: kind, run: lay.run, title: lay.title(what), xLabel: sizeLabel, yLabel: yLabel,
		cols: lay.cols, legend: legend}
	n := len(lay.panels)
	named := lineNames(lay, vals)
	for _, k := range lay.panels {
		p := newPlot()
		if n > manyPanels {
			p = newBarePlot()
		}
		if n > 1 {
			p.Title.Text = lay.label(k)
			p.Title.TextStyle.Font.Size = panelTitleSize
			p.Title.Padding = vg.Points(4)
		}
		labels := 12
		if n > 1 {
			labels = 6 // a panel is narrower
		}
		sizeAxis(p, lay.xlo, lay.xhi, labels)
		if named != nil {
			named.makeRoom(p, dataWidth(n, legend))
		}
		setY(p, lo, hi)
		if decorate != nil {
			decorate(p, k)
		}
		lines := byPanel[k]
		keys := make([]lineKey, 0, len(lines))
		for l := range lines {
			keys = append(keys, l)
		}
		// In legend order, so that every panel stacks its lines alike.
		slices.SortFunc(keys, func(a, b lineKey) int {
			for _, d := range []int{slices.Index(lay.dtypes, a.DType) - slices.Index(lay.dtypes, b.DType),
				slices.Index(lay.ops, a.Op) - slices.Index(lay.ops, b.Op),
				rank(modeOrder, a.Mode) - rank(modeOrder, b.Mode)} {
				if d != 0 {
					return d
				}
			}
			return strings.Compare(a.Mode, b.Mode)
		})
		for _, l := range keys {
			xy := lines[l]
			slices.SortFunc(xy, func(a, b plotter.XY) int { return cmpFloat(a.X, b.X) })
			line, points, err := plotter.NewLinePoints(xy)
			if err != nil {
				continue
			}
			line.LineStyle, points.GlyphStyle = lay.lineStyle(l), lay.glyphStyle(l)
			p.Add(line, points)
		}
		if named != nil {
			p.Add(named.at(lines, keys))
		}
		f.panels = append(f.panels, p)
	}
	// Small multiples share their axes: the bottom panel of each column
	// labels the sizes, the left one of each row the values.
	if n > manyPanels {
		for i, p := range f.panels {
			p.X.Tick.Marker, p.Y.Tick.Marker = majorOnly{p.X.Tick.Marker}, majorOnly{p.Y.Tick.Marker}
			if i+f.cols < n {
				p.X.Tick.Marker = unlabelled{p.X.Tick.Marker}
			}
			if i%f.cols != 0 {
				p.Y.Tick.Marker = unlabelled{p.Y.Tick.Marker}
			}
		}
	}
	return f
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func finite(v float64) bool   { return !math.IsNaN(v) && !math.IsInf(v, 0) }
func positive(v float64) bool { return finite(v) && v > 0 }

func timingValues(stats []report.TimingStat, y func(report.TimingStat) float64) []value {
	out := make([]value, len(stats))
	for i, s := range stats {
		out[i] = value{panelOf(s.Case), lineOf(s.Case), float64(s.SizeBytes), y(s)}
	}
	return out
}

func timeVsSize(run runStats) figure {
	lay := layoutOf(run)
	legend := timingLegend(lay, lay.modes)
	if slices.ContainsFunc(run.fits, model.Fit.OK) {
		legend = append(legend, legendSection{entries: []legendEntry{{"fit: alpha + n/B", []plot.Thumbnailer{lineThumb(neutralGrey, fitDashes)}}}})
	}
	// A short y label: gonum centres it at the linear midpoint of a log
	// axis and pads the plot for a long one as if it stood near the top.
	return grid(TimeVsSize, run.suffix, "Median time per operation", "median time (µs)", lay,
		timingValues(run.stats, func(s report.TimingStat) float64 { return s.MedianUS }), positive,
		func(p *plot.Plot, lo, hi float64) {
			p.Y.Scale = plot.LogScale{}
			p.Y.Min, p.Y.Max = lo/1.4, hi*1.4
			p.Y.Tick.Marker = logTicks{}
		}, func(p *plot.Plot, k panelKey) { addFits(p, lay, k, run.fits) }, legend)
}

// fitDashes are the model's lines: dotted, under the measured ones.
var fitDashes = []vg.Length{vg.Points(1), vg.Points(2.5)}

// addFits draws, dotted in each line's colour, the Hockney fit of every
// case and mode of the panel over the sizes it was fitted to.
func addFits(p *plot.Plot, lay layout, k panelKey, fits []model.Fit) {
	for _, f := range fits {
		if !f.OK() || len(f.SizesBytes) < 2 || panelOf(f.Case) != k {
			continue
		}
		lo, hi := float64(f.SizesBytes[0]), float64(f.SizesBytes[len(f.SizesBytes)-1])
		// A curve on the log-log axes: 32 segments, 8 in a small panel.
		segs := 32
		if len(lay.panels) > manyPanels {
			segs = 8
		}
		var xy plotter.XYs
		for i := range segs + 1 {
			n := lo * math.Pow(hi/lo, float64(i)/float64(segs))
			if t := f.At(n); t > 0 {
				xy = append(xy, plotter.XY{X: n, Y: t})
			}
		}
		line, err := plotter.NewLine(xy)
		if err != nil {
			continue
		}
		line.LineStyle = draw.LineStyle{Color: modeColour(string(f.Mode)), Width: lay.lineWidth() * 0.7, Dashes: fitDashes}
		p.Add(line)
	}
}

func busBWVsSize(run runStats) figure {
	lay := layoutOf(run)
	return grid(BusBWVsSize, run.suffix, "Bus bandwidth (nccl-tests)", "bus bandwidth (GB/s)", lay,
		timingValues(run.stats, func(s report.TimingStat) float64 { return s.BusBWGBps }), finite,
		func(p *plot.Plot, _, hi float64) {
			p.Y.Min, p.Y.Max = 0, math.Max(hi, 0)*1.08
			if p.Y.Max == 0 {
				p.Y.Max = 1
			}
			p.Y.Tick.Marker = linearTicks{}
		}, nil, timingLegend(lay, lay.modes))
}

// crossoverVsSize is, for every decomposition of AllReduce the run timed
// (decomposed, hierarchical), its median over direct's against size, with
// the 5% the crossover is read against and, per case, a vertical mark at
// the measured crossover; false when the run has no crossover to show.
func crossoverVsSize(run runStats) (figure, bool) {
	if len(run.crossovers) == 0 {
		return figure{}, false
	}
	lay := layoutOf(run)
	byKey := map[coll.Case]report.TimingStat{}
	for _, s := range run.stats {
		byKey[s.Case] = s
	}
	var vals []value
	var decomps []string
	for _, s := range run.stats {
		for _, c := range run.crossovers {
			if c.Mode != s.Mode || s.Pair().Series() != c.Case {
				continue
			}
			k := s.Case
			k.Mode = coll.Direct
			if d, ok := byKey[k]; ok && d.MedianUS > 0 {
				vals = append(vals, value{panelOf(s.Case), lineOf(s.Case), float64(s.SizeBytes), s.MedianUS / d.MedianUS})
				if !slices.Contains(decomps, string(s.Mode)) {
					decomps = append(decomps, string(s.Mode))
				}
			}
		}
	}
	if len(vals) == 0 {
		return figure{}, false
	}
	sortBy(decomps, modeOrder)
	limit := 1 + model.Tolerance
	legend := timingLegend(lay, decomps)
	legend = append(legend, legendSection{entries: []legendEntry{
		{fmt.Sprintf("%.2f = within %.0f%%", limit, 100*model.Tolerance), []plot.Thumbnailer{&plotter.Line{LineStyle: limitStyle}}},
		{"measured crossover", []plot.Thumbnailer{&plotter.Line{LineStyle: crossStyle(neutralGrey)}}}}})
	f := grid(CrossoverVsSize, run.suffix, "Where the decomposition stops mattering", "median / AllReduce median", lay, vals, finite,
		func(p *plot.Plot, lo, hi float64) {
			lo, hi = math.Min(lo, 1), math.Max(hi, limit)
			span := hi - lo
			p.Y.Min, p.Y.Max = math.Max(0, lo-0.1*span-0.05), hi+0.1*span+0.05
			p.Y.Tick.Marker = linearTicks{}
		},
		func(p *plot.Plot, k panelKey) {
			ref, _ := plotter.NewLine(plotter.XYs{{X: p.X.Min, Y: limit}, {X: p.X.Max, Y: limit}})
			ref.LineStyle = limitStyle
			p.Add(ref)
			for _, c := range run.crossovers {
				if !c.Measured.Found || panelOf(c.Case) != k {
					continue
				}
				x := float64(c.Measured.Bytes)
				mark, _ := plotter.NewLine(plotter.XYs{{X: x, Y: p.Y.Min}, {X: x, Y: p.Y.Max}})
				mark.LineStyle = crossStyle(modeColour(string(c.Mode)))
				p.Add(mark)
			}
		}, legend)
	return f, true
}

// limitStyle is the crossover figure's line at 1.05.
var limitStyle = draw.LineStyle{Color: color.Gray{60}, Width: vg.Points(1.2), Dashes: []vg.Length{vg.Points(6), vg.Points(3)}}

func crossStyle(c color.Color) draw.LineStyle {
	return draw.LineStyle{Color: c, Width: vg.Points(1), Dashes: []vg.Length{vg.Points(1), vg.Points(2)}}
}

// ratioVsSize is the decomposed / direct median of the run's cases that
// have both; false when none has.
func ratioVsSize(run runStats) (figure, bool) {
	ratios := report.Ratios(run.stats)
	if len(ratios) == 0 {
		return figure{}, false
	}
	lay := layoutOf(run)
	vals := make([]value, len(ratios))
	for i, r := range ratios {
		vals[i] = value{panelOf(r.Case), lineOf(r.Case), float64(r.SizeBytes), r.Ratio}
	}
	f := grid(RatioVsSize, run.suffix, "Cost of the decomposition", "RS+AG median / AllReduce median", lay, vals, finite,
		func(p *plot.Plot, lo, hi float64) {
			// Always show 1, the line the ratios are read against.
			lo, hi = math.Min(lo, 1), math.Max(hi, 1)
			span := hi - lo
			p.Y.Min, p.Y.Max = math.Max(0, lo-0.1*span-0.05), hi+0.1*span+0.05
			p.Y.Tick.Marker = linearTicks{}
		},
		func(p *plot.Plot, _ panelKey) {
			// ratio = 1: the decomposition costs nothing.
			ref, _ := plotter.NewLine(plotter.XYs{{X: p.X.Min, Y: 1}, {X: p.X.Max, Y: 1}})
			ref.LineStyle = refStyle
			p.Add(ref)
		}, ratioLegend(lay))
	return f, true
}
