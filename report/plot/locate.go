package plot

import (
	"fmt"
	"image/color"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"rsag/report"
)

// LocatePairs is the locate phase's pair matrix: a panel per probe
// (collective and size), cell (i, j) the figure of the pair of nodes i and
// j (bus bandwidth over the median), the diagonal each node's inside
// figure; red is slower than the median, blue faster, grey not measured;
// suspect nodes have their row and column outlined, suspect links their
// two cells.
const LocatePairs = "locate_pairs"

// figureRange is the colour scale's: 0.25x to 4x the median, log2.
const figureRange = 2.0

// locatePairs draws the matrix from the summary's locate section.
func locatePairs(l report.SummaryLocate) figure {
	n := len(l.Nodes)
	index := map[string]int{}
	for i, node := range l.Nodes {
		index[node.Host] = i
	}
	suspectNodes := map[int]bool{}
	var suspectLinks [][2]int
	for _, s := range l.Suspects {
		switch {
		case len(s.Ranks) > 0: // a rank's or a rank link's: within a node, not in this matrix
		case len(s.Nodes) == 1:
			suspectNodes[index[s.Nodes[0]]] = true
		case len(s.Nodes) == 2:
			suspectLinks = append(suspectLinks, [2]int{index[s.Nodes[0]], index[s.Nodes[1]]})
		}
	}
	sizes := map[int64]bool{}
	for _, p := range l.Probes {
		sizes[p.SizeBytes] = true
	}
	f := figure{name: LocatePairs, kind: LocatePairs, cols: max(1, len(sizes)),
		title:  "Node pairs: bus bandwidth / the median (diagonal: inside each node); suspects outlined",
		xLabel: "node", yLabel: "node"}
	for pr, probe := range l.Probes {
		grid := newMatrix(n)
		for _, p := range l.Pairs {
			a, b := index[p.Nodes[0]], index[p.Nodes[1]]
			for _, fig := range p.Figures {
				if fig.Probe == pr {
					grid.set(a, b, fig.Figure)
					grid.set(b, a, fig.Figure)
				}
			}
		}
		for i, node := range l.Nodes {
			for _, fig := range node.Inside {
				if fig.Probe == pr {
					grid.set(i, i, fig.Figure)
				}
			}
		}
		p := newPlot()
		p.Title.Text = fmt.Sprintf("%s %s (%s)", collectiveLabel(probe.Collective), report.SizeText(probe.SizeBytes), probe.Bound)
		p.Title.TextStyle.Font.Size = panelTitleSize
		h := plotter.NewHeatMap(grid, figurePalette(64))
		h.Min, h.Max, h.NaN = -figureRange, figureRange, color.Gray{215}
		h.Rasterized = n > 64 // a vector cell per pair is slow and large past that
		p.Add(h, &outlines{n: n, nodes: suspectNodes, links: suspectLinks})
		p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = -0.5, float64(n)-0.5, -0.5, float64(n)-0.5
		names := make([]string, n)
		for i, node := range l.Nodes {
			names[i] = node.Host
		}
		p.X.Tick.Marker, p.Y.Tick.Marker = nodeTicks{names, false}, nodeTicks{names, true}
		f.panels = append(f.panels, p)
	}
	var scale []legendEntry
	for _, v := range []float64{0.25, 0.5, 0.8, 1, 2, 4} {
		name := fmt.Sprintf("%gx the median", v)
		if v == l.Threshold {
			name += " (threshold)"
		}
		scale = append(scale, legendEntry{name, []plot.Thumbnailer{swatch{fill: figureColour(math.Log2(v))}}})
	}
	scale = append(scale, legendEntry{"not measured", []plot.Thumbnailer{swatch{fill: color.Gray{215}}}})
	f.legend = []legendSection{
		{heading: "figure", entries: scale},
		{heading: "suspects", entries: []legendEntry{{"suspect node (row, column) or link", []plot.Thumbnailer{swatch{fill: color.White, outline: true}}}}},
	}
	if len(f.panels) == 1 {
		f.panels[0].Title.Text = f.title + "\n" + f.panels[0].Title.Text
	}
	return f
}

func collectiveLabel(name string) string {
	for _, c := range collectiveLabels {
		if c[0] == name {
			return c[1]
		}
	}
	return name
}

var collectiveLabels = [][2]string{{"all-reduce", "AllReduce"}, {"reduce-scatter", "ReduceScatter"}, {"all-gather", "AllGather"}}

// matrix is an n x n grid of log2 figures for gonum's heat map, cell
// (column i, row j) the pair of nodes i and j; NaN where nothing was
// measured. Row 0 is drawn at the top, as a matrix is read.
type matrix struct {
	n int
	z []float64
}

