// Package plot draws rsag's figures from the report's statistics, as PNG
// (to look at) and SVG (to put in a document), with gonum/plot and no
// external tool:
//
//	time_vs_size    median time per operation against size, log-log; one
//	                colour per case, solid AllReduce, dashed ReduceScatter +
//	                AllGather
//	busbw_vs_size   nccl-tests' bus bandwidth (GB/s) against size, log x
//	ratio_vs_size   decomposed / direct median against size, log x, with the
//	                line ratio = 1
//	memory_by_mode  peak and steady bytes above the baseline per memory mode
//	                (MiB, the highest rank), the analytic values marked
//
// Like the CSVs and tables, it is a separate writer over the same rows.
package plot

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"rsag/report"
)

// Figure size: at 96 dpi the PNGs are 1056 x 576 pixels.
const (
	width  = 11 * vg.Inch
	height = 6 * vg.Inch
)

// Names of the figures, without extension.
const (
	TimeVsSize   = "time_vs_size"
	BusBWVsSize  = "busbw_vs_size"
	RatioVsSize  = "ratio_vs_size"
	MemoryByMode = "memory_by_mode"
)

// figure is a plot with its legend, which is drawn beside the plot so that
// it never hides a line.
type figure struct {
	name   string
	plot   *plot.Plot
	legend plot.Legend
}

// WriteAll writes every figure the data allows into dir (which must
// exist), each as .png and .svg, and returns the paths written. Timing
// figures need stats, the ratio figure needs cases with both modes, the
// memory figure needs memory rows; a figure without data is not written.
func WriteAll(dir string, stats []report.TimingStat, memory []report.MemoryRow) ([]string, error) {
	var figs []figure
	if len(stats) > 0 {
		figs = append(figs, timeVsSize(stats), busBWVsSize(stats))
		if r := report.Ratios(stats); len(r) > 0 {
			figs = append(figs, ratioVsSize(r, stats))
		}
	}
	if len(memory) > 0 {
		figs = append(figs, memoryByMode(memory))
	}
	var written []string
	for _, f := range figs {
		for _, format := range []string{"png", "svg"} {
			path := filepath.Join(dir, f.name+"."+format)
			data, err := f.render(format)
			if err == nil {
				err = writeFile(path, data)
			}
			if err != nil {
				return written, fmt.Errorf("plot %s: %w", path, err)
			}
			written = append(written, path)
		}
	}
	return written, nil
}

// render draws the plot on the left and the legend in a column on the right.
func (f figure) render(format string) ([]byte, error) {
	var c vg.CanvasWriterTo
	switch format {
	case "png":
		c = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(width, height), vgimg.UseDPI(96))}
	case "svg":
		c = vgsvg.New(width, height)
	default:
		return nil, fmt.Errorf("unknown format %q", format)
	}
	dc := draw.New(c)
	// A white background under both, as plot.Draw gives the plot.
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())

	pad := vg.Points(12)
	// gonum measures legend text a little narrower than the PNG renderer
	// draws it: a tenth more keeps the longest entry inside the figure.
	legendW := f.legend.Rectangle(dc).Size().X * 1.1
	if legendW > 0 {
		legendW += 2 * pad
	}
	f.plot.Draw(draw.Crop(dc, 0, -legendW, 0, 0))
	if legendW > 0 {
		l := f.legend
		l.Top, l.Left = true, true
		// Start the legend level with the plot's data area, below the title.
		top := f.plot.Title.TextStyle.Height(f.plot.Title.Text) + f.plot.Title.Padding + pad
		l.Draw(draw.Crop(dc, width-legendW+pad, -pad, pad, -top))
	}
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// writeFile writes to a temporary file beside path and renames it into
// place, so that a reader never sees a half-written figure. The file is
// made 0644: os.CreateTemp creates 0600, and results on a cluster are
// shared with the other users of the directory.
func writeFile(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(data)
	if werr == nil {
		werr = tmp.Chmod(0o644)
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), path)
	}
	if werr != nil {
		os.Remove(tmp.Name())
	}
	return werr
}

// newPlot is a plot with rsag's fonts and grid.
func newPlot(title, xLabel, yLabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(15)
	p.Title.Padding = vg.Points(8)
	p.X.Label.Text, p.Y.Label.Text = xLabel, yLabel
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font.Size = vg.Points(13)
		a.Tick.Label.Font.Size = vg.Points(11)
	}
	p.Add(&plotter.Grid{Vertical: draw.LineStyle{Color: color.Gray{225}, Width: vg.Points(0.5)},
		Horizontal: draw.LineStyle{Color: color.Gray{225}, Width: vg.Points(0.5)}})
	return p
}

