// Package plot draws rsag's figures from the report's statistics, as PNG
// (to look at) and SVG (to put in a document), with gonum/plot and no
// external tool. Each timing figure is drawn once per run:
//
//	time_vs_size_<run>    median time per operation against size, log-log
//	busbw_vs_size_<run>   nccl-tests' bus bandwidth (GB/s) against size, log x
//	ratio_vs_size_<run>   decomposed / direct median against size, log x,
//	                      with the line ratio = 1
//	memory_by_mode        peak and steady bytes above the baseline per memory
//	                      mode (MiB, the highest rank), the analytic values
//	                      marked
//	locate_pairs          the locate phase's matrix of node pairs, a panel
//	                      per collective and size, suspects outlined
//
// <run> is the run's name with every character but letters, digits, '.',
// '-' and '_' replaced by '_'. When the only run is "default" (a config
// without [[run]] tables) the suffix is left off: time_vs_size.png.
//
// A run's figure is small multiples: one panel per case but its size and
// mode ("int8 sum, out-of-place, batched x20"), named by what differs
// between the panels, all on the same axis ranges so that the panels
// compare; a row per element type and reduction, a column per placement
// and method. Each line is then one mode of one case. The mode is the
// colour (Okabe-Ito's colour-blind-safe palette, the same in every figure:
// direct AllReduce blue, ReduceScatter + AllGather vermillion) and the
// line style too (solid, dashed, ...), so that grey-scale print keeps the
// modes apart. One legend at the right lists the modes; a field with one
// value over the run is named in the title instead. A figure of a few
// panels names each line at its end, so that the reader need not look
// across to the legend; one of many draws them smaller, with shared axes
// labelled on the outer panels, no grid and square markers, so that a
// sweep of hundreds of cases stays small enough to mail. Time axes are
// labelled in units (10 µs, 1 ms), never "100000" beside "1e+06".
//
// Like the CSVs and tables, it is a separate writer over the same rows.
package plot

import (
	"bytes"
	"fmt"
	"image/color"
	"image/png"
	"io"
	"math"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"rsag/internal/atomicfile"
	"rsag/model"
	"rsag/report"
)

// A figure of one panel is 11 x 6 inches: at 96 dpi the PNG is 1056 x 576
// pixels. A grid of panels gives each panel panelW x panelH and adds the
// title and the legend column around them.
const (
	width  = 11 * vg.Inch
	height = 6 * vg.Inch
	dpi    = 96

	panelW = 4.6 * vg.Inch
	panelH = 3.4 * vg.Inch

	// Small multiples: a figure of more than manyPanels panels (a sweep's
	// cases, a panel each) draws them smaller, smallW x smallH.
	manyPanels = 6
	smallW     = 3.3 * vg.Inch
	smallH     = 2.4 * vg.Inch
)

// panelSize is the size of each of n panels.
func panelSize(n int) (w, h vg.Length) {
	if n > manyPanels {
		return smallW, smallH
	}
	return panelW, panelH
}

// Names of the figures, without extension (and without a run's suffix).
const (
	TimeVsSize  = "time_vs_size"
	BusBWVsSize = "busbw_vs_size"
	RatioVsSize = "ratio_vs_size"
	// CrossoverVsSize is every decomposition's median over direct's, with
	// the 5% line and the measured crossover marked.
	CrossoverVsSize = "crossover_vs_size"
	MemoryByMode    = "memory_by_mode"
)

// figure is one or more panels with one legend, which is drawn in a column
// beside them so that it never hides a line. With one panel the title and
// axis labels are the plot's own; with more they are drawn once for the
// grid (title above, x label below, y label at the left), so that every
// panel is drawn alike and plot.Align lines their data areas up.
type figure struct {
	name           string
	kind, run      string // which figure (TimeVsSize, ...) of which run; no run for the memory figure
	title          string
	xLabel, yLabel string
	panels         []*plot.Plot // row-major, cols to a row
	cols           int
	legend         []legendSection
}

// legendSection is a group of legend entries under a heading; the heading
// is drawn only when the legend has more than one section.
type legendSection struct {
	heading string
	entries []legendEntry
}

type legendEntry struct {
	name   string
	thumbs []plot.Thumbnailer
}

func entryCount(ls []legendSection) int {
	n := 0
	for _, s := range ls {
		n += len(s.entries)
	}
	return n
}

// formats are the files each figure is written as.
var formats = []string{"png", "svg"}

