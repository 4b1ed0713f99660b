package plot

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"encoding/xml"
	"errors"
	"flag"
	"fmt"
	"image"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/plot"

	"rsag/coll"
	"rsag/report"
)

var update = flag.Bool("update", false, "rewrite docs/plots from the real run in docs/runs")

// realRun is a 2 x H200 run from before the sweep: its rows lack the case
// columns, which readRows fills with the seed's single case.
const realRun = "../../docs/runs/2026-11-29-h200x2-ch7"

// readCSV reads a combined CSV into maps of column to value.
func readCSV(t *testing.T, path string) []map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out []map[string]string
	for _, rec := range recs[1:] {
		m := map[string]string{}
		for i, h := range recs[0] {
			m[h] = rec[i]
		}
		out = append(out, m)
	}
	return out
}

func num[T int | int64 | float64](t *testing.T, s string) T {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatal(err)
	}
	return T(v)
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func realRows(t *testing.T) ([]report.TimingRow, []report.MemoryRow) {
	var timings []report.TimingRow
	for _, m := range readCSV(t, filepath.Join(realRun, "timings.csv")) {
		batch := 1
		if m["batch"] != "" {
			batch = num[int](t, m["batch"])
		}
		timings = append(timings, report.TimingRow{Case: coll.Case{SizeBytes: num[int64](t, m["size_bytes"]), Mode: coll.Mode(m["mode"]), Run: or(m["run"], "default"), DType: mustDType(or(m["dtype"], "float32")), Op: mustOp(or(m["op"], "sum")), Placement: coll.Placement(or(m["placement"], "out-of-place")), Method: coll.Method(or(m["method"], "per-op")), Batch: batch}, Rank: num[int](t, m["rank"]), Cycle: num[int](t, m["cycle"]), DurationUS: num[float64](t, m["duration_us"]),
			Correct: report.VerdictOf(true, m["correct"] == "True"), Host: m["host"]})
	}
	var memory []report.MemoryRow
	for _, m := range readCSV(t, filepath.Join(realRun, "memory.csv")) {
		memory = append(memory, report.MemoryRow{Rank: num[int](t, m["rank"]), Mode: m["mode"],
			PayloadBytes: num[int64](t, m["payload_bytes"]), BaselineBytes: num[int64](t, m["baseline_bytes"]),
			SteadyDeltaBytes: num[int64](t, m["steady_delta_bytes"]), PeakDeltaBytes: num[int64](t, m["peak_delta_bytes"]),
			Correct: m["correct"] == "True", Host: m["host"], AnalyticSteady: num[int64](t, m["analytic_steady_bytes"]),
			AnalyticPeak: num[int64](t, m["analytic_peak_bytes"]), DeviceSteadyDelta: num[int64](t, m["device_steady_delta_bytes"]),
			DevicePeakDelta: num[int64](t, m["device_peak_delta_bytes"])})
	}
	return timings, memory
}

// summaryOf is a summary with the given statistics and memory rows.
func summaryOf(stats []report.TimingStat, memory []report.MemoryRow) report.Summary {
	s := report.NewSummary(report.SummaryInput{Rows: report.Rows{Memory: memory}, World: 2})
	s.Timing = stats
	s.Fits, s.Crossover, s.Breakdown = report.FitsOf(stats)
	return s
}

