package model

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"rsag/coll"

	"gonum.org/v1/gonum/stat"
)

var testCase = coll.Case{Run: "sweep", DType: coll.Float32, Op: coll.Sum, Placement: coll.OutOfPlace, Method: coll.Batched}

// withMode is c timed in mode.
func withMode(c coll.Case, mode string) coll.Case {
	c.Mode = coll.Mode(mode)
	return c
}

// sweepSizes is 1 KiB to 4 MiB, doubling: the sweep the issue names.
func sweepSizes() []int64 {
	var s []int64
	for n := int64(1 << 10); n <= 4<<20; n *= 2 {
		s = append(s, n)
	}
	return s
}

// hockney is the series of t(n) = alpha + n/B, B in GB/s, each time scaled
// by 1 + noise(i).
func hockney(mode string, sizes []int64, alphaUS, gbps float64, noise func(int) float64) Series {
	s := Series{Case: withMode(testCase, mode), Sizes: sizes}
	for i, n := range sizes {
		t := alphaUS + float64(n)/(gbps*1e3)
		if noise != nil {
			t *= 1 + noise(i)
		}
		s.Medians = append(s.Medians, t)
	}
	return s
}

func relErr(got, want float64) float64 { return math.Abs(got-want) / math.Abs(want) }

func TestFitRecoversKnownModel(t *testing.T) {
	// Mild noise: each median off by up to 0.5%, from a fixed seed.
	rng := rand.New(rand.NewPCG(1, 2))
	mild := func(int) float64 { return (rng.Float64()*2 - 1) * 0.005 }
	for _, tc := range []struct {
		name        string
		alpha, gbps float64
		noise       func(int) float64
		within      float64
	}{
		{"latency-bound MPI-like", 5, 10, nil, 1e-9},
		{"fast network", 1.5, 300, nil, 1e-9},
		{"large latency", 40, 2, nil, 1e-9},
		{"latency-bound MPI-like, noisy", 5, 10, mild, 0.01},
		{"fast network, noisy", 1.5, 300, mild, 0.01},
		{"large latency, noisy", 40, 2, mild, 0.01},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := hockney("direct", sweepSizes(), tc.alpha, tc.gbps, tc.noise)
			f := FitSeries(s)
			if !f.OK() {
				t.Fatalf("no fit: %s", f.Reason)
			}
			if e := relErr(f.AlphaUS, tc.alpha); e > tc.within {
				t.Errorf("alpha %.6g us, want %.6g within %.2g (off by %.3g)", f.AlphaUS, tc.alpha, tc.within, e)
			}
			if e := relErr(f.BandwidthGBps, tc.gbps); e > tc.within {
				t.Errorf("B %.6g GB/s, want %.6g within %.2g (off by %.3g)", f.BandwidthGBps, tc.gbps, tc.within, e)
			}
			if tc.noise == nil && (f.R2 < 1-1e-12 || f.MaxRelResidual > 1e-9) {
				t.Errorf("exact data: R2 %v, max residual %v; want 1 and 0", f.R2, f.MaxRelResidual)
			}
			if tc.noise != nil && (f.R2 < 0.99 || f.MaxRelResidual > 0.011 || f.MaxRelResidual < 1e-4) {
				t.Errorf("noisy data: R2 %v, max residual %v; want R2 near 1 and a residual near the 0.5%% noise", f.R2, f.MaxRelResidual)
			}
			if !slices.Equal(f.SizesBytes, s.Sizes) || f.Mode != "direct" || f.Pair() != testCase {
				t.Errorf("fit names %v %q sizes %v; want the series'", f.Case, f.Mode, f.SizesBytes)
			}
		})
	}
}

func TestFitWeightsRelativeError(t *testing.T) {
	// One median 3% off, at the largest size: weighted by 1/t^2 it counts as
	// much as a 3% error anywhere, and the latency stays; unweighted, its
	// 13 us would move the latency by more than 5%.
	s := hockney("direct", sweepSizes(), 5, 10, nil)
	s.Medians[len(s.Medians)-1] *= 1.03
	f := FitSeries(s)
	if e := relErr(f.AlphaUS, 5); e > 0.01 {
		t.Errorf("weighted alpha %.4g us; want 5 within 1%% (off by %.3g)", f.AlphaUS, e)
	}
	x := make([]float64, len(s.Sizes))
	for i, n := range s.Sizes {
		x[i] = float64(n)
	}
	if a, _ := stat.LinearRegression(x, s.Medians, nil, false); relErr(a, 5) < 0.05 {
		t.Errorf("unweighted alpha %.4g is within 5%% of 5: the outlier is too mild to test the weights", a)
	}
}