// The figures register themselves as one output, written from the
// summary: a figure per run and kind, as its data allows (FiguresOf), each
// built once for its name and its file.
func init() {
	var patterns []string
	for _, name := range []string{TimeVsSize, BusBWVsSize, RatioVsSize, CrossoverVsSize, MemoryByMode, LocatePairs} {
		for _, format := range formats {
			// A run's suffix is "_" and at least one character (splitRuns).
			patterns = append(patterns, name+"."+format, name+"_?*."+format)
		}
	}
	report.Register(report.Output{Stage: report.Final, Patterns: patterns,
		Plan: func(in report.Input) ([]string, func(string) error) {
			if in.Summary == nil {
				// The figures' names follow from the summary; before it, only
				// every name the runs may give, for checking (report.MayWrite).
				return mayWrite(in), nil
			}
			figs := FiguresOf(*in.Summary)
			return figs.Names(), func(dir string) error {
				_, err := figs.Write(dir)
				return err
			}
		}})
}

// Figures are the figures a summary's data allows, built once: for each
// run in order of appearance its time, bus bandwidth, ratio and crossover
// figures, then the memory figure. The ratio figure needs cases with both
// modes, the memory figure needs memory rows; a figure without data is not
// there.
type Figures []figure

// Names are the base names of the files Write writes, in its order, so
// that a run can list them in run.json before they exist.
func (fs Figures) Names() []string {
	var names []string
	for _, f := range fs {
		for _, format := range formats {
			names = append(names, f.name+"."+format)
		}
	}
	return names
}

// Write writes every figure into dir (which must exist), each as .png and
// .svg, and returns the paths written. The figures are drawn at once, one
// goroutine each, as many at a time as Go has processors (drawing them
// took rank 0 0.2 to 0.36 s at the end of every run, the largest fixed
// cost after MPI's own), and written in order.
func (fs Figures) Write(dir string) ([]string, error) {
	type drawn struct {
		data [][]byte // by format
		err  error
	}
	all := make([]drawn, len(fs))
	var wg sync.WaitGroup
	slots := make(chan struct{}, runtime.GOMAXPROCS(0)) // a canvas each: bound the memory too
	for i, f := range fs {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			// One figure's formats in turn: drawing sets its panels' titles.
			for _, format := range formats {
				data, err := f.render(format)
				if err != nil {
					all[i].err = fmt.Errorf("plot %s: %w", filepath.Join(dir, f.name+"."+format), err)
					return
				}
				all[i].data = append(all[i].data, data)
			}
		})
	}
	wg.Wait()
	var written []string
	for i, f := range fs {
		if all[i].err != nil {
			return written, all[i].err
		}
		for j, format := range formats {
			path := filepath.Join(dir, f.name+"."+format)
			if err := atomicfile.Write(path, all[i].data[j]); err != nil {
				return written, fmt.Errorf("plot %s: %w", path, err)
			}
			written = append(written, path)
		}
	}
	return written, nil
}

// WriteAll writes the figures of s into dir (Figures.Write).
func WriteAll(dir string, s report.Summary) ([]string, error) { return FiguresOf(s).Write(dir) }

// Names are the base names of the files WriteAll writes for s.
func Names(s report.Summary) []string { return FiguresOf(s).Names() }

// FiguresOf builds the figures s has data for.
func FiguresOf(s report.Summary) Figures {
	var figs Figures
	for _, run := range splitRuns(s) {
		figs = append(figs, timeVsSize(run), busBWVsSize(run))
		if f, ok := ratioVsSize(run); ok {
			figs = append(figs, f)
		}
		if f, ok := crossoverVsSize(run); ok {
			figs = append(figs, f)
		}
	}
	if len(s.Memory) > 0 {
		figs = append(figs, memoryByMode(s.Memory))
	}
	if s.Locate != nil && len(s.Locate.Pairs) > 0 {
		figs = append(figs, locatePairs(*s.Locate))
	}
	return figs
}

// mayWrite is every figure a run with in's phases and timing runs may
// draw: each run's four timing figures (the ratio and crossover figures
// need data that may not come), and the memory figure.
func mayWrite(in report.Input) []string {
	var figs Figures
	if in.Ran.Has(report.Timing) {
		for _, suffix := range suffixes(in.Runs) {
			for _, name := range []string{TimeVsSize, BusBWVsSize, RatioVsSize, CrossoverVsSize} {
				figs = append(figs, figure{name: name + suffix})
			}
		}
	}
	if in.Ran.Has(report.Memory) && in.Runs != nil {
		figs = append(figs, figure{name: MemoryByMode})
	}
	return figs.Names()
}

// runStats is one run's statistics, fits and crossovers, and the suffix of
// its file names.
type runStats struct {
	name, suffix string
	stats        []report.TimingStat
	fits         []model.Fit
	crossovers   []report.SummaryCrossover
}

