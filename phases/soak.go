// The soak's records: what one rank found wrong, one iteration on every
// rank, and the phase's result. The plan is soak_plan.go, the run
// soak_run.go, the check of each output soak_check.go, the diagnosis
// soak_diagnose.go and the texts soak_text.go.

package phases

import (
	"time"

	"rsag/coll"
)

// SoakFault is what one rank found wrong in the output of one step of one
// mode in one iteration: how many elements, in which chunks of the full
// buffer (chunk q is the part rank q holds after ReduceScatter), and the
// first wrong element.
type SoakFault struct {
	Iteration  int       `json:"iteration"`
	Case       coll.Case `json:"case"`
	Rank       int       `json:"rank"`
	Host       string    `json:"host"`
	Mode       coll.Mode `json:"mode"`
	Step       int       `json:"step"`       // the step's index in the mode
	Collective string    `json:"collective"` // its label, "ReduceScatter"
	Elements   int       `json:"elements"`   // of its output on this rank
	Wrong      int       `json:"wrong"`
	Chunks     []int     `json:"chunks"` // ascending
	// Kinds says, for each of Chunks, how this rank came by that chunk in
	// this step: "reduced" (it combined the chunk, which it held before,
	// with other ranks' data), "received" (it did not hold it before), or
	// "kept" (it held it before, as it is: its own copy).
	Kinds []string `json:"kinds"`
	// The first wrong element: its index in the output and its byte offset
	// there (the output starts Case.Offset bytes into its allocation); what
	// it should hold and holds, as values and as bits.
	Index        int     `json:"index"`
	OffsetBytes  int64   `json:"offset_bytes"`
	Expected     float64 `json:"expected"`
	Got          float64 `json:"got"`
	ExpectedBits string  `json:"expected_bits"`
	GotBits      string  `json:"got_bits"`
}

// SoakIteration is one iteration on every rank.
type SoakIteration struct {
	Iteration  int
	Case       coll.Case // Mode empty: every mode ran
	BytesMoved int64     // by this rank, every mode: each collective's full buffer
	Elapsed    time.Duration
	Wrong      int // elements wrong over every rank, mode and step
	Verdict    string
	First      *SoakFault // the first fault, in mode, step and rank order
}

// SoakResult is the soak phase on every rank (the same on each).
type SoakResult struct {
	Seed       uint64
	Iterations []SoakIteration
	Failed     int         // iterations that found a wrong element
	Faults     []SoakFault // every rank's, in iteration, mode, step and rank order, at most maxSoakFaults
	Verdict    string      // the first failed iteration's
	Suspects   []int       // its suspect ranks
	Elapsed    time.Duration
	BytesMoved int64
	Skipped    []SoakPair // the spec's pairs not drawn on this many ranks (Pairs)
}