func TestFitPredictsLargestSize(t *testing.T) {
	// The acceptance: the direct fit predicts the 4 MiB median
	// within 30%. Here the data are a model, so within 1%.
	s := hockney("direct", sweepSizes(), 3, 7, nil)
	f := FitSeries(s)
	n := s.Sizes[len(s.Sizes)-1]
	if e := relErr(f.At(float64(n)), s.Medians[len(s.Medians)-1]); e > 0.01 {
		t.Errorf("fit at %d bytes is off by %.3g", n, e)
	}
}

func TestNoFit(t *testing.T) {
	for _, tc := range []struct {
		name    string
		s       Series
		because string
	}{
		{"two sizes", hockney("direct", []int64{1 << 10, 1 << 20}, 5, 10, nil),
			"2 sizes; a fit needs at least 3 spanning 16x"},
		{"one size", hockney("direct", []int64{1 << 10}, 5, 10, nil),
			"1 sizes; a fit needs at least 3 spanning 16x"},
		{"three sizes spanning 8x", hockney("direct", []int64{1 << 10, 4 << 10, 8 << 10}, 5, 10, nil),
			"sizes 1K to 8K span 8x; a fit needs at least 3 spanning 16x"},
		{"a size twice is one size", hockney("direct", []int64{1 << 10, 1 << 10, 1 << 20}, 5, 10, nil),
			"2 sizes; a fit needs at least 3 spanning 16x"},
		{"a zero median", Series{Case: coll.Case{Mode: "direct"}, Sizes: []int64{1 << 10, 1 << 14, 1 << 18}, Medians: []float64{1, 0, 3}},
			"the median at 16K is 0; a fit needs positive times"},
		{"a NaN median", Series{Case: coll.Case{Mode: "direct"}, Sizes: []int64{1 << 10, 1 << 14, 1 << 18}, Medians: []float64{1, 2, math.NaN()}},
			"the median at 256K is NaN"},
		{"lengths differ", Series{Case: coll.Case{Mode: "direct"}, Sizes: []int64{1 << 10, 1 << 14, 1 << 18}, Medians: []float64{1, 2}},
			"3 sizes but 2 medians"},
		{"time falls with size", Series{Case: coll.Case{Mode: "direct"}, Sizes: []int64{1 << 10, 1 << 14, 1 << 18}, Medians: []float64{3, 2.9, 2.8}},
			"time does not grow with size from 1K to 256K"},
		{"time flat", Series{Case: coll.Case{Mode: "direct"}, Sizes: []int64{1 << 10, 1 << 14, 1 << 18}, Medians: []float64{2, 2, 2}},
			"no bandwidth to fit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := FitSeries(tc.s)
			if f.OK() || !strings.Contains(f.Reason, tc.because) {
				t.Fatalf("reason %q; want one containing %q", f.Reason, tc.because)
			}
			if f.AlphaUS != 0 || f.BandwidthGBps != 0 || f.R2 != 0 || f.MaxRelResidual != 0 {
				t.Errorf("no fit, yet numbers %+v", f)
			}
			if !slices.Equal(f.SizesBytes, tc.s.Sizes) {
				t.Errorf("sizes %v; want the series' %v", f.SizesBytes, tc.s.Sizes)
			}
			if _, err := json.Marshal(f); err != nil {
				t.Errorf("a fit that failed does not encode: %v", err)
			}
		})
	}
}

func TestFitKeepsNegativeLatency(t *testing.T) {
	// Times that a line meets below zero at n = 0 (all positive over the
	// sizes): the latency is reported as fitted, not clamped.
	s := hockney("direct", []int64{64 << 10, 256 << 10, 1 << 20, 4 << 20}, -2, 10, nil)
	f := FitSeries(s)
	if !f.OK() || relErr(f.AlphaUS, -2) > 1e-9 || relErr(f.BandwidthGBps, 10) > 1e-9 {
		t.Errorf("fit %+v; want alpha -2 us and 10 GB/s", f)
	}
}