// splitRuns groups stats by run in order of first appearance and gives
// each a file-name suffix: none for a lone "default" run (the seed's
// names), else "_" and the sanitized name, made unique.
func splitRuns(sum report.Summary) []runStats {
	var runs []runStats
	idx := map[string]int{}
	for _, s := range sum.Timing {
		i, ok := idx[s.Run]
		if !ok {
			i = len(runs)
			idx[s.Run] = i
			runs = append(runs, runStats{name: s.Run})
		}
		runs[i].stats = append(runs[i].stats, s)
	}
	for _, f := range sum.Fits {
		if i, ok := idx[f.Run]; ok {
			runs[i].fits = append(runs[i].fits, f)
		}
	}
	for _, c := range sum.Crossover {
		if i, ok := idx[c.Run]; ok {
			runs[i].crossovers = append(runs[i].crossovers, c)
		}
	}
	names := make([]string, len(runs))
	for i, r := range runs {
		names[i] = r.name
	}
	for i, suffix := range suffixes(names) {
		runs[i].suffix = suffix
	}
	return runs
}

// suffixes are the file-name suffixes of runs, by name in order: none for
// a lone "default" run (the seed's names), else "_" and the sanitized
// name, made unique.
func suffixes(runs []string) []string {
	out := make([]string, len(runs))
	if len(runs) == 1 && runs[0] == "default" {
		return out
	}
	used := map[string]bool{}
	for i, name := range runs {
		base := "_" + sanitize(name)
		suffix := base
		for n := 2; used[suffix]; n++ {
			suffix = base + "-" + strconv.Itoa(n)
		}
		used[suffix] = true
		out[i] = suffix
	}
	return out
}

// sanitize keeps a run name's letters, digits, '.', '-' and '_' and
// replaces anything else (spaces, slashes) with '_', so that the name is
// safe in a file name on any system.
func sanitize(name string) string {
	var b strings.Builder
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	s := strings.Trim(b.String(), ".")
	if s == "" {
		return "run"
	}
	return s
}

// Text sizes.
var (
	titleSize      = vg.Points(15)
	panelTitleSize = vg.Points(12)
	labelSize      = vg.Points(13)
	tickSize       = vg.Points(11)
	legendSize     = vg.Points(11)
	pad            = vg.Points(12)
)

// legendExtent measures the legend column: its width and height.
func legendExtent(ls []legendSection) (w, h vg.Length) {
	heading := headingStyle()
	for _, s := range ls {
		if len(ls) > 1 && s.heading != "" {
			w = max(w, heading.Width(s.heading))
			h += heading.Height(s.heading) + vg.Points(2)
		}
		l := newLegend(s.entries)
		r := l.Rectangle(draw.Canvas{})
		w = max(w, r.Size().X)
		h += r.Size().Y + pad
	}
	// gonum measures legend text a little narrower than the PNG renderer
	// draws it: a tenth more keeps the longest entry inside the figure.
	return w * 1.1, h
}

func headingStyle() draw.TextStyle {
	s := newLegend(nil).TextStyle
	s.Color = color.Gray{70}
	return s
}

// drawLegend draws the sections top down from the top left of c.
func drawLegend(c draw.Canvas, ls []legendSection) {
	heading := headingStyle()
	top := c.Max.Y
	for _, s := range ls {
		if len(ls) > 1 && s.heading != "" {
			h := heading.Height(s.heading)
			c.FillText(heading, vg.Point{X: c.Min.X, Y: top - h + heading.FontExtents().Descent}, s.heading)
			top -= h + vg.Points(2)
		}
		l := newLegend(s.entries)
		l.Top, l.Left = true, true
		l.Draw(draw.Canvas{Canvas: c.Canvas, Rectangle: vg.Rectangle{Min: c.Min, Max: vg.Point{X: c.Max.X, Y: top}}})
		top -= l.Rectangle(draw.Canvas{}).Size().Y + pad
	}
}

// size is the figure's size: 11 x 6 inches for one panel, else the grid's
// panels, the title above and the legend column beside, tall enough for
// the legend.
func (f figure) size() (w, h vg.Length) {
	if len(f.panels) == 1 {
		return width, height
	}
	lw, lh := legendExtent(f.legend)
	rows := (len(f.panels) + f.cols - 1) / f.cols
	top, label := f.titleHeight(), labelHeight()
	pw, ph := panelSize(len(f.panels))
	return label + vg.Length(f.cols)*pw + lw + 3*pad, max(top+vg.Length(rows)*ph+label, top+lh+pad)
}