func newLegend() plot.Legend {
	l := plot.NewLegend()
	l.TextStyle.Font.Size = vg.Points(11)
	l.ThumbnailWidth = vg.Points(36)
	l.Padding = vg.Points(3)
	return l
}

// palette is Tableau 10: distinct, and readable on white and in print.
var palette = []color.Color{
	rgb(0x4e79a7), rgb(0xf28e2b), rgb(0xe15759), rgb(0x76b7b2), rgb(0x59a14f),
	rgb(0xedc948), rgb(0xb07aa1), rgb(0xff9da7), rgb(0x9c755f), rgb(0xbab0ac),
}

func rgb(v uint32) color.Color { return color.RGBA{uint8(v >> 16), uint8(v >> 8), uint8(v), 255} }

var glyphs = []draw.GlyphDrawer{draw.CircleGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.PyramidGlyph{},
	draw.RingGlyph{}, draw.BoxGlyph{}, draw.CrossGlyph{}, draw.PlusGlyph{}}

// dashed is the decomposition's line style; AllReduce is solid.
var dashed = []vg.Length{vg.Points(7), vg.Points(4)}

// group is a case without its mode: what one colour stands for.
type group struct {
	Run, DType, Op, Placement, Method string
	Batch                             int
}

func groupOf(s report.TimingStat) group {
	return group{s.Run, s.DType, s.Op, s.Placement, s.Method, s.Batch}
}

func groupOfRatio(r report.Ratio) group {
	return group{r.Run, r.DType, r.Op, r.Placement, r.Method, r.Batch}
}

// naming says which of a group's fields vary over the figure: those name a
// series in the legend, the constant ones go into the title once.
type naming struct{ vary [6]bool }

func (g group) fields() [6]string {
	batch := ""
	if g.Method != "per-op" {
		batch = "batch " + strconv.Itoa(g.Batch)
	}
	return [6]string{g.Run, g.DType, g.Op, g.Placement, g.Method, batch}
}

func newNaming(groups []group) naming {
	var n naming
	for _, g := range groups {
		for i, f := range g.fields() {
			if f != groups[0].fields()[i] {
				n.vary[i] = true
			}
		}
	}
	return n
}

func (n naming) join(g group, varying bool) string {
	var parts []string
	for i, f := range g.fields() {
		if n.vary[i] == varying && f != "" && !(i == 0 && f == "default") {
			parts = append(parts, f)
		}
	}
	return strings.Join(parts, " ")
}

// label names a group in the legend; constant names the common fields.
func (n naming) label(g group) string    { return n.join(g, true) }
func (n naming) constant(g group) string { return n.join(g, false) }

// Mode names as the legend shows them.
const (
	directName = "AllReduce (direct)"
	decompName = "ReduceScatter + AllGather"
)

// series are a figure's lines: one per group and mode, x sorted.
type series struct {
	group group
	mode  string
	xy    plotter.XYs
}