// series builds a series of the test case from sizes and medians.
func series(mode string, sizes []int64, medians ...float64) Series {
	return Series{Case: withMode(testCase, mode), Sizes: sizes, Medians: medians}
}

func TestMeasuredCrossover(t *testing.T) {
	sizes := []int64{1 << 10, 4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20}
	direct := series("direct", sizes, 10, 10, 10, 10, 10, 10)
	for _, tc := range []struct {
		name   string
		ratios []float64
		found  bool
		from   int64
		why    string
	}{
		{"crosses", []float64{2, 1.5, 1.1, 1.04, 1.03, 1.01}, true, 64 << 10, ""},
		{"dips in, out, then in for good", []float64{1.01, 1.2, 1.5, 1.03, 1.2, 1.02}, true, 1 << 20, ""},
		{"exactly 5% counts as within", []float64{2, 1.5, 1.05, 1.05, 1.05, 1.05}, true, 16 << 10, ""},
		{"a faster decomposition counts as within", []float64{2, 0.9, 0.8, 1.0, 1.04, 0.99}, true, 4 << 10, ""},
		{"within from the first size", []float64{1.04, 1.0, 1.02, 1.01, 1.03, 1.0}, true, 1 << 10, ""},
		{"never", []float64{5, 4, 3, 2, 1.3, 1.23}, false, 0,
			"not within the measured range: decomposed/direct is above 1.05 at the largest size, 1M"},
		{"only below the largest size", []float64{1, 1, 1, 1, 1, 1.06}, false, 0, "not within the measured range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var med []float64
			for _, r := range tc.ratios {
				med = append(med, 10*r)
			}
			got := MeasuredCrossover(direct, series("decomposed", sizes, med...))
			if got.Found != tc.found || got.Bytes != tc.from || !strings.Contains(got.Why, tc.why) {
				t.Errorf("crossing %+v; want found %v from %d, why containing %q", got, tc.found, tc.from, tc.why)
			}
		})
	}
}

func TestMeasuredCrossoverPairsSizes(t *testing.T) {
	// Unsorted, and the decomposition lacks one size: ratios are taken at
	// the sizes both have, in size order.
	direct := series("direct", []int64{1 << 20, 1 << 10, 1 << 15}, 10, 10, 10)
	decomp := series("decomposed", []int64{1 << 10, 1 << 20}, 20, 10.2)
	if got := MeasuredCrossover(direct, decomp); !got.Found || got.Bytes != 1<<20 {
		t.Errorf("crossing %+v; want from 1M", got)
	}
	if got := MeasuredCrossover(direct, series("decomposed", []int64{7}, 1)); got.Found || got.Why != "no size has both modes" {
		t.Errorf("crossing %+v; want none, no size has both modes", got)
	}
}

// model is a usable fit with the given latency and bandwidth.
func model(mode string, alphaUS, gbps float64) Fit {
	return Fit{Case: withMode(testCase, mode), AlphaUS: alphaUS, BandwidthGBps: gbps}
}

