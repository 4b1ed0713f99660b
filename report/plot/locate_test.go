package plot

import (
	"bytes"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"rsag/report"
)

// locateSummary is a locate section of n nodes whose every pair ran (or,
// past 64, ring neighbours and one stride), at two probes: figures 1 but
// for node slow's pairs and the link's, at 0.3 of the median.
func locateSummary(n, slow int, link [2]int) report.SummaryLocate {
	l := report.SummaryLocate{Threshold: 0.8, Repeats: 3, Probes: []report.SummaryLocateProbe{
		{Collective: "all-reduce", SizeBytes: 8192, Bound: "latency"}, {Collective: "all-reduce", SizeBytes: 1 << 20, Bound: "bandwidth"}}}
	name := func(i int) string { return fmt.Sprintf("node%d", i+1) }
	for i := range n {
		l.Nodes = append(l.Nodes, report.SummaryLocateNode{Host: name(i), Ranks: []int{i},
			Inside: []report.SummaryLocateFigure{{Probe: 0, Figure: 1}, {Probe: 1, Figure: 1}}})
	}
	pair := func(a, b int) {
		fig := 1.0
		if a == slow || b == slow || (a == link[0] && b == link[1]) {
			fig = 0.3
		}
		l.Pairs = append(l.Pairs, report.SummaryLocatePair{Nodes: []string{name(a), name(b)},
			Figures: []report.SummaryLocateFigure{{Probe: 0, Figure: 1}, {Probe: 1, Figure: fig}}})
	}
	for a := range n {
		for b := a + 1; b < n; b++ {
			if n <= 64 || b == a+1 || b == a+n/2 {
				pair(a, b)
			}
		}
	}
	if slow >= 0 {
		l.Suspects = append(l.Suspects, report.SummaryLocateSuspect{Kind: "node", Nodes: []string{name(slow)}})
	}
	if link != [2]int{} {
		l.Suspects = append(l.Suspects, report.SummaryLocateSuspect{Kind: "link", Nodes: []string{name(link[0]), name(link[1])}})
	}
	return l
}

// slowPixels counts the PNG's pixels in the red of a figure below 0.6x.
func slowPixels(t *testing.T, data []byte) int {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if r>>8 > g>>8+50 && r>>8 > bl>>8+50 {
				n++
			}
		}
	}
	return n
}

// The pair matrix is one more figure: planned and written as PNG and SVG
// when the locate phase ran pairs; slow pairs are red, healthy ones not;
// suspects are outlined (the SVG has their rectangles).
func TestLocatePairsFigure(t *testing.T) {
	s := report.Summary{}
	if slices.ContainsFunc(FiguresOf(s).Names(), func(n string) bool { return strings.HasPrefix(n, LocatePairs) }) {
		t.Fatal("a pair matrix without the locate phase")
	}
	healthy, faulty := locateSummary(4, -1, [2]int{}), locateSummary(4, 2, [2]int{0, 1})
	var red []int
	for _, l := range []report.SummaryLocate{healthy, faulty} {
		s.Locate = &l
		dir := t.TempDir()
		figs := FiguresOf(s)
		if names := figs.Names(); !slices.Equal(names, []string{LocatePairs + ".png", LocatePairs + ".svg"}) {
			t.Fatalf("figures %v", names)
		}
		if _, err := figs.Write(dir); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(filepath.Join(dir, LocatePairs+".png"))
		if err != nil {
			t.Fatal(err)
		}
		red = append(red, slowPixels(t, data))
		svg, err := os.ReadFile(filepath.Join(dir, LocatePairs+".svg"))
		if err != nil || !strings.Contains(string(svg), "node4") {
			t.Errorf("the SVG names no node: %v", err)
		}
	}
	// The red legend swatches are in both; the faulty run's four slow
	// pairs add cells' worth.
	if red[1] < red[0]+2000 {
		t.Errorf("%d red pixels with a slow node and a slow link, %d without: want the slow cells red", red[1], red[0])
	}
}

// 1024 nodes of the sampled schedule draw as a raster, with labels thinned.
func TestLocatePairsFigureAt1024Nodes(t *testing.T) {
	l := locateSummary(1024, 100, [2]int{3, 4})
	f := locatePairs(l)
	data, err := f.render("png")
	if err != nil {
		t.Fatal(err)
	}
	if slowPixels(t, data) == 0 {
		t.Error("no slow cell drawn at 1024 nodes")
	}
	if ticks := (nodeTicks{names: make([]string, 1024), rows: true}).Ticks(0, 1023); len(ticks) > 16 {
		t.Errorf("%d labels on 1024 nodes", len(ticks))
	}
}