func labelStyle() draw.TextStyle {
	s := plot.New().X.Label.TextStyle
	s.Font.Size = labelSize
	return s
}

// labelHeight is the room a figure's axis label takes: the text and a gap.
func labelHeight() vg.Length { return labelStyle().Height("M") + vg.Points(8) }

func (f figure) titleHeight() vg.Length {
	s := titleStyle()
	return s.Height(f.title) + 2*vg.Points(8)
}

func titleStyle() draw.TextStyle {
	s := plot.New().Title.TextStyle
	s.Font.Size = titleSize
	s.XAlign, s.YAlign = draw.XCenter, draw.YTop
	return s
}

// render draws the panels on the left and the legend in a column on the
// right, level with the top of the data.
func (f figure) render(format string) ([]byte, error) {
	w, h := f.size()
	var c vg.CanvasWriterTo
	switch format {
	case "png":
		c = fastPNG{vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(dpi))}
	case "svg":
		c = vgsvg.New(w, h)
	default:
		return nil, fmt.Errorf("unknown format %q", format)
	}
	dc := draw.New(c)
	// A white background under everything, as plot.Draw gives a plot.
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())

	lw, _ := legendExtent(f.legend)
	if lw > 0 {
		lw += 2 * pad
	}
	var top vg.Length // from the top of the figure to the top of the legend
	if len(f.panels) == 1 {
		p := f.panels[0]
		p.Title.Text = f.title
		p.X.Label.Text, p.Y.Label.Text = f.xLabel, f.yLabel
		p.Draw(draw.Crop(dc, 0, -lw, 0, 0))
		top = p.Title.TextStyle.Height(p.Title.Text) + p.Title.Padding + pad
	} else {
		th := f.titleHeight()
		ts := titleStyle()
		dc.FillText(ts, vg.Point{X: (w - lw) / 2, Y: h - vg.Points(8)}, f.title)
		rows := (len(f.panels) + f.cols - 1) / f.cols
		grid := make([][]*plot.Plot, rows)
		for r := range grid {
			grid[r] = make([]*plot.Plot, f.cols)
			for col := range grid[r] {
				if i := r*f.cols + col; i < len(f.panels) {
					grid[r][col] = f.panels[i]
				}
			}
		}
		tiles := draw.Tiles{Rows: rows, Cols: f.cols, PadX: vg.Points(14), PadY: vg.Points(10),
			PadLeft: vg.Points(4), PadBottom: vg.Points(4)}
		lh := labelHeight()
		area := draw.Crop(dc, lh, -lw-pad, 0, -th)
		// The panels keep their height at the top when the legend is taller.
		_, ph := panelSize(len(f.panels))
		area.Min.Y = area.Max.Y - vg.Length(rows)*ph
		canvases := plot.Align(grid, tiles, area)
		// The axis labels, centred on the data areas of the outer panels.
		ls := labelStyle()
		ls.XAlign, ls.YAlign = draw.XCenter, draw.YBottom
		// plot.Align made every data area the same size, so any panel
		// measures them.
		dataL := f.panels[0].DataCanvas(canvases[0][0])
		dataR := f.panels[0].DataCanvas(canvases[0][f.cols-1])
		dataB := f.panels[0].DataCanvas(canvases[rows-1][0])
		descent := ls.FontExtents().Descent
		dc.FillText(ls, vg.Point{X: (dataL.Min.X + dataR.Max.X) / 2, Y: area.Min.Y - lh + descent}, f.xLabel)
		ls.Rotation = math.Pi / 2
		dc.FillText(ls, vg.Point{X: lh - descent, Y: (dataL.Max.Y + dataB.Min.Y) / 2}, f.yLabel)
		for r := range grid {
			for col, p := range grid[r] {
				if p != nil {
					p.Draw(canvases[r][col])
				}
			}
		}
		top = th + panelTitleSize + pad
	}
	if lw > 0 {
		drawLegend(draw.Crop(dc, w-lw+pad, -pad, pad, -top), f.legend)
	}
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// fastPNG writes its image as a PNG compressed for speed: the default
// compression took 60% of a figure's drawing (0.77 of 1.26 s for five
// runs of smoke's five figures) for files a few percent smaller.
type fastPNG struct{ *vgimg.Canvas }

func (c fastPNG) WriteTo(w io.Writer) (int64, error) {
	var b bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&b, c.Image()); err != nil {
		return 0, err
	}
	return b.WriteTo(w)
}