func TestFittedCrossover(t *testing.T) {
	r := 1 + Tolerance
	for _, tc := range []struct {
		name  string
		d, c  Fit
		found bool
		from  int64
		why   string
	}{
		// gap = 6 - 1.05 x 2 = 3.9 us; gain = 0.05 x 1e-4 us/byte: 780000 bytes.
		{"same bandwidth, higher latency", model("direct", 2, 10), model("decomposed", 6, 10), true, 780000, ""},
		{"slower bandwidth but within 5%", model("direct", 2, 10), model("decomposed", 10, 9.8), true, 0, ""},
		{"within at every size", model("direct", 2, 10), model("decomposed", 2.05, 10.2), true, 0, ""},
		{"lower latency, slower bandwidth", model("direct", 2, 10), model("decomposed", 1, 9.7), true, 0, ""},
		{"never: bandwidth 25% lower", model("direct", 2, 10), model("decomposed", 2, 8), false, 0,
			"asymptotic ratio B_direct/B_decomposed = 1.25 exceeds 1.05"},
		{"never: 1.23x at large sizes, as on 2 H200s", model("direct", 20, 298), model("decomposed", 30, 298/1.23), false, 0,
			"= 1.23 exceeds"},
		{"no direct fit", Fit{Case: coll.Case{Mode: "direct"}, Reason: "2 sizes; a fit needs at least 3 spanning 16x"}, model("decomposed", 2, 8), false, 0,
			"no fit of direct: 2 sizes"},
		{"no decomposed fit", model("direct", 2, 10), Fit{Case: coll.Case{Mode: "decomposed"}, Reason: "why"}, false, 0, "no fit of decomposed: why"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := FittedCrossover(tc.d, tc.c)
			if got.Found != tc.found || !strings.Contains(got.Why, tc.why) {
				t.Fatalf("crossing %+v; want found %v, why containing %q", got, tc.found, tc.why)
			}
			if !got.Found {
				return
			}
			// The minimal n: within at n and at 1000x n, and, unless n is 0,
			// not within one byte earlier (the bound is rounded up to a byte,
			// so allow that rounding).
			n := float64(got.Bytes)
			if tc.from > 0 && math.Abs(n-float64(tc.from)) > 1 {
				t.Errorf("crossover at %v bytes; want %d", n, tc.from)
			}
			for _, at := range []float64{n, 1000*n + 1} {
				if tc.c.At(at) > r*tc.d.At(at)*(1+1e-12) {
					t.Errorf("at %v bytes the fits are %v and %v: not within 5%%", at, tc.c.At(at), tc.d.At(at))
				}
			}
			if n >= 2 && tc.c.At(n-2) <= r*tc.d.At(n-2) {
				t.Errorf("the fits are within 5%% already at %v bytes, before the crossover %v", n-2, n)
			}
		})
	}
}

func TestFittedCrossoverFromFittedSeries(t *testing.T) {
	// Fit two synthetic modes and check the crossover against the one their
	// exact models give: 2 + n/10 GB/s against 12 + n/10.2 GB/s.
	sizes := sweepSizes()
	d, c := FitSeries(hockney("direct", sizes, 2, 10, nil)), FitSeries(hockney("decomposed", sizes, 12, 10.2, nil))
	want := FittedCrossover(model("direct", 2, 10), model("decomposed", 12, 10.2))
	got := FittedCrossover(d, c)
	if !got.Found || !want.Found || math.Abs(float64(got.Bytes-want.Bytes)) > 1e-6*float64(want.Bytes) {
		t.Errorf("crossing from fits %+v; from the exact models %+v", got, want)
	}
	cmp := Compare(hockney("direct", sizes, 2, 10, nil), hockney("decomposed", sizes, 12, 10.2, nil), d, c)
	if !cmp.FromFits || relErr(cmp.ExtraLatencyUS, 10) > 1e-6 || relErr(cmp.BandwidthRatio, 10/10.2) > 1e-6 {
		t.Errorf("comparison %+v; want 10 us extra latency and a bandwidth ratio of %.4g", cmp, 10/10.2)
	}
	// With these sizes the measured crossover is the first measured size at
	// or above the fitted one.
	if cmp.Measured.Bytes < cmp.Fitted.Bytes || cmp.Measured.Bytes/2 >= cmp.Fitted.Bytes {
		t.Errorf("measured crossover %d, fitted %d: want the next doubling at or above the fitted", cmp.Measured.Bytes, cmp.Fitted.Bytes)
	}
}

func TestBreakdown(t *testing.T) {
	sizes := []int64{1 << 10, 1 << 20, 4 << 20}
	whole := series("decomposed", sizes, 10, 500, 2000)
	rs := series("reduce-scatter", sizes, 6, 272, 1000)
	ag := series("all-gather", []int64{1 << 10, 1 << 20}, 3, 49)
	got := Breakdown(whole, rs, ag)
	if len(got) != 2 {
		t.Fatalf("%d sizes broken down; want 2 (4M has no all-gather median): %+v", len(got), got)
	}
	f := func(v float64) *float64 { return &v }
	want := []Share{
		{SizeBytes: 1 << 10, WholeUS: 10, Parts: []Part{{"reduce-scatter", 6, f(0.6)}, {"all-gather", 3, f(0.3)}}, UnexplainedUS: 1, UnexplainedShare: f(0.1), Split: Split},
		{SizeBytes: 1 << 20, WholeUS: 500, Parts: []Part{{"reduce-scatter", 272, f(0.544)}, {"all-gather", 49, f(0.098)}}, UnexplainedUS: 179, UnexplainedShare: f(0.358), Split: Split},
	}
	for i := range want {
		checkShare(t, got[i], want[i])
	}
	// Parts that take longer alone than the whole, with no spread known:
	// beyond any noise, so no share.
	got = Breakdown(series("decomposed", sizes[:1], 8), series("reduce-scatter", sizes[:1], 6), series("all-gather", sizes[:1], 3))
	if got[0].UnexplainedUS != -1 || got[0].Split != NotSplit || got[0].UnexplainedShare != nil || got[0].Parts[0].Share != nil {
		t.Errorf("share %+v; want a rest of -1 us, not split, no shares", got[0])
	}
	if got := Breakdown(whole); got != nil {
		t.Errorf("no parts, yet %+v", got)
	}
}

