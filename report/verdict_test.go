package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"rsag/coll"
)

// A sample whose output was not checked (timing.check = "last") leaves the
// seed's correct column empty, never True; the rows keep their verdicts
// across ranks (JSON), and the case's statistics count the unchecked
// samples without calling the case wrong.
func TestUncheckedSamplesAreNotCorrect(t *testing.T) {
	c := coll.Case{Run: "default", SizeBytes: 1024, DType: coll.Float32, Op: coll.Sum, Placement: coll.OutOfPlace,
		Method: coll.PerOp, Batch: 1, Buffers: coll.PlainBuffers, CTAPolicy: coll.DefaultCTAPolicy, Mode: coll.Direct}
	rows := []TimingRow{
		{Rank: 0, Case: c, Cycle: 0, DurationUS: 1, Correct: VerdictOf(false, false)},
		{Rank: 0, Case: c, Cycle: 1, DurationUS: 2, Correct: VerdictOf(true, true)},
	}
	var b bytes.Buffer
	if err := WriteCSV(&b, rows, SeedColumns, true); err != nil {
		t.Fatal(err)
	}
	if want := "rank,size_bytes,mode,cycle,duration_us,correct\r\n0,1024,direct,0,1.0,\r\n0,1024,direct,1,2.0,True\r\n"; b.String() != want {
		t.Errorf("CSV:\n%q\nwant\n%q", b.String(), want)
	}
	data, err := json.Marshal(rows)
	if err != nil {
		t.Fatal(err)
	}
	var back []TimingRow
	if err := json.Unmarshal(data, &back); err != nil || back[0].Correct != Unchecked || back[1].Correct != Right {
		t.Errorf("JSON round trip: %+v, %v", back, err)
	}
	if err := json.Unmarshal([]byte(strings.Replace(string(data), `"True"`, `"yes"`, 1)), &back); err == nil {
		t.Error("a verdict of \"yes\" was read")
	}
	st := TimingStats(rows, 2, 0)
	if len(st) != 1 || !st[0].Correct || st[0].Unchecked != 1 {
		t.Errorf("stats %+v, want correct with 1 unchecked sample", st)
	}
	rows[1].Correct = VerdictOf(true, false)
	if st := TimingStats(rows, 2, 0); st[0].Correct || allCorrect(Rows{Timings: rows}) {
		t.Errorf("a wrong sample: stats %+v", st)
	}
}
