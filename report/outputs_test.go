package report_test

import (
	"slices"
	"strings"
	"testing"

	"rsag/coll"
	"rsag/report"
	_ "rsag/report/plot" // the figures register themselves
)

// Only rsag's own names count as its outputs; a user's look-alikes do not.
func TestOutputNames(t *testing.T) {
	for _, n := range []string{"contracts.csv", "timings.csv", "memory.csv", "numerics.csv", "rank0_contracts.csv",
		"rank12_timings.csv", "rank3_memory.csv", "summary.json", "time_vs_size.png", "memory_by_mode.svg",
		"busbw_vs_size_matrix.png", "ratio_vs_size_nccl-tests.svg", "crossover_vs_size.png"} {
		if !report.IsOutput(n) {
			t.Errorf("%s is rsag's, but IsOutput says not", n)
		}
	}
	for _, n := range []string{"notes.txt", "rank0_contracts.csv.bak", "my_timings.csv", "rankx_memory.csv", "plot.png",
		"time_vs_size.pdf", "time_vs_size_.png", ".rsag.lock", "../summary.json", "sub/summary.json", "run.json"} {
		if report.IsOutput(n) {
			t.Errorf("%s is not one of the outputs, but IsOutput says it is", n)
		}
	}
}

// A run lists every rank's files, then the combined ones, then the final
// ones it can name before it has a summary, for the phases that ran.
func TestPlanned(t *testing.T) {
	got := report.Planned(2, report.Ran(report.Contracts, report.Memory))
	want := []string{"rank0_contracts.csv", "rank0_memory.csv", "rank1_contracts.csv", "rank1_memory.csv",
		"contracts.csv", "memory.csv", "junit.xml", "rsag.prom", "summary.json"}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// Every file any output plans, at every stage, is one IsOutput knows, so
// that -overwrite can tell it for rsag's: a new output whose names its
// patterns miss fails here.
func TestEveryPlannedFileIsAnOutput(t *testing.T) {
	ran := withSweep(report.Ran(report.Contracts, report.Timing, report.Memory, report.Numerics))
	sum := report.NewSummary(report.SummaryInput{World: 2, Rows: sweepRows()})
	for _, stage := range []report.Stage{report.EachRank, report.Combined, report.Final} {
		files, _ := report.Plan(stage, report.Input{Rank: 1, World: 2, Ran: ran, Summary: &sum})
		if len(files) == 0 {
			t.Errorf("stage %d plans no file", stage)
		}
		for _, f := range files {
			if !report.IsOutput(f) {
				t.Errorf("stage %d plans %s, which IsOutput does not know", stage, f)
			}
		}
	}
}

// sweepRows are timing rows of two runs, one of a name that needs
// sanitizing, so that the figures get suffixes.
func sweepRows() report.Rows {
	var rows report.Rows
	for _, run := range []string{"a b/c", "matrix"} {
		for _, size := range []int64{1 << 10, 1 << 16, 1 << 20} {
			for _, mode := range coll.DefaultModes {
				c := coll.Case{Run: run, SizeBytes: size, DType: coll.Float32, Op: coll.Sum, Placement: coll.OutOfPlace,
					Method: coll.PerOp, Batch: 1, Buffers: coll.PlainBuffers, CTAPolicy: coll.DefaultCTAPolicy, Mode: mode}
				rows.Timings = append(rows.Timings, report.TimingRow{Case: c, DurationUS: float64(size) / 1e3, Correct: report.Right})
			}
		}
	}
	rows.Memory = []report.MemoryRow{{Mode: "allreduce-full", PayloadBytes: 1 << 20, Correct: true}}
	return rows
}

// Before a run, every file it may write is known from its runs' names:
// every file a summary of those runs plans is among them, and each is an
// output.
func TestMayWriteHoldsEveryFileARunWrites(t *testing.T) {
	ran := withSweep(report.Ran(report.Contracts, report.Timing, report.Memory))
	may := report.MayWrite(2, ran, []string{"a b/c", "matrix"})
	sum := report.NewSummary(report.SummaryInput{World: 2, Rows: sweepRows()})
	var all []string
	for _, stage := range []report.Stage{report.EachRank, report.Combined, report.Final, report.Last} {
		for r := range 2 {
			files, _ := report.Plan(stage, report.Input{Rank: r, World: 2, Ran: ran, Summary: &sum})
			all = append(all, files...)
		}
	}
	for _, f := range all {
		if !slices.Contains(may, f) {
			t.Errorf("%s is written but not in MayWrite %v", f, may)
		}
	}
	for _, f := range may {
		if !report.IsOutput(f) {
			t.Errorf("MayWrite names %s, which IsOutput does not know", f)
		}
	}
	for _, f := range []string{"time_vs_size_a_b_c.png", "crossover_vs_size_matrix.svg", "memory_by_mode.png", "summary.json"} {
		if !slices.Contains(may, f) {
			t.Errorf("MayWrite lacks %s: %v", f, may)
		}
	}
	if got := report.MayWrite(2, report.Ran(report.Contracts), []string{"default"}); slices.ContainsFunc(got, func(f string) bool { return strings.HasSuffix(f, ".png") }) {
		t.Errorf("figures for phases that did not run: %v", got)
	}
}

func withSweep(p report.Phases) report.Phases {
	p.Sweep = true
	return p
}
