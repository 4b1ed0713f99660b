package report

import (
	"bytes"
	"reflect"
	"testing"

	"rsag/coll"
)

// What WriteCSV writes, ReadCSV reads back, every column.
func TestReadCSVReadsWhatWriteCSVWrote(t *testing.T) {
	rows := []TimingRow{
		{Rank: 0, Case: coll.Case{Run: "default", SizeBytes: 1024, DType: coll.Float32, Op: coll.Sum, Placement: coll.OutOfPlace,
			Method: coll.PerOp, Batch: 1, Buffers: coll.PlainBuffers, CTAPolicy: coll.DefaultCTAPolicy, Mode: "direct"},
			Cycle: 3, DurationUS: 12.5, Correct: Right, Host: "n1"},
		{Rank: 1, Case: coll.Case{Run: "r", SizeBytes: 8, DType: coll.Float64, Op: coll.Sum, Placement: coll.InPlace, Method: coll.Batched, Batch: 20,
			Buffers: coll.PlainBuffers, CTAPolicy: coll.DefaultCTAPolicy, Offset: 4, Mode: "decomposed"},
			Cycle: 0, DurationUS: 1e-5, Correct: Unchecked, Host: "n2"},
	}
	var b bytes.Buffer
	if err := WriteCSV(&b, rows, AllColumns, true); err != nil {
		t.Fatal(err)
	}
	got, err := ReadCSV[TimingRow](&b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, rows) {
		t.Errorf("read back\n%+v\nwant\n%+v", got, rows)
	}
	if _, err := ReadCSV[TimingRow](bytes.NewBufferString("rank,bogus\n0,1\n")); err == nil {
		t.Error("a column rsag does not write was read")
	}
}
