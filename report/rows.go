// Package report writes rsag's results. Rows are plain structs whose
// fields are the CSV columns: the seed's first, in field order (an embedded
// struct's fields, such as coll.Case's, stand where it is embedded), then
// those tagged "sweep", then those tagged "extra":
//
//	rank{r}_contracts.csv, contracts.csv: rank,name,correct,detail[,host]
//	rank{r}_timings.csv, timings.csv:     rank,size_bytes,mode,cycle,duration_us,correct[,run,dtype,op,
//	                                      placement,method,batch,buffers,cta_policy,offset_bytes][,host]
//	                                      (correct: True, False, or empty for a sample whose output was
//	                                      not checked, with timing.check = "last"; see Verdict)
//	rank{r}_memory.csv, memory.csv:       rank,mode,payload_bytes,baseline_bytes,steady_delta_bytes,
//	                                      peak_delta_bytes,correct[,host,analytic_steady_bytes,
//	                                      analytic_peak_bytes,device_steady_delta_bytes,device_peak_delta_bytes]
//	numerics.csv (rank 0 only):           rank,dtype,size_bytes,elements,bitwise_equal,differing_elements,
//	                                      max_ulp,max_abs_error_direct,max_abs_error_decomposed,
//	                                      max_rel_error_direct,max_rel_error_decomposed,unit_roundoff,
//	                                      bound,max_bound_ratio,within_bound,host
//	locate.csv (rank 0 only):             rank,step,round,repeat,unit,a,b,probe,collective,size_bytes,bytes,
//	                                      ranks,duration_us,host
//
// The per-rank files have exactly the seed's columns, order and spelling
// (True/False, Python's float repr, CRLF line ends) so that notebooks written for the seed
// keep working; the combined files that rank 0 writes add the bracketed
// columns after them. CSV, tables and any later format are separate writers
// over the same rows.
package report

import (
	"fmt"

	"rsag/coll"
)

// ContractRow is one contract on one rank.
type ContractRow struct {
	Rank    int    `csv:"rank"`
	Name    string `csv:"name"`
	Correct bool   `csv:"correct"`
	Detail  string `csv:"detail"`
	Host    string `csv:"host,extra"`
}

// TimingRow is one timed sample on one rank. The case's columns come from
// coll.Case's csv tags: the seed's size_bytes and mode among the first
// columns, the sweep's after correct (see the package doc).
type TimingRow struct {
	Rank int `csv:"rank"`
	coll.Case
	Cycle      int     `csv:"cycle"`
	DurationUS float64 `csv:"duration_us"` // per operation: batched and graph samples are divided by Batch
	Correct    Verdict `csv:"correct"`
	Host       string  `csv:"host,extra"`
}

// Verdict is what the check of a timing sample's output found. The seed's
// correct column spells Right and Wrong True and False, as it did, and
// leaves the cell empty for Unchecked: a sample whose output nobody looked
// at (timing.check = "last") is never said to be correct.
type Verdict int8

const (
	Unchecked Verdict = iota
	Wrong
	Right
)

// VerdictOf is a sample's verdict from whether it was checked and held.
func VerdictOf(checked, correct bool) Verdict {
	switch {
	case !checked:
		return Unchecked
	case correct:
		return Right
	}
	return Wrong
}

var verdictText = map[Verdict]string{Unchecked: "", Wrong: "False", Right: "True"}

// MarshalText spells v as the correct column does.
func (v Verdict) MarshalText() ([]byte, error) { return []byte(verdictText[v]), nil }

// UnmarshalText reads what MarshalText wrote (rows cross ranks as JSON).
func (v *Verdict) UnmarshalText(b []byte) error {
	for k, t := range verdictText {
		if t == string(b) {
			*v = k
			return nil
		}
	}
	return fmt.Errorf("%q is not a check's verdict: want True, False or nothing", b)
}

// TimingRankRow is the timing phase on one rank: its wall time and how
// much of it the rank's thread sat runnable but not running (schedstat's
// run_delay). A rank whose kernel does not say has no row.
type TimingRankRow struct {
	Rank    int
	Seconds float64
	WaitedS float64
}

// MemoryRow is one buffer-lifetime strategy on one rank.
type MemoryRow struct {
	Rank              int    `csv:"rank"`
	Mode              string `csv:"mode"`
	PayloadBytes      int64  `csv:"payload_bytes"`
	BaselineBytes     int64  `csv:"baseline_bytes"`
	SteadyDeltaBytes  int64  `csv:"steady_delta_bytes"`
	PeakDeltaBytes    int64  `csv:"peak_delta_bytes"`
	Correct           bool   `csv:"correct"`
	Host              string `csv:"host,extra"`
	AnalyticSteady    int64  `csv:"analytic_steady_bytes,extra"`
	AnalyticPeak      int64  `csv:"analytic_peak_bytes,extra"`
	DeviceSteadyDelta int64  `csv:"device_steady_delta_bytes,extra"`
	DevicePeakDelta   int64  `csv:"device_peak_delta_bytes,extra"`
}

// NumericsRow is one dtype and size of the numerics phase on one rank:
// AllReduce against ReduceScatter + AllGather on the same random floats,
// and each against the exact sum.
type NumericsRow struct {
	Rank                  int     `csv:"rank"`
	DType                 string  `csv:"dtype"`
	SizeBytes             int64   `csv:"size_bytes"`
	Elements              int     `csv:"elements"`
	BitwiseEqual          bool    `csv:"bitwise_equal"`
	DifferingElements     int     `csv:"differing_elements"`
	MaxULP                int64   `csv:"max_ulp"`
	MaxAbsErrorDirect     float64 `csv:"max_abs_error_direct"`
	MaxAbsErrorDecomposed float64 `csv:"max_abs_error_decomposed"`
	MaxRelErrorDirect     float64 `csv:"max_rel_error_direct"`
	MaxRelErrorDecomposed float64 `csv:"max_rel_error_decomposed"`
	UnitRoundoff          float64 `csv:"unit_roundoff"`
	Bound                 float64 `csv:"bound"`
	MaxBoundRatio         float64 `csv:"max_bound_ratio"`
	WithinBound           bool    `csv:"within_bound"`
	Host                  string  `csv:"host"`
}

// Rows is everything one rank produced.
type Rows struct {
	Contracts []ContractRow
	Timings   []TimingRow
	// TimingRanks are the timing phase's span on each rank and how much of
	// it the rank waited for a processor (WithWaits).
	TimingRanks []TimingRankRow
	Memory      []MemoryRow
	Numerics    []NumericsRow
	// The locate phase's (LocateRows).
	Locate      []LocateRow
	LocateComms []LocateCommRow
	LocateRanks []LocateRankRow
	// Soak is the soak phase's, the same on every rank: rank 0's rows
	// alone carry it (SoakRows).
	Soak        []SoakRow
	SoakSummary *SummarySoak
	// Tables are the rows of the phases with a table of their own.
	Tables []PhaseTable
}
