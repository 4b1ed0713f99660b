package plot

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// TrendPoint is one run's value in a figure over runs.
type TrendPoint struct {
	Run   int64   // the run's id in the history: the x axis
	Value float64 // the y axis
	Mark  bool    // drawn in vermillion (a suspect run, a slower run)
}

// Trend draws a small figure of one value over runs, for rsag history's
// page: the points joined, the marked ones in vermillion. logY draws the
// values (all positive: times) on a log axis, so that one slow run, 10x or
// 1000x the rest, does not flatten them into a line at the bottom; a
// value of 0 or less keeps the linear axis from 0.
func Trend(name, title, yLabel string, pts []TrendPoint, logY bool) (Inline, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text, p.Y.Label.Text = "run (its id in the history)", yLabel
	p.Add(plotter.NewGrid())
	xy := make(plotter.XYs, len(pts))
	var marked plotter.XYs
	for i, t := range pts {
		xy[i] = plotter.XY{X: float64(t.Run), Y: t.Value}
		if t.Mark {
			marked = append(marked, xy[i])
		}
	}
	blue := color.RGBA{0, 114, 178, 255}
	vermillion := color.RGBA{213, 94, 0, 255}
	if len(xy) > 1 {
		line, err := plotter.NewLine(xy)
		if err != nil {
			return Inline{}, err
		}
		line.Color = blue
		p.Add(line)
	}
	if len(xy) > 0 {
		dots, err := plotter.NewScatter(xy)
		if err != nil {
			return Inline{}, err
		}
		dots.Color, dots.Shape = blue, draw.CircleGlyph{}
		p.Add(dots)
	}
	if len(marked) > 0 {
		dots, err := plotter.NewScatter(marked)
		if err != nil {
			return Inline{}, err
		}
		dots.Color, dots.Shape, dots.Radius = vermillion, draw.CircleGlyph{}, vg.Points(4)
		p.Add(dots)
	}
	p.X.Tick.Marker = runTicks{}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, t := range pts {
		lo, hi = min(lo, t.Value), max(hi, t.Value)
	}
	if logY && lo > 0 {
		// A step reads as its ratio; the axis spans the values with a
		// margin, at least 2x, so that noise is not magnified either.
		p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, logTicks{} // 1, 2, 5 labelled: a span under a decade still reads
		pad := math.Sqrt(max(2, hi/lo) / (hi / lo))
		p.Y.Min, p.Y.Max = lo/pad/1.1, hi*pad*1.1
	} else {
		p.Y.Min = 0 // a step reads as its size, not magnified by a cut axis
	}
	c := vgsvg.New(6*vg.Inch, 3*vg.Inch)
	dc := draw.New(c)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	p.Draw(dc)
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return Inline{}, fmt.Errorf("plot %s: %w", name, err)
	}
	alt := fmt.Sprintf("%s. %s against the run, over %d runs", title, yLabel, len(pts))
	svg, err := inlineSVG(b.Bytes(), alt)
	if err != nil {
		return Inline{}, fmt.Errorf("plot %s: %w", name, err)
	}
	return Inline{Name: name, Kind: "Trend", Title: title, Alt: alt, SVG: svg}, nil
}

// runTicks label the x axis at whole run ids only: a run 1.5 is none.
type runTicks struct{}

func (runTicks) Ticks(min, max float64) []plot.Tick {
	var out []plot.Tick
	for _, t := range (plot.DefaultTicks{}).Ticks(min, max) {
		if t.Label != "" && t.Value == math.Trunc(t.Value) {
			t.Label = strconv.FormatFloat(t.Value, 'f', 0, 64)
		} else {
			t.Label = ""
		}
		out = append(out, t)
	}
	return out
}
