package e2e

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"rsag/report"
)

// The model on 2 MPI ranks over 1 KiB to 4 MiB with the four flat modes:
// every mode gets a fit over its 7 sizes, the direct fit predicts the
// 4 MiB median within 30%, the decomposition gets a crossover (or says
// why there is none) and a breakdown into its two parts, the numerics
// report both float types at three sizes, and the tables and the
// crossover figure are there.
func TestModelOnTwoRanks(t *testing.T) {
	dir := t.TempDir()
	r := mpirun(t, 2, 3*time.Minute, "-config", "../configs/model-mpi.toml", "-output-dir", dir)
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	s := checkSummary(t, filepath.Join(dir, report.SummaryFile))
	medianAt := map[string]float64{}
	for _, st := range s.Timing {
		if st.SizeBytes == 4<<20 {
			medianAt[st.Mode] = st.MedianUS
		}
	}
	modes := map[string]bool{}
	for _, f := range s.Fits {
		modes[f.Mode] = true
		if !f.OK() || len(f.SizesBytes) != 7 || !(f.BandwidthGBps > 0) {
			t.Errorf("%s: %+v, want a fit over 7 sizes", f.Mode, f)
			continue
		}
		if f.Mode == "direct" {
			pred, got := f.At(4<<20), medianAt["direct"]
			if math.Abs(pred-got)/got > 0.3 {
				t.Errorf("the direct fit predicts %.1f us at 4 MiB, measured %.1f us: more than 30%% off (%+v)", pred, got, f)
			}
		}
	}
	for _, m := range []string{"direct", "decomposed", "reduce-scatter", "all-gather"} {
		if !modes[m] {
			t.Errorf("no fit of %s", m)
		}
	}
	if len(s.Crossover) != 1 || s.Crossover[0].Mode != "decomposed" || !s.Crossover[0].FromFits ||
		(!s.Crossover[0].Measured.Found && s.Crossover[0].Measured.Why == "") {
		t.Errorf("crossover %+v", s.Crossover)
	}
	if len(s.Breakdown) != 1 || len(s.Breakdown[0].Shares) != 7 || len(s.Breakdown[0].Shares[0].Parts) != 2 {
		t.Errorf("breakdown %+v", s.Breakdown)
	}
	if len(s.Numerics) != 6 {
		t.Errorf("numerics %+v, want float32 and float64 at 3 sizes", s.Numerics)
	}
	for _, want := range []string{"Model (t(n) = alpha + n/B", "Crossover (", "Where the decomposition's time goes", "Numerics ("} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q", want)
		}
	}
	for _, f := range []string{"crossover_vs_size.png", "crossover_vs_size.svg", "numerics.csv"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
}
