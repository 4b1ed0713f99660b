package report_test

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"rsag/coll"
	"rsag/internal/testkit/inmem"
	"rsag/phase"
	"rsag/phases"
	"rsag/report"
)

// soakResult is a real soak on 2 in-memory ranks, 6 iterations to the
// end, rank 1's AllReduce output wrong at its 2nd and 5th calls.
func soakResult(t *testing.T) phases.SoakResult {
	t.Helper()
	spec := phases.SoakSpec{Iterations: 6, MinBytes: 64, MaxBytes: 4096, Seed: 3, DTypes: []coll.DType{coll.Int32, coll.Float64},
		Ops: []coll.Op{coll.Sum, coll.Max}, Placements: coll.Placements, Offsets: []int64{0, 8}}
	flip := inmem.Flip{Collective: coll.AllReduce.Name, Rank: 1, Calls: func(n int) bool { return n == 2 || n == 5 }}
	var res phases.SoakResult
	errs := inmem.Launch(2, inmem.Faults{Flip: &flip}, func(be coll.Backend, comm coll.Comm) error {
		r, err := phases.RunSoak(be, comm, spec, nil, nil, nil)
		if be.Rank() == 0 {
			res = r
		}
		return err
	})
	if errs[0] == nil || !strings.Contains(errs[0].Error(), "(2 of 6 iterations found a wrong element)") {
		t.Fatalf("the soak: %v", errs[0])
	}
	return res
}

func soakSummary(t *testing.T) report.Summary {
	rows, sum := phase.SoakRows(soakResult(t))
	return report.NewSummary(report.SummaryInput{Status: "failed", Reason: sum.Verdict, World: 2, Rows: report.Rows{Soak: rows, SoakSummary: sum}})
}

// soak.csv has a row per iteration; the failed ones name the first wrong
// element, its values and bits, and the verdict; summary.json's section
// counts the rate and keeps every fault.
func TestSoakRows(t *testing.T) {
	rows, sum := phase.SoakRows(soakResult(t))
	if len(rows) != 6 || sum.Iterations != 6 || sum.FailedIterations != 2 || sum.FailureRate != 2.0/6 ||
		len(sum.Faults) != 2 || len(sum.Failures) != 2 || sum.Failures[0].Iteration != 1 || sum.Failures[1].Iteration != 4 {
		t.Fatalf("rows %d, summary %+v", len(rows), sum)
	}
	var b bytes.Buffer
	if err := report.WriteCSV(&b, rows, report.AllColumns, true); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\r\n")
	if !strings.HasPrefix(lines[0], "iteration,size_bytes,mode,bytes_moved,elapsed_s,wrong_elements,first_rank,first_host,first_step,first_element,") ||
		!strings.HasSuffix(lines[0], ",verdict,"+strings.Join(sweepCaseColumns(), ",")) {
		t.Errorf("header %s", lines[0])
	}
	for i, l := range lines[1:] {
		failed := i == 1 || i == 4
		if got := strings.Contains(l, ",1,inmem,direct AllReduce,"); got != failed || strings.Contains(l, "iteration "+string(rune('0'+i))) != failed {
			t.Errorf("row %d (failed %v): %s", i, failed, l)
		}
	}
}

// A soak's summary, with its faults, follows the schema.
func TestSoakSummaryValidatesAgainstTheSchema(t *testing.T) {
	var b bytes.Buffer
	if err := report.EncodeSummary(&b, soakSummary(t)); err != nil {
		t.Fatal(err)
	}
	if err := report.CompileSchema(t).Validate(b.Bytes()); err != nil {
		t.Error(err)
	}
}

// sweepCaseColumns are the columns a sweep adds for its case: coll.Case's
// fields of the csv tags' sweep class, in their order.
func sweepCaseColumns() []string {
	seed := report.Header(coll.Case{}, report.SeedColumns)
	var out []string
	for _, c := range report.Header(coll.Case{}, report.SweepColumns) {
		if !slices.Contains(seed, c) {
			out = append(out, c)
		}
	}
	return out
}
