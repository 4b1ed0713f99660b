// The soak's records: what one rank found wrong, one iteration on every
// rank, and the phase's result. The plan is soak_plan.go, the run
// soak_run.go, the check of each output soak_check.go, the diagnosis
// soak_diagnose.go and the texts soak_text.go.

package phases

import (
	"time"

	"rsag/coll"
)

// SoakFault is what one rank found wrong in one step's output. The record
// lives in coll so that report can write it without importing phases.
type SoakFault = coll.StepFault

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