func checkShare(t *testing.T, g, w Share) {
	t.Helper()
	near := func(a, b *float64) bool { return (a == nil) == (b == nil) && (a == nil || math.Abs(*a-*b) < 1e-9) }
	if g.SizeBytes != w.SizeBytes || g.WholeUS != w.WholeUS || len(g.Parts) != len(w.Parts) || g.Split != w.Split ||
		math.Abs(g.UnexplainedUS-w.UnexplainedUS) > 1e-9 || !near(g.UnexplainedShare, w.UnexplainedShare) {
		t.Fatalf("share %+v; want %+v", g, w)
	}
	for j := range w.Parts {
		if g.Parts[j].Mode != w.Parts[j].Mode || g.Parts[j].US != w.Parts[j].US || !near(g.Parts[j].Share, w.Parts[j].Share) {
			t.Errorf("part %+v; want %+v", g.Parts[j], w.Parts[j])
		}
	}
}

// The case: at 1M on a noisy machine the parts timed alone took
// 190% and 16% of the whole; printed as shares that read as a -106% rest,
// "they overlap". A sum above the whole beyond the noise is not split; one
// within the noise is split between the parts, the rest zero.
func TestSplitOfRefusesImpossibleShares(t *testing.T) {
	whole := PartTime{Mode: "decomposed", MedianUS: 1000, P10US: 900, P90US: 1200}
	f := func(v float64) *float64 { return &v }
	for _, c := range []struct {
		name  string
		parts []PartTime
		want  Share
		why   string
	}{
		{"possible", []PartTime{{"reduce-scatter", 600, 550, 700}, {"all-gather", 300, 250, 350}},
			Share{WholeUS: 1000, UnexplainedUS: 100, UnexplainedShare: f(0.1), Split: Split,
				Parts: []Part{{"reduce-scatter", 600, f(0.6)}, {"all-gather", 300, f(0.3)}}}, ""},
		{"the sum exactly the whole", []PartTime{{"reduce-scatter", 700, 700, 700}, {"all-gather", 300, 300, 300}},
			Share{WholeUS: 1000, UnexplainedUS: 0, UnexplainedShare: f(0), Split: Split,
				Parts: []Part{{"reduce-scatter", 700, f(0.7)}, {"all-gather", 300, f(0.3)}}}, ""},
		{"above the whole within noise", []PartTime{{"reduce-scatter", 700, 600, 800}, {"all-gather", 400, 300, 500}},
			Share{WholeUS: 1000, UnexplainedUS: -100, UnexplainedShare: f(0), Split: SplitWithinNoise,
				Parts: []Part{{"reduce-scatter", 700, f(700.0 / 1100)}, {"all-gather", 400, f(400.0 / 1100)}}}, "within the noise"},
		{"190% and -106%", []PartTime{{"reduce-scatter", 1900, 1700, 2100}, {"all-gather", 160, 150, 170}},
			Share{WholeUS: 1000, UnexplainedUS: -1060, Split: NotSplit,
				Parts: []Part{{"reduce-scatter", 1900, nil}, {"all-gather", 160, nil}}}, "beyond the noise"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := SplitOf(whole, c.parts)
			checkShare(t, got, c.want)
			if !strings.Contains(got.Why, c.why) || (c.why == "") != (got.Why == "") {
				t.Errorf("why %q; want one that says %q", got.Why, c.why)
			}
		})
	}
	// The JSON says null, not 0, where there is no share.
	b, err := json.Marshal(SplitOf(whole, []PartTime{{"reduce-scatter", 1900, 1700, 2100}}))
	if err != nil || !strings.Contains(string(b), `"share":null`) || !strings.Contains(string(b), `"unexplained_share":null`) ||
		!strings.Contains(string(b), `"split":"not-split"`) {
		t.Errorf("JSON %s (%v); want null shares and split not-split", b, err)
	}
}