// newPlot is a plot with rsag's fonts and grid; its title and axis
// labels are the figure's, set when it is drawn.
func newPlot() *plot.Plot {
	p := newBarePlot()
	p.Add(&plotter.Grid{Vertical: draw.LineStyle{Color: color.Gray{225}, Width: vg.Points(0.5)},
		Horizontal: draw.LineStyle{Color: color.Gray{225}, Width: vg.Points(0.5)}})
	return p
}

// newBarePlot is newPlot without the grid, for small multiples: their
// panels are read against each other, not against a grid.
func newBarePlot() *plot.Plot {
	p := plot.New()
	p.Title.TextStyle.Font.Size = titleSize
	p.Title.Padding = vg.Points(8)
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font.Size = labelSize
		a.Tick.Label.Font.Size = tickSize
	}
	return p
}

func newLegend(entries []legendEntry) plot.Legend {
	l := plot.NewLegend()
	l.TextStyle.Font.Size = legendSize
	l.ThumbnailWidth = vg.Points(36)
	l.Padding = vg.Points(3)
	for _, e := range entries {
		l.Add(e.name, e.thumbs...)
	}
	return l
}

// sizeLabel says what the tick labels mean: 1K is 1024 bytes.
const sizeLabel = "message size (bytes; 1K = 1024)"

// sizeAxis makes x a log axis over [lo, hi] bytes, with ticks at powers of
// two labelled 1K, 64K, 1M, 256M; at most maxLabels labels.
func sizeAxis(p *plot.Plot, lo, hi float64, maxLabels int) {
	if !(lo > 0 && lo <= hi) {
		lo, hi = 1024, 1<<20
	}
	// A little room either side, so that the end points are not on the frame.
	p.X.Scale = plot.LogScale{}
	p.X.Min, p.X.Max = lo/1.5, hi*1.5
	p.X.Tick.Marker = sizeTicks{max: maxLabels, last: hi}
}

// sizeTicks are ticks at powers of two, labelled every 2^step with step
// the smallest of 1, 2, 4, 10 that leaves at most max labels (12 when
// unset); labelled exponents are multiples of the step, so 1K, 1M and 1G
// (or 1K, 64K, 1M, 16M, 256M) are among them.
// Past last (the largest size, when set) there are no ticks: the axis
// may reach further, to make room for the lines' names, and a tick there
// would read as a size that was measured.
type sizeTicks struct {
	max  int
	last float64
}

func (st sizeTicks) Ticks(min, max float64) []plot.Tick {
	most := st.max
	if most <= 0 {
		most = 12
	}
	if st.last > 0 {
		max = math.Min(max, st.last*1.5)
	}
	e0, e1 := int(math.Ceil(math.Log2(min))), int(math.Floor(math.Log2(max)))
	step := 10
	for _, s := range []int{1, 2, 4} {
		if labelled(e0, e1, s) <= most {
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

// labelled counts the multiples of step in [e0, e1].
func labelled(e0, e1, step int) int {
	n := 0
	for e := e0; e <= e1; e++ {
		if e%step == 0 {
			n++
		}
	}
	return n
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
				tk.Label = usTick(v)
			}
			t = append(t, tk)
		}
	}
	return t
}

// usTick writes a time in microseconds in the unit that keeps it short,
// every label of an axis alike: 500 ns, 20 µs, 1 ms, 100 ms, 2 s (not
// "100000" beside "1e+06").
func usTick(us float64) string {
	for _, u := range []struct {
		name string
		per  float64
	}{{"s", 1e6}, {"ms", 1e3}, {"µs", 1}, {"ns", 1e-3}} {
		if us >= u.per || u.name == "ns" {
			return strconv.FormatFloat(us/u.per, 'f', -1, 64) + " " + u.name
		}
	}
	return ""
}

// number writes a tick value plainly: 0.5, 20, 1000, 2500000.
func number(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// majorOnly is a ticker's labelled ticks alone: small multiples draw no
// minor ticks, which would crowd a small panel and weigh its SVG.
type majorOnly struct{ plot.Ticker }

func (m majorOnly) Ticks(min, max float64) []plot.Tick {
	var out []plot.Tick
	for _, t := range m.Ticker.Ticks(min, max) {
		if t.Label != "" {
			out = append(out, t)
		}
	}
	return out
}

// unlabelled is a panel's ticks without their labels: inside a grid only
// the outer panels label their axes, which the others share.
type unlabelled struct{ plot.Ticker }

func (u unlabelled) Ticks(min, max float64) []plot.Tick {
	t := u.Ticker.Ticks(min, max)
	for i := range t {
		t[i].Label = "" // drawn as a short tick, with no text to weigh the page
	}
	return t
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
