package plot

import (
	"image/color"
	"math"
	"slices"

	"rsag/coll"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Lines are named at their right end, in their colour, when a panel's
// lines differ by mode alone and there are few of them: the reader then
// need not match dash patterns against a legend at the far side of a grid.
// A figure of many lines (a sweep over types and reductions) keeps its
// legend alone, since a label per line would hide the lines.
const maxNamedLines = 6

// labelGap is the room between a line's last point and its name.
var labelGap = vg.Points(6)

// names are the labels of a figure's modes, and the text style they are
// drawn in.
type names struct {
	text  map[string]string // mode -> label
	style draw.TextStyle
	width vg.Length // the widest label, with its gap
}

// lineNames returns the labels for a figure's lines, told apart by mode
// alone in every panel, when it has at most maxNamedLines modes; nil for
// small multiples, whose panels are too narrow for them (the legend names
// the modes), and for the ratio figure.
func lineNames(lay layout, vals []value) *names {
	if len(lay.panels) > manyPanels {
		return nil
	}
	n := &names{text: map[string]string{}, style: newLegend(nil).TextStyle}
	for _, v := range vals {
		if v.line.Mode == "" {
			return nil // the ratio figure: one line, named by its axis
		}
		if _, ok := n.text[v.line.Mode]; ok {
			continue
		}
		m, ok := coll.ModeOf(coll.Mode(v.line.Mode))
		if !ok {
			return nil
		}
		n.text[v.line.Mode] = m.Label
		// gonum measures text a little narrower than the PNG renderer
		// draws it (see legendExtent).
		n.width = max(n.width, n.style.Width(m.Label)*1.15+labelGap)
	}
	if len(n.text) == 0 || len(n.text) > maxNamedLines {
		return nil
	}
	return n
}

// dataWidth estimates the width of a panel's data area, before it is drawn:
// the panel less its y axis (tick labels and marks), and in a figure of one
// panel, less the legend column too.
func dataWidth(panels int, legend []legendSection) vg.Length {
	const yAxis = 48 // points: "1000" at the tick size, the marks and padding
	if panels == 1 {
		lw, _ := legendExtent(legend)
		return width - lw - 2*pad - vg.Points(yAxis+40) // the axis label and its padding too
	}
	pw, _ := panelSize(panels)
	return pw - vg.Points(yAxis)
}

// makeRoom widens p's log x axis to the right so that the widest label
// fits after the largest size: on a log axis the share of the data area
// right of the last point is log(max/hi) / log(max/min).
func (n *names) makeRoom(p *plot.Plot, dataW vg.Length) {
	f := float64(n.width / dataW)
	if f >= 0.5 {
		return // no room: the labels would squeeze the lines into a corner
	}
	hi := p.X.Max / 1.5
	a := math.Log(hi / p.X.Min)
	p.X.Max = hi * math.Exp(max(f*a/(1-f), math.Log(1.5)))
}

// at is the plotter that names the panel's lines, each at its last point.
func (n *names) at(lines map[lineKey]plotter.XYs, keys []lineKey) plot.Plotter {
	l := &endLabels{style: n.style}
	for _, k := range keys {
		xy := lines[k]
		if len(xy) == 0 {
			continue
		}
		l.items = append(l.items, endLabel{at: xy[len(xy)-1], text: n.text[k.Mode], colour: textColour(modeColour(k.Mode))})
	}
	return l
}

// endLabels draws each label left-aligned just right of its point; labels
// that would overlap are moved apart vertically, keeping their order.
type endLabels struct {
	items []endLabel
	style draw.TextStyle
}

type endLabel struct {
	at     plotter.XY
	text   string
	colour color.Color
}

func (e *endLabels) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	type placed struct {
		x, y vg.Length
		endLabel
	}
	ps := make([]placed, 0, len(e.items))
	for _, it := range e.items {
		ps = append(ps, placed{trX(it.at.X), trY(it.at.Y), it})
	}
	if len(ps) == 0 {
		return
	}
	slices.SortStableFunc(ps, func(a, b placed) int { return cmpFloat(float64(a.y), float64(b.y)) })
	h := e.style.Height("Mg")
	// Push each label above the one below it, then, if the top one left
	// the data area, push them all back down from the top.
	for i := 1; i < len(ps); i++ {
		ps[i].y = max(ps[i].y, ps[i-1].y+h)
	}
	if top := c.Max.Y - h/2; ps[len(ps)-1].y > top {
		ps[len(ps)-1].y = top
		for i := len(ps) - 2; i >= 0; i-- {
			ps[i].y = min(ps[i].y, ps[i+1].y-h)
		}
	}
	sty := e.style
	sty.XAlign, sty.YAlign = draw.XLeft, draw.YCenter
	for _, pl := range ps {
		sty.Color = pl.colour
		c.FillText(sty, vg.Point{X: pl.x + labelGap, Y: pl.y}, pl.text)
	}
}

// textColour is a line's colour for text: the pale ones (Okabe-Ito's
// yellow and sky blue) darkened until text in them reads on white, their
// hue kept.
func textColour(c color.Color) color.Color {
	r, g, b, _ := c.RGBA()
	// Relative luminance of the (gamma-encoded) channels, roughly.
	if l := (0.2126*float64(r) + 0.7152*float64(g) + 0.0722*float64(b)) / 0xffff; l > 0.5 {
		k := 0.5 / l
		return color.RGBA{uint8(float64(r>>8) * k), uint8(float64(g>>8) * k), uint8(float64(b>>8) * k), 255}
	}
	return c
}
