package plot

import (
	"bytes"
	"encoding/csv"
	"encoding/xml"
	"errors"
	"flag"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

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
		timings = append(timings, report.TimingRow{Rank: num[int](t, m["rank"]), SizeBytes: num[int64](t, m["size_bytes"]),
			Mode: m["mode"], Cycle: num[int](t, m["cycle"]), DurationUS: num[float64](t, m["duration_us"]),
			Correct: m["correct"] == "True", Run: or(m["run"], "default"), DType: or(m["dtype"], "float32"),
			Op: or(m["op"], "sum"), Placement: or(m["placement"], "out-of-place"), Method: or(m["method"], "per-op"),
			Batch: batch, Host: m["host"]})
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
		if len(data) <= 10<<10 || img.Bounds().Dx() < 600 {
			t.Errorf("%s: %d bytes, %d px wide: want > 10 KB and >= 600 px", pngPath, len(data), img.Bounds().Dx())
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

var allFigures = []string{TimeVsSize, BusBWVsSize, RatioVsSize, MemoryByMode}

func TestWriteAllRealRun(t *testing.T) {
	timings, memory := realRows(t)
	stats := report.TimingStats(timings, 2, 0)
	dir := t.TempDir()
	written, err := WriteAll(dir, stats, memory)
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

// sweepStats is a synthetic sweep: two element types by two methods, so
// that the legend has a colour per case and a line style per mode.
func sweepStats() []report.TimingStat {
	var stats []report.TimingStat
	for _, dtype := range []string{"float32", "bfloat16"} {
		for _, method := range []string{"per-op", "graph"} {
			for e := 10; e <= 28; e += 2 {
				size := int64(1) << e
				base := 12 + float64(size)/350e3
				if method == "graph" {
					base -= 6
				}
				if dtype == "bfloat16" {
					base *= 0.8
				}
				for _, mode := range []string{"direct", "decomposed"} {
					us := base
					if mode == "decomposed" {
						us = base*1.1 + 8*math.Exp(-float64(e-10)/4)
					}
					bw := float64(size) / us / 1e3
					stats = append(stats, report.TimingStat{Run: "default", SizeBytes: size, DType: dtype, Op: "sum",
						Placement: "out-of-place", Method: method, Batch: map[string]int{"per-op": 1, "graph": 20}[method],
						Mode: mode, MedianUS: us, AlgBWGBps: bw, BusBWGBps: bw * 1.5, Ranks: 4, Samples: 10})
				}
			}
		}
	}
	return stats
}

func TestWriteAllSweep(t *testing.T) {
	dir := t.TempDir()
	written, err := WriteAll(dir, sweepStats(), nil)
	if err != nil {
		t.Fatal(err)
	}
	checkFiles(t, dir, written, TimeVsSize, BusBWVsSize, RatioVsSize)
	if out := os.Getenv("RSAG_PLOT_DIR"); out != "" {
		// To look at them: RSAG_PLOT_DIR=/tmp/p go test ./report/plot -run Sweep
		for _, p := range written {
			data, _ := os.ReadFile(p)
			os.WriteFile(filepath.Join(out, "sweep_"+filepath.Base(p)), data, 0o644)
		}
	}
}

func TestWriteAllNothing(t *testing.T) {
	dir := t.TempDir()
	written, err := WriteAll(dir, nil, nil)
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
	written, err = WriteAll(dir, direct, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkFiles(t, dir, written, TimeVsSize, BusBWVsSize)
}

func TestWriteAllBadDir(t *testing.T) {
	_, err := WriteAll(filepath.Join(t.TempDir(), "missing"), sweepStats(), nil)
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

func TestBinaryTicks(t *testing.T) {
	var labels []string
	for _, tk := range (binaryTicks{}).Ticks(0, 716.8) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if got, want := strings.Join(labels, " "), "0 128 256 384 512 640"; got != want {
		t.Errorf("ticks = %q, want %q", got, want)
	}
}