func newMatrix(n int) *matrix {
	m := &matrix{n: n, z: make([]float64, n*n)}
	for i := range m.z {
		m.z[i] = math.NaN()
	}
	return m
}

// set stores a figure, clamped to the colour scale (the heat map indexes
// its palette by the value, and would run off its end).
func (m *matrix) set(col, row int, figure float64) {
	if !(figure > 0) {
		return
	}
	m.z[row*m.n+col] = math.Max(-figureRange, math.Min(figureRange, math.Log2(figure)))
}

func (m *matrix) Dims() (c, r int)   { return m.n, m.n }
func (m *matrix) Z(c, r int) float64 { return m.z[(m.n-1-r)*m.n+c] }
func (m *matrix) X(c int) float64    { return float64(c) }
func (m *matrix) Y(r int) float64    { return float64(r) }

// figurePalette runs from red (0.25x) through white (1x) to blue (4x).
type figurePalette int

func (p figurePalette) Colors() []color.Color {
	out := make([]color.Color, int(p))
	for i := range out {
		out[i] = figureColour(-figureRange + 2*figureRange*float64(i)/float64(int(p)-1))
	}
	return out
}

// figureColour is the colour of a log2 figure.
func figureColour(v float64) color.Color {
	slow, fast := color.RGBA{0xc0, 0x1f, 0x2f, 255}, color.RGBA{0x25, 0x5f, 0xa8, 255}
	t := math.Max(-1, math.Min(1, v/figureRange))
	to := fast
	if t < 0 {
		to, t = slow, -t
	}
	mix := func(a uint8) uint8 { return uint8(255 + (float64(a)-255)*t) }
	return color.RGBA{mix(to.R), mix(to.G), mix(to.B), 255}
}

// outlines draws a suspect node's row and column and a suspect link's two
// cells as black rectangles.
type outlines struct {
	n     int
	nodes map[int]bool
	links [][2]int
}

func (o *outlines) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	sty := draw.LineStyle{Color: color.Black, Width: vg.Points(1.6)}
	// rect outlines columns c0..c1 and rows r0..r1 (matrix rows, 0 at the top).
	rect := func(c0, c1, r0, r1 int) {
		x0, x1 := trX(float64(c0)-0.5), trX(float64(c1)+0.5)
		y0, y1 := trY(float64(o.n-1-r1)-0.5), trY(float64(o.n-1-r0)+0.5)
		c.StrokeLines(sty, []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}, {X: x0, Y: y0}})
	}
	nodes := make([]int, 0, len(o.nodes))
	for i := range o.nodes {
		nodes = append(nodes, i)
	}
	slices.Sort(nodes)
	for _, i := range nodes {
		rect(0, o.n-1, i, i)
		rect(i, i, 0, o.n-1)
	}
	for _, l := range o.links {
		rect(l[0], l[0], l[1], l[1])
		rect(l[1], l[1], l[0], l[0])
	}
}

// nodeTicks label every node up to 16 rows or 8 columns, else every k-th
// so that about that many labels show (names side by side take more room
// than names one above the other); rows (y) count from the top.
type nodeTicks struct {
	names []string
	rows  bool
}

func (t nodeTicks) Ticks(min, max float64) []plot.Tick {
	n := len(t.names)
	most := 8
	if t.rows {
		most = 16
	}
	if n <= 16 {
		most = n
	}
	step := max1((n + most - 1) / most)
	var out []plot.Tick
	for i := 0; i < n; i++ {
		if i%step != 0 {
			continue
		}
		v := float64(i)
		if t.rows {
			v = float64(n - 1 - i)
		}
		out = append(out, plot.Tick{Value: v, Label: shortName(t.names[i])})
	}
	return out
}

func max1(v int) int {
	if v < 1 {
		return 1
	}
	return v
}

// shortName keeps a host's first label: node3.cluster.example is node3.
func shortName(h string) string {
	if i := strings.IndexByte(h, '.'); i > 0 {
		return h[:i]
	}
	return h
}

// swatch is a legend thumbnail: a filled square, outlined when asked.
type swatch struct {
	fill    color.Color
	outline bool
}

func (s swatch) Thumbnail(c *draw.Canvas) {
	pts := []vg.Point{{X: c.Min.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Max.Y}, {X: c.Min.X, Y: c.Max.Y}}
	c.FillPolygon(s.fill, pts)
	sty := draw.LineStyle{Color: color.Gray{150}, Width: vg.Points(0.5)}
	if s.outline {
		sty = draw.LineStyle{Color: color.Black, Width: vg.Points(1.6)}
	}
	c.StrokeLines(sty, append(pts, pts[0]))
}