func TestAnalyze(t *testing.T) {
	other := testCase
	other.Placement = "in-place"
	sizes := sweepSizes()
	var points []Point
	add := func(c coll.Case, s Series) {
		for i, n := range s.Sizes {
			at := withMode(c, string(s.Mode))
			at.SizeBytes = n
			points = append(points, Point{Case: at, MedianUS: s.Medians[i]})
		}
	}
	// The report hands its statistics in size-major order, cases and
	// modes interleaved; the largest size first to check the sort.
	rev := slices.Clone(sizes)
	slices.Reverse(rev)
	add(testCase, hockney("direct", rev, 2, 10, nil))
	add(testCase, hockney("decomposed", rev, 6, 10, nil))
	add(other, hockney("decomposed", rev, 6, 9, nil))
	add(other, hockney("direct", rev, 2, 10, nil))
	add(testCase, hockney("reduce-scatter", rev, 3, 20, nil))
	add(testCase, hockney("all-gather", rev, 2, 20, nil))
	res := Analyze(Group(points), Modes{Direct: "direct", Decomposed: "decomposed", Parts: []coll.Mode{"reduce-scatter", "all-gather"}})

	var names []string
	for _, f := range res.Fits {
		names = append(names, string(f.Placement)+" "+string(f.Mode))
		if !f.OK() || !slices.Equal(f.SizesBytes, sizes) {
			t.Errorf("fit %+v; want a fit over the sorted sizes", f)
		}
	}
	wantNames := []string{"out-of-place direct", "out-of-place decomposed", "in-place decomposed", "in-place direct",
		"out-of-place reduce-scatter", "out-of-place all-gather"}
	if !slices.Equal(names, wantNames) {
		t.Errorf("fits %v; want %v", names, wantNames)
	}
	if len(res.Crossovers) != 2 || res.Crossovers[0].Case != testCase || res.Crossovers[1].Case != other {
		t.Fatalf("crossovers %+v; want one per case in order", res.Crossovers)
	}
	if c := res.Crossovers[0]; !c.Fitted.Found || c.Fitted.Bytes < 779999 || c.Fitted.Bytes > 780001 {
		t.Errorf("out-of-place crossover %+v; want 780000 bytes from the fits", c)
	}
	if c := res.Crossovers[1]; c.Fitted.Found || c.Measured.Found || relErr(c.BandwidthRatio, 10.0/9) > 1e-6 {
		t.Errorf("in-place crossover %+v; want none, the decomposition's bandwidth being 10/9 lower", c)
	}
	if len(res.Breakdowns) != 1 || res.Breakdowns[0].Case != testCase || len(res.Breakdowns[0].Shares) != len(sizes) {
		t.Fatalf("breakdowns %+v; want the out-of-place case's only, at every size", res.Breakdowns)
	}
	// 6 + n/10 against (3 + n/20) + (2 + n/20): 1 us unexplained everywhere.
	for _, s := range res.Breakdowns[0].Shares {
		if math.Abs(s.UnexplainedUS-1) > 1e-9 {
			t.Errorf("at %d bytes unexplained %v us; want 1", s.SizeBytes, s.UnexplainedUS)
		}
	}
}

func TestJSONNames(t *testing.T) {
	b, err := json.Marshal(FitSeries(hockney("direct", sweepSizes(), 2, 10, nil)))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	// The names, and the case's (coll.Case's json names), but its
	// size: a fit is over the sizes.
	want := []string{"alpha_us", "bandwidth_gbps", "r2", "max_rel_residual", "sizes_bytes"}
	for f := range reflect.TypeFor[coll.Case]().Fields() {
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "size_bytes" {
			want = append(want, name)
		}
	}
	var got []string
	for k := range m {
		got = append(got, k)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("a fit's JSON names %v; want %v (reason only when there is no fit)", got, want)
	}
}
