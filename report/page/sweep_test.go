package page

import (
	"bytes"
	"math"
	"os"
	"testing"

	"rsag/coll"
	"rsag/config"
	"rsag/outdir"
	"rsag/phase"
	"rsag/phases"
	"rsag/report"
)

// MaxSweepPageBytes is how large the page of configs/sweep.toml may be:
// small enough to mail.
const MaxSweepPageBytes = 4 << 20

// The page of configs/sweep.toml (three runs, 813 timing cases of two
// modes, the numerics of four float types) stays small enough to mail.
// The sweep needs NCCL on 2 to 8 GPUs, so its cases come from the config
// itself and their times from the Hockney model with made-up constants:
// the page's size depends on the cases, the figures' lines and the tables'
// rows, not on the times.
func TestSweepPageIsSmallEnoughToMail(t *testing.T) {
	data, err := os.ReadFile("../../configs/sweep.toml")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse("configs/sweep.toml", data, nil)
	if err != nil {
		t.Fatal(err)
	}
	const world = 2
	var timings []phases.TimingSample
	cases := 0
	for _, sw := range cfg.Sweeps {
		modes, err := sw.TimedModes()
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range sw.Cases() {
			cases++
			for i, mode := range modes {
				for cycle := range sw.Cycles {
					us := (5 + float64(c.SizeBytes)/300e3) * (1 + 0.2*float64(i)) * (1 + 0.01*math.Sin(float64(cycle)))
					sc := c
					sc.Mode = mode.Name
					timings = append(timings, phases.TimingSample{Case: sc, Cycle: cycle, DurationUS: us, Correct: true})
				}
			}
		}
	}
	var numerics []phases.NumericsResult
	for _, d := range cfg.Numerics.DTypes {
		for _, size := range cfg.Numerics.Spec().SizesBytes {
			numerics = append(numerics, phases.NumericsResult{DType: d, SizeBytes: size, Elements: int(size) / 4,
				BitwiseEqual: true, UnitRoundoff: 1e-7, Bound: 1e-6, MaxBoundRatio: 0.5, WithinBound: true})
		}
	}
	var rows report.Rows
	for rank := range world {
		r := report.Rows{Timings: phase.TimingRows(rank, "node1", timings), Numerics: phase.NumericsRows(rank, "node1", numerics)}
		rows = report.Merge([]report.Rows{rows, r})
	}
	obj, err := report.ConfigObject(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := report.NewSummary(report.SummaryInput{Version: "test", Commit: "test", Status: outdir.StatusComplete, Config: obj,
		Infos: []coll.Info{{Backend: "nccl", Host: "node1", Device: "NVIDIA H200"}, {Backend: "nccl", Host: "node1", LocalRank: 1, Device: "NVIDIA H200"}},
		Rows:  rows, World: world})
	var b bytes.Buffer
	if err := Write(&b, s); err != nil {
		t.Fatal(err)
	}
	t.Logf("configs/sweep.toml: %d cases x 2 modes, %d figures: report.html is %d bytes (%.2f MiB)",
		cases, len(figureNames(s)), b.Len(), float64(b.Len())/(1<<20))
	if cases != 813 {
		t.Errorf("%d cases; configs/sweep.toml has changed: update this test's comment", cases)
	}
	if out := os.Getenv("RSAG_SWEEP_PAGE"); out != "" {
		os.WriteFile(out, b.Bytes(), 0o644)
	}
	if b.Len() > MaxSweepPageBytes {
		t.Errorf("the sweep's page is %d bytes, more than %d: too large to mail", b.Len(), MaxSweepPageBytes)
	}
}
