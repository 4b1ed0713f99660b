package report

import (
	"bytes"
	"path/filepath"

	"rsag/coll"
)

// SoakFile is the soak phase's CSV, rank 0's: one row per iteration.
const SoakFile = "soak.csv"

// soak.csv registers itself: a combined output, written when the soak ran.
func init() {
	Register(Output{Stage: Combined, Patterns: []string{SoakFile}, Plan: func(in Input) ([]string, func(string) error) {
		if !in.Ran.Has(Soak) {
			return nil, nil
		}
		return []string{SoakFile}, func(dir string) error {
			return writeFile(filepath.Join(dir, SoakFile), func(b *bytes.Buffer) error {
				return WriteCSV(b, in.Rows.Soak, AllColumns, true)
			})
		}
	}})
}

// SoakRow is one soak iteration, over every rank: its draw (the case, in
// the timing CSVs' columns: run "soak", per-op, no mode), what rank 0's
// collectives moved, when it ended, and, when an output was wrong, how
// many elements over every rank and step, the first wrong element (the
// first rank's, in rank, mode and step order) and the verdict.
type SoakRow struct {
	Iteration int `csv:"iteration"`
	coll.Case
	BytesMoved    int64   `csv:"bytes_moved"`
	ElapsedS      float64 `csv:"elapsed_s"`
	WrongElements int     `csv:"wrong_elements"`
	Rank          string  `csv:"first_rank"` // "" when every output held
	Host          string  `csv:"first_host"`
	Step          string  `csv:"first_step"` // the mode and its step: "decomposed ReduceScatter"
	Element       string  `csv:"first_element"`
	OffsetBytes   string  `csv:"first_offset_bytes"`
	Expected      string  `csv:"expected"`
	Got           string  `csv:"got"`
	ExpectedBits  string  `csv:"expected_bits"`
	GotBits       string  `csv:"got_bits"`
	Verdict       string  `csv:"verdict"`
}

// SummarySoak is summary.json's soak section.
type SummarySoak struct {
	Seed             uint64  `json:"seed"`
	Iterations       int     `json:"iterations"`
	FailedIterations int     `json:"failed_iterations"`
	FailureRate      float64 `json:"failure_rate"` // failed / iterations
	ElapsedS         float64 `json:"elapsed_s"`
	BytesMoved       int64   `json:"bytes_moved"` // by rank 0's collectives
	// Verdict is the first failed iteration's diagnosis, "" when every
	// output held; SuspectRanks the ranks it names.
	Verdict      string              `json:"verdict"`
	SuspectRanks []int               `json:"suspect_ranks"`
	Faults       []coll.StepFault    `json:"faults"` // every rank's, in order; at most 1000
	Failures     []SummarySoakFailed `json:"failures"`
	// NotDrawn are the config's dtype and op pairs the soak skipped on
	// this many ranks (the soak spec's Pairs): "int8 prod".
	NotDrawn []string `json:"not_drawn"`
}

// SummarySoakFailed is one failed iteration: its draw and verdict.
type SummarySoakFailed struct {
	Iteration int       `json:"iteration"`
	Case      coll.Case `json:"case"`
	Wrong     int       `json:"wrong_elements"`
	Verdict   string    `json:"verdict"`
}