func collect(stats []report.TimingStat, y func(report.TimingStat) float64) (groups []group, out []series) {
	idx := map[[2]any]int{}
	seen := map[group]bool{}
	for _, s := range stats {
		g := groupOf(s)
		if !seen[g] {
			seen[g] = true
			groups = append(groups, g)
		}
		k := [2]any{g, s.Mode}
		i, ok := idx[k]
		if !ok {
			i = len(out)
			idx[k] = i
			out = append(out, series{group: g, mode: s.Mode})
		}
		out[i].xy = append(out[i].xy, plotter.XY{X: float64(s.SizeBytes), Y: y(s)})
	}
	for i := range out {
		slices.SortFunc(out[i].xy, func(a, b plotter.XY) int { return cmpFloat(a.X, b.X) })
	}
	return groups, out
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

// modeLines draws each series, colour by group and dash by mode, and fills
// the legend: with one group, an entry per mode in its colour; with more,
// an entry per group (solid) and two grey entries for the modes.
func modeLines(p *plot.Plot, l *plot.Legend, groups []group, ss []series, n naming) {
	gi := map[group]int{}
	for i, g := range groups {
		gi[g] = i
	}
	style := func(i int, mode string) (draw.LineStyle, draw.GlyphStyle) {
		c := palette[i%len(palette)]
		ls := draw.LineStyle{Color: c, Width: vg.Points(2)}
		if mode == "decomposed" {
			ls.Dashes = dashed
		}
		return ls, draw.GlyphStyle{Color: c, Radius: vg.Points(3.5), Shape: glyphs[i%len(glyphs)]}
	}
	for _, s := range ss {
		line, points, err := plotter.NewLinePoints(s.xy)
		if err != nil {
			continue // NaN or Inf: nothing to draw
		}
		line.LineStyle, points.GlyphStyle = style(gi[s.group], s.mode)
		p.Add(line, points)
		if len(groups) == 1 {
			l.Add(modeName(s.mode), line, points)
		}
	}
	if len(groups) == 1 {
		return
	}
	for i, g := range groups {
		ls, gs := style(i, "direct")
		l.Add(n.label(g), &plotter.Line{LineStyle: ls}, &plotter.Scatter{GlyphStyle: gs})
	}
	grey := color.Gray{90}
	l.Add(directName, &plotter.Line{LineStyle: draw.LineStyle{Color: grey, Width: vg.Points(2)}})
	l.Add(decompName, &plotter.Line{LineStyle: draw.LineStyle{Color: grey, Width: vg.Points(2), Dashes: dashed}})
}

func modeName(mode string) string {
	switch mode {
	case "direct":
		return directName
	case "decomposed":
		return decompName
	}
	return mode
}

// title is the figure's title with the fields every series shares.
func title(what string, groups []group, n naming, ranks int) string {
	t := what
	if c := n.constant(groups[0]); c != "" {
		t += ": " + c
	}
	if ranks > 0 {
		t += fmt.Sprintf(", %d ranks", ranks)
	}
	return t
}

func ranksOf(stats []report.TimingStat) int {
	r := 0
	for _, s := range stats {
		r = max(r, s.Ranks)
	}
	return r
}

func timeVsSize(stats []report.TimingStat) figure {
	groups, ss := collect(stats, func(s report.TimingStat) float64 { return s.MedianUS })
	n := newNaming(groups)
	// A short y label: gonum centres it at the linear midpoint of a log
	// axis and pads the plot for a long one as if it stood near the top.
	p := newPlot(title("Median time per operation", groups, n, ranksOf(stats)),
		sizeLabel, "median time (µs)")
	sizeAxis(p, stats)
	p.Y.Scale = plot.LogScale{}
	lo, hi := yRange(stats, func(s report.TimingStat) float64 { return s.MedianUS })
	p.Y.Min, p.Y.Max = lo/1.4, hi*1.4
	p.Y.Tick.Marker = logTicks{}
	l := newLegend()
	modeLines(p, &l, groups, ss, n)
	return figure{TimeVsSize, p, l}
}

func busBWVsSize(stats []report.TimingStat) figure {
	groups, ss := collect(stats, func(s report.TimingStat) float64 { return s.BusBWGBps })
	n := newNaming(groups)
	p := newPlot(title("Bus bandwidth (nccl-tests)", groups, n, ranksOf(stats)),
		sizeLabel, "bus bandwidth (GB/s)")
	sizeAxis(p, stats)
	_, hi := yRange(stats, func(s report.TimingStat) float64 { return s.BusBWGBps })
	p.Y.Min, p.Y.Max = 0, hi*1.08
	p.Y.Tick.Marker = linearTicks{}
	l := newLegend()
	modeLines(p, &l, groups, ss, n)
	return figure{BusBWVsSize, p, l}
}

func ratioVsSize(ratios []report.Ratio, stats []report.TimingStat) figure {
	var groups []group
	byGroup := map[group]plotter.XYs{}
	lo, hi := 1.0, 1.0
	for _, r := range ratios {
		g := groupOfRatio(r)
		if _, ok := byGroup[g]; !ok {
			groups = append(groups, g)
		}
		byGroup[g] = append(byGroup[g], plotter.XY{X: float64(r.SizeBytes), Y: r.Ratio})
		lo, hi = math.Min(lo, r.Ratio), math.Max(hi, r.Ratio)
	}
	n := newNaming(groups)
	p := newPlot(title("Cost of the decomposition", groups, n, ranksOf(stats)),
		sizeLabel, "RS+AG median / AllReduce median")
	sizeAxis(p, stats)
	span := hi - lo
	p.Y.Min, p.Y.Max = math.Max(0, lo-0.1*span-0.05), hi+0.1*span+0.05
	p.Y.Tick.Marker = linearTicks{}
	l := newLegend()

	// ratio = 1: the decomposition costs nothing.
	xmin, xmax := p.X.Min, p.X.Max
	ref, _ := plotter.NewLine(plotter.XYs{{X: xmin, Y: 1}, {X: xmax, Y: 1}})
	ref.LineStyle = draw.LineStyle{Color: color.Gray{60}, Width: vg.Points(1.2), Dashes: []vg.Length{vg.Points(3), vg.Points(3)}}
	p.Add(ref)

	for i, g := range groups {
		xy := byGroup[g]
		slices.SortFunc(xy, func(a, b plotter.XY) int { return cmpFloat(a.X, b.X) })
		line, points, err := plotter.NewLinePoints(xy)
		if err != nil {
			continue
		}
		c := palette[i%len(palette)]
		line.LineStyle = draw.LineStyle{Color: c, Width: vg.Points(2)}
		points.GlyphStyle = draw.GlyphStyle{Color: c, Radius: vg.Points(3.5), Shape: glyphs[i%len(glyphs)]}
		p.Add(line, points)
		name := n.label(g)
		if name == "" {
			name = "RS+AG / AllReduce"
		}
		l.Add(name, line, points)
	}
	l.Add("1 = no cost", ref)
	return figure{RatioVsSize, p, l}
}

func yRange(stats []report.TimingStat, y func(report.TimingStat) float64) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, s := range stats {
		if v := y(s); v > 0 && !math.IsInf(v, 0) {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	if lo > hi {
		return 1, 10
	}
	return lo, hi
}

// sizeLabel says what the tick labels mean: 1K is 1024 bytes.
const sizeLabel = "message size (bytes; 1K = 1024)"

// sizeAxis makes x a log axis over the sizes, with ticks at powers of two
// labelled 1K, 64K, 1M, 256M.
func sizeAxis(p *plot.Plot, stats []report.TimingStat) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range stats {
		if s.SizeBytes > 0 {
			lo, hi = math.Min(lo, float64(s.SizeBytes)), math.Max(hi, float64(s.SizeBytes))
		}
	}
	if lo > hi {
		lo, hi = 1024, 1<<20
	}
	// A little room either side, so that the end points are not on the frame.
	p.X.Scale = plot.LogScale{}
	p.X.Min, p.X.Max = lo/1.5, hi*1.5
	p.X.Tick.Marker = sizeTicks{}
}

// sizeTicks are ticks at powers of two, labelled every 2^step with step
// the smallest of 1, 2, 5, 10 that leaves at most 12 labels; labelled
// exponents are multiples of the step, so 1K, 1M and 1G are among them.
type sizeTicks struct{}

func (sizeTicks) Ticks(min, max float64) []plot.Tick {
	e0, e1 := int(math.Ceil(math.Log2(min))), int(math.Floor(math.Log2(max)))
	step := 10
	for _, s := range []int{1, 2, 5} {
		if (e1-e0)/s+1 <= 12 {
			step = s
			break
		}
	}
	var t []plot.Tick
	for e := e0; e <= e1; e++ {
		tk := plot.Tick{Value: math.Exp2(float64(e))}
		if e%step == 0 {
			tk.Label = report.SizeText(int64(1) << e)
		}
		t = append(t, tk)
	}
	return t
}

// logTicks label 1, 2, 5 x 10^k over up to three decades, and the decades
// alone (2 and 5 as minor ticks) over more.
type logTicks struct{}

func (logTicks) Ticks(min, max float64) []plot.Tick {
	k0, k1 := int(math.Floor(math.Log10(min))), int(math.Ceil(math.Log10(max)))
	all := k1-k0 <= 3
	var t []plot.Tick
	for k := k0; k <= k1; k++ {
		for _, m := range []float64{1, 2, 5} {
			v := m * math.Pow(10, float64(k))
			if v < min || v > max {
				continue
			}
			tk := plot.Tick{Value: v}
			if m == 1 || all {
				tk.Label = number(v)
			}
			t = append(t, tk)
		}
	}
	return t
}

// number writes a tick value plainly: 0.5, 20, 1000, 1e+06.
func number(v float64) string {
	if v >= 1e6 || v < 1e-3 {
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// linearTicks label a 1, 2 or 5 x 10^k step that gives 5 to 10 labels,
// with a minor tick half way.
type linearTicks struct{}

func (linearTicks) Ticks(min, max float64) []plot.Tick {
	if !(max > min) {
		return []plot.Tick{{Value: min, Label: number(min)}}
	}
	k := math.Pow(10, math.Floor(math.Log10(max-min)))
	step := k
	for _, m := range []float64{0.1, 0.2, 0.5, 1, 2} {
		if (max-min)/(m*k) <= 10 {
			step = m * k
			break
		}
	}
	var t []plot.Tick
	for i := math.Ceil(min / step * 2); i*step/2 <= max; i++ {
		v := i * step / 2
		tk := plot.Tick{Value: v}
		if int(i)%2 == 0 {
			// As many decimals as the step has: 0.3, not 0.30000000000000004.
			tk.Label = strconv.FormatFloat(v, 'f', decimals(step), 64)
		}
		t = append(t, tk)
	}
	return t
}

// decimals is how many decimals a tick step needs: 0 for 50, 1 for 0.1.
func decimals(step float64) int {
	if d := int(-math.Floor(math.Log10(step) + 1e-9)); d > 0 {
		return d
	}
	return 0
}
