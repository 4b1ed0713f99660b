package history

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"rsag/coll"
	"rsag/outdir"
	"rsag/report"
)

func synthetic(i int) Run {
	k := coll.Case{Run: "default", SizeBytes: 1024, DType: coll.Float32, Op: coll.Sum, Placement: coll.OutOfPlace, Method: coll.PerOp, Batch: 1,
		Buffers: coll.PlainBuffers, CTAPolicy: coll.DefaultCTAPolicy, Mode: "direct"}
	s := report.Summary{Started: fmt.Sprintf("2026-12-02T00:00:%02dZ", i), Status: outdir.StatusComplete, ChecksPassed: true, WorldSize: 2,
		Nodes:  []report.SummaryNode{{Host: "n1", Ranks: []int{0, 1}}},
		Timing: []report.TimingStat{{Case: k, Samples: 3, MinUS: 1, P10US: 1, MedianUS: 2, P90US: 3, MaxUS: 3}}}
	return Run{Summary: s, Status: outdir.StatusComplete, Samples: map[coll.Case][]float64{k: {1, 2, 3}}}
}

// Four writers at once, each with its own connection, lose no row.
func TestParallelWritersLoseNoRow(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.db")
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			db, err := Open(path)
			if err != nil {
				errs <- err
				return
			}
			defer db.Close()
			for i := range 10 {
				if _, err := db.Append(synthetic(w*10 + i)); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for table, want := range map[string]int{"runs": 40, "cases": 40, "samples": 120, "nodes": 40} {
		if n, err := db.Count(table); err != nil || n != want {
			t.Errorf("%s: %d rows (%v), want %d", table, n, err, want)
		}
	}
	if _, err := db.Append(synthetic(0)); err == nil {
		t.Error("a run appended twice was taken")
	}
}