// checkFiles checks that every figure came out as a real PNG and SVG.
func checkFiles(t *testing.T, dir string, written []string, names ...string) {
	t.Helper()
	if len(written) != 2*len(names) {
		t.Errorf("wrote %v, want %d figures x png, svg", written, len(names))
	}
	for _, name := range names {
		pngPath := filepath.Join(dir, name+".png")
		data, err := os.ReadFile(pngPath)
		if err != nil {
			t.Error(err)
			continue
		}
		img, err := png.Decode(bytes.NewReader(data))
		if err != nil {
			t.Errorf("%s: %v", pngPath, err)
			continue
		}
		if b := img.Bounds(); len(data) <= 10<<10 || b.Dx() < 600 || b.Dy() < 300 || b.Dx() > 4000 || b.Dy() > 3000 {
			t.Errorf("%s: %d bytes, %d x %d px: want > 10 KB, 600 to 4000 px wide, 300 to 3000 high",
				pngPath, len(data), b.Dx(), b.Dy())
		}
		if fi, err := os.Stat(pngPath); err == nil && fi.Mode().Perm() != 0o644 {
			t.Errorf("%s: mode %v, want 0644 so that others can read it", pngPath, fi.Mode().Perm())
		}
		svgPath := filepath.Join(dir, name+".svg")
		data, err = os.ReadFile(svgPath)
		if err != nil {
			t.Error(err)
			continue
		}
		if len(data) <= 1<<10 {
			t.Errorf("%s: only %d bytes", svgPath, len(data))
		}
		if err := wellFormed(data); err != nil {
			t.Errorf("%s: %v", svgPath, err)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != len(written) {
		t.Errorf("%d files in %s, want %d (no temporary files left)", len(entries), dir, len(written))
	}
}

func wellFormed(data []byte) error {
	d := xml.NewDecoder(bytes.NewReader(data))
	root := ""
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if se, ok := tok.(xml.StartElement); ok && root == "" {
			root = se.Name.Local
		}
	}
	if root != "svg" {
		return errors.New("root element is " + root + ", not svg")
	}
	return nil
}

var allFigures = []string{TimeVsSize, BusBWVsSize, RatioVsSize, CrossoverVsSize, MemoryByMode}

func TestWriteAllRealRun(t *testing.T) {
	timings, memory := realRows(t)
	stats := report.TimingStats(timings, 2, 0)
	dir := t.TempDir()
	written, err := WriteAll(dir, summaryOf(stats, memory))
	if err != nil {
		t.Fatal(err)
	}
	checkFiles(t, dir, written, allFigures...)
	if *update {
		for _, name := range allFigures {
			data, err := os.ReadFile(filepath.Join(dir, name+".png"))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll("../../docs/plots", 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join("../../docs/plots", name+".png"), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// sweepCase is one case of a synthetic sweep.
type sweepCase struct {
	run, dtype, op, placement, method string
}

// synthStats times each case at sizes 1K to 256M in both modes, with
// times that differ by case so that the lines are told apart.
func synthStats(cases []sweepCase) []report.TimingStat {
	var stats []report.TimingStat
	for _, c := range cases {
		batch := 1
		if c.method != "per-op" {
			batch = 20
		}
		for e := 10; e <= 28; e += 2 {
			size := int64(1) << e
			base := 12 + float64(size)/350e3
			if c.method == "graph" {
				base -= 6
			}
			if c.dtype == "bfloat16" {
				base *= 0.8
			}
			if c.op == "max" {
				base *= 1.1
			}
			if c.placement == "in-place" {
				base *= 0.95
			}
			for _, mode := range []string{"direct", "decomposed"} {
				us := base
				if mode == "decomposed" {
					us = base*1.1 + 8*math.Exp(-float64(e-10)/4)
				}
				bw := float64(size) / us / 1e3
				stats = append(stats, report.TimingStat{Case: coll.Case{Run: c.run, SizeBytes: size, DType: mustDType(c.dtype), Op: mustOp(c.op), Placement: coll.Placement(c.placement), Method: coll.Method(c.method), Batch: batch, Mode: coll.Mode(mode)}, MedianUS: us, AlgBWGBps: bw, BusBWGBps: bw * 1.5, Ranks: 4, Samples: 10})
			}
		}
	}
	return stats
}

// product is every combination of the given values.
func product(runs, dtypes, ops, placements, methods []string) []sweepCase {
	var out []sweepCase
	for _, r := range runs {
		for _, d := range dtypes {
			for _, o := range ops {
				for _, p := range placements {
					for _, m := range methods {
						out = append(out, sweepCase{r, d, o, p, m})
					}
				}
			}
		}
	}
	return out
}

// sweepStats is one "default" run of two element types by two methods.
func sweepStats() []report.TimingStat {
	return synthStats(product([]string{"default"}, []string{"float32", "bfloat16"}, []string{"sum"},
		[]string{"out-of-place"}, []string{"per-op", "graph"}))
}

// multiRunStats is a sweep of two runs: "matrix", three element types by
// two reductions by both placements by three methods, and "my run/2", one
// case; its name needs sanitizing.
func multiRunStats() []report.TimingStat {
	cases := product([]string{"matrix"}, []string{"float32", "bfloat16", "int8"}, []string{"sum", "max"},
		[]string{"out-of-place", "in-place"}, []string{"per-op", "batched", "graph"})
	cases = append(cases, sweepCase{"my run/2", "float32", "sum", "out-of-place", "per-op"})
	return synthStats(cases)
}

func TestWriteAllSweep(t *testing.T) {
	dir := t.TempDir()
	written, err := WriteAll(dir, summaryOf(sweepStats(), nil))
	if err != nil {
		t.Fatal(err)
	}
	// One run named "default": the seed's names, without a suffix.
	checkFiles(t, dir, written, TimeVsSize, BusBWVsSize, RatioVsSize, CrossoverVsSize)
	keep(t, written)
}

func TestWriteAllMultiRun(t *testing.T) {
	dir := t.TempDir()
	written, err := WriteAll(dir, summaryOf(multiRunStats(), nil))
	if err != nil {
		t.Fatal(err)
	}
	checkFiles(t, dir, written,
		"time_vs_size_matrix", "busbw_vs_size_matrix", "ratio_vs_size_matrix", "crossover_vs_size_matrix",
		"time_vs_size_my_run_2", "busbw_vs_size_my_run_2", "ratio_vs_size_my_run_2", "crossover_vs_size_my_run_2")
	// The matrix run's grid (2 placements x 3 methods) is larger than the
	// one-panel figure of the other run.
	grid, single := pngSize(t, filepath.Join(dir, "time_vs_size_matrix.png")), pngSize(t, filepath.Join(dir, "time_vs_size_my_run_2.png"))
	if grid.X <= single.X || grid.Y <= 500 {
		t.Errorf("matrix figure %v, one-panel figure %v: want the grid wider and over 500 px high", grid, single)
	}
	keep(t, written)
}

func pngSize(t *testing.T, path string) image.Point {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cfg, err := png.DecodeConfig(f)
	if err != nil {
		t.Fatal(err)
	}
	return image.Point{X: cfg.Width, Y: cfg.Height}
}

// keep copies figures to $RSAG_PLOT_DIR, to look at them:
// RSAG_PLOT_DIR=/tmp/p go test ./report/plot -run Sweep
func keep(t *testing.T, written []string) {
	out := os.Getenv("RSAG_PLOT_DIR")
	if out == "" {
		return
	}
	for _, p := range written {
		data, _ := os.ReadFile(p)
		if err := os.WriteFile(filepath.Join(out, t.Name()+"_"+filepath.Base(p)), data, 0o644); err != nil {
			t.Error(err)
		}
	}
}

// TestSweepExample draws the real 2 x H200 sweep's time figure when
// RSAG_SUMMARY names its summary.json; with -update it becomes
// docs/plots/time_vs_size_matrix.png.
func TestSweepExample(t *testing.T) {
	path := os.Getenv("RSAG_SUMMARY")
	if path == "" {
		t.Skip("RSAG_SUMMARY is not set")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var summary struct {
		Timing []report.TimingStat `json:"timing"`
	}
	if err := json.Unmarshal(data, &summary); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	written, err := WriteAll(dir, summaryOf(summary.Timing, nil))
	if err != nil {
		t.Fatal(err)
	}
	keep(t, written)
	name := filepath.Join(dir, "time_vs_size_matrix.png")
	if _, err := os.Stat(name); err != nil {
		t.Fatal(err)
	}
	if *update {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile("../../docs/plots/time_vs_size_matrix.png", data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// The legend lists the modes alone, however many types and reductions:
// each panel names its case.
func TestLegendListsTheModes(t *testing.T) {
	lay := layoutOf(splitRuns(summaryOf(multiRunStats(), nil))[0])
	if got := entryCount(timingLegend(lay, []string{"direct", "decomposed"})); got != 2 {
		t.Errorf("timing legend has %d entries, want the 2 modes", got)
	}
	if got := entryCount(ratioLegend(lay)); got != 2 {
		t.Errorf("ratio legend has %d entries, want the ratio and 1", got)
	}
}

// The mode is the colour, the same in every figure and for any element
// type: its record's colour and dashes (coll's test has them apart), from
// Okabe and Ito's palette.
func TestModesHaveTheirOwnColour(t *testing.T) {
	if got := ModeColour("direct"); got != "#0072b2" {
		t.Errorf("direct AllReduce is %s, want Okabe-Ito blue #0072b2", got)
	}
	if got := ModeColour("decomposed"); got != "#d55e00" {
		t.Errorf("RS + AG is %s, want Okabe-Ito vermillion #d55e00", got)
	}
	for _, name := range coll.Modes {
		m, _ := coll.ModeOf(name)
		if got := ModeColour(string(name)); got != m.Colour {
			t.Errorf("%s is drawn %s, its record says %s", name, got, m.Colour)
		}
		d, title := modeStyle(string(name))
		if fmt.Sprint(d) != fmt.Sprint(m.Dash) || title != m.Title {
			t.Errorf("%s is drawn with dashes %v and named %q, its record says %v and %q", name, d, title, m.Dash, m.Title)
		}
	}
	lay := layout{dtypes: []string{"float32", "int8"}, ops: []string{"sum"}, panels: []panelKey{{}}}
	a, b := lay.lineStyle(lineKey{"float32", "sum", "direct"}), lay.lineStyle(lineKey{"int8", "sum", "direct"})
	if a.Color != b.Color {
		t.Errorf("direct is drawn %v for float32 and %v for int8: the colour is the mode's", a.Color, b.Color)
	}
}

// A figure whose lines differ by mode alone names them at their ends, in
// their colours; one of many types and reductions does not.
func TestLinesAreNamedWhenFew(t *testing.T) {
	one := splitRuns(summaryOf(sweepStats()[:20], nil))[0] // float32 sum per-op, both modes
	lay := layoutOf(one)
	n := lineNames(lay, timingValues(one.stats, func(s report.TimingStat) float64 { return s.MedianUS }))
	if n == nil || n.text["direct"] != "direct AllReduce" || n.text["decomposed"] != "RS + AG" {
		t.Fatalf("one case: names %+v, want the modes' labels", n)
	}
	many := splitRuns(summaryOf(multiRunStats(), nil))[0]
	if n := lineNames(layoutOf(many), timingValues(many.stats, func(s report.TimingStat) float64 { return s.MedianUS })); n != nil {
		t.Errorf("small multiples of 3 types x 2 reductions: names %+v, want none (the legend says)", n.text)
	}
	// The names fit: the x axis reaches past the largest size by more
	// than the widest label needs.
	f := timeVsSize(one)
	p := f.panels[0]
	if p.X.Max <= lay.xhi*1.5 {
		t.Errorf("x axis ends at %g, no further than without names (%g)", p.X.Max, lay.xhi*1.5)
	}
	svg, err := f.render("svg")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{">direct AllReduce<", ">RS + AG<"} {
		if !bytes.Contains(svg, []byte(want)) {
			t.Errorf("the figure's SVG lacks the line name %s", want)
		}
	}
}

// A sweep is drawn as small multiples: a panel per case but its size and
// mode, so that each line is one mode of one case, named by its panel; a
// row per element type and reduction, a column per placement and method.
func TestLayout(t *testing.T) {
	runs := splitRuns(summaryOf(multiRunStats(), nil))
	if len(runs) != 2 || runs[0].suffix != "_matrix" || runs[1].suffix != "_my_run_2" {
		t.Fatalf("runs %+v", runs)
	}
	lay := layoutOf(runs[0])
	var panels []string
	for _, k := range lay.panels {
		panels = append(panels, lay.label(k))
	}
	if len(panels) != 3*2*2*3 || lay.cols != 3 {
		t.Fatalf("%d panels in %d columns, want 36 (3 types x 2 reductions x 2 placements x 3 methods) in 3", len(panels), lay.cols)
	}
	if got, want := strings.Join(panels[:4], "|"), "int8 sum out-of-place per-op|int8 sum out-of-place batched x20|"+
		"int8 sum out-of-place graph x20|int8 sum in-place per-op"; got != want {
		t.Errorf("panels %q, want %q", got, want)
	}
	if got := strings.Join(lay.dtypes, " "); got != "int8 bfloat16 float32" {
		t.Errorf("dtypes in report order: %q", got)
	}
	if got, want := lay.title("Median time per operation"), "Median time per operation, run matrix, 4 ranks"; got != want {
		t.Errorf("title %q, want %q", got, want)
	}
	one := layoutOf(splitRuns(summaryOf(sweepStats()[:2], nil))[0])
	if got, want := one.title("Median time per operation"), "Median time per operation: float32 sum out-of-place per-op, 4 ranks"; got != want {
		t.Errorf("title %q, want %q", got, want)
	}
	// Each panel holds one line per mode, and only the outer panels label
	// their axes.
	lines := map[panelKey]map[lineKey]bool{}
	for _, v := range timingValues(runs[0].stats, func(s report.TimingStat) float64 { return s.MedianUS }) {
		if lines[v.panel] == nil {
			lines[v.panel] = map[lineKey]bool{}
		}
		lines[v.panel][v.line] = true
	}
	for k, ls := range lines {
		modes := map[string]bool{}
		for l := range ls {
			modes[l.Mode] = true
		}
		if len(modes) != len(ls) {
			t.Errorf("panel %s has lines %v: want one per mode", lay.label(k), ls)
		}
	}
	f := timeVsSize(runs[0])
	for i, p := range f.panels {
		_, inner := p.X.Tick.Marker.(unlabelled)
		if inner != (i+f.cols < len(f.panels)) {
			t.Errorf("panel %d: x labels hidden %v", i, inner)
		}
	}
}

// A time axis is labelled in one unit style, never "100000" beside "1e+06".
func TestTimeTicksInUnits(t *testing.T) {
	if got, want := strings.Join(tickLabels(logTicks{}.Ticks(3, 2e6)), ", "), "10 µs, 100 µs, 1 ms, 10 ms, 100 ms, 1 s"; got != want {
		t.Errorf("ticks %q, want %q", got, want)
	}
}

func TestRunSuffixes(t *testing.T) {
	var stats []report.TimingStat
	for _, run := range []string{"default", "a b", "a/b", "..", "x"} {
		stats = append(stats, report.TimingStat{Case: coll.Case{Run: run}})
	}
	var got []string
	for _, r := range splitRuns(summaryOf(stats, nil)) {
		got = append(got, r.suffix)
	}
	// A "default" among others is named like any run; names that clash
	// after sanitizing are told apart.
	if want := "_default _a_b _a_b-2 _run _x"; strings.Join(got, " ") != want {
		t.Errorf("suffixes %q, want %q", strings.Join(got, " "), want)
	}
	if r := splitRuns(summaryOf(stats[:1], nil)); r[0].suffix != "" {
		t.Errorf("a lone default run: suffix %q, want none", r[0].suffix)
	}
}

func TestWriteAllNothing(t *testing.T) {
	dir := t.TempDir()
	written, err := WriteAll(dir, summaryOf(nil, nil))
	if err != nil || len(written) != 0 {
		t.Errorf("no data: wrote %v, %v", written, err)
	}
	// Only one mode: no ratio figure.
	var direct []report.TimingStat
	for _, s := range sweepStats() {
		if s.Mode == "direct" {
			direct = append(direct, s)
		}
	}
	written, err = WriteAll(dir, summaryOf(direct, nil))
	if err != nil {
		t.Fatal(err)
	}
	checkFiles(t, dir, written, TimeVsSize, BusBWVsSize)
}

func TestWriteAllBadDir(t *testing.T) {
	_, err := WriteAll(filepath.Join(t.TempDir(), "missing"), summaryOf(sweepStats(), nil))
	if err == nil {
		t.Error("a missing directory must fail")
	}
}

func TestSizeTicks(t *testing.T) {
	var labels []string
	for _, tk := range (sizeTicks{}).Ticks(1024/1.5, (256<<20)*1.5) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	want := []string{"1K", "4K", "16K", "64K", "256K", "1M", "4M", "16M", "64M", "256M"}
	if len(labels) != len(want) {
		t.Fatalf("labels %v, want %v", labels, want)
	}
	for i := range want {
		if labels[i] != want[i] {
			t.Errorf("labels %v, want %v", labels, want)
			break
		}
	}
}

func TestSizeTicksInAPanel(t *testing.T) {
	var labels []string
	for _, tk := range (sizeTicks{max: 6}).Ticks(1024/1.5, (256<<20)*1.5) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if got, want := strings.Join(labels, " "), "4K 64K 1M 16M 256M"; got != want {
		t.Errorf("labels %q, want %q", got, want)
	}
}

func TestLinearTicks(t *testing.T) {
	for _, c := range []struct {
		min, max float64
		want     string
	}{
		{0.85, 1.75, "0.9 1.0 1.1 1.2 1.3 1.4 1.5 1.6 1.7"},
		{0, 720, "0 100 200 300 400 500 600 700"},
		{0, 316, "0 50 100 150 200 250 300"},
		{0.2, 0.45, "0.20 0.25 0.30 0.35 0.40 0.45"},
	} {
		var labels []string
		for _, tk := range (linearTicks{}).Ticks(c.min, c.max) {
			if tk.Label != "" {
				labels = append(labels, tk.Label)
			}
		}
		if got := strings.Join(labels, " "); got != c.want {
			t.Errorf("ticks over [%v, %v] = %q, want %q", c.min, c.max, got, c.want)
		}
	}
}

// tickLabels are the labels of the labelled ticks.
func tickLabels(ticks []plot.Tick) []string {
	var labels []string
	for _, tk := range ticks {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	return labels
}

func TestBinaryTicks(t *testing.T) {
	if got, want := strings.Join(tickLabels(binaryTicks{}.Ticks(0, 716.8)), " "), "0 128 256 384 512 640"; got != want {
		t.Errorf("ticks = %q, want %q", got, want)
	}
}

// Names lists, before anything is written, exactly the files WriteAll
// writes: a run's record of its files (run.json) is made from it.
func TestNamesAreWhatWriteAllWrites(t *testing.T) {
	timings, memory := realRows(t)
	var direct []report.TimingStat
	for _, s := range sweepStats() {
		if s.Mode == "direct" {
			direct = append(direct, s)
		}
	}
	for name, s := range map[string]report.Summary{
		"real run":  summaryOf(report.TimingStats(timings, 2, 0), memory),
		"sweep":     summaryOf(sweepStats(), nil),
		"multi-run": summaryOf(multiRunStats(), nil),
		"direct":    summaryOf(direct, nil),
		"nothing":   summaryOf(nil, nil),
	} {
		written, err := WriteAll(t.TempDir(), s)
		if err != nil {
			t.Fatal(err)
		}
		var base []string
		for _, w := range written {
			base = append(base, filepath.Base(w))
		}
		if got := Names(s); !slices.Equal(got, base) {
			t.Errorf("%s: Names = %v, WriteAll wrote %v", name, got, base)
		}
	}
}
