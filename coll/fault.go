package coll

// StepFault is what one rank found wrong in the output of one step of one
// mode in one iteration of the soak: how many elements, in which chunks of
// the full buffer (chunk q is the part rank q holds after ReduceScatter),
// and the first wrong element. It is data only: phases finds and diagnoses
// faults, report writes them (summary.json's soak.faults).
type StepFault struct {
	Iteration  int    `json:"iteration"`
	Case       Case   `json:"case"`
	Rank       int    `json:"rank"`
	Host       string `json:"host"`
	Mode       Mode   `json:"mode"`
	Step       int    `json:"step"`       // the step's index in the mode
	Collective string `json:"collective"` // its label, "ReduceScatter"
	Elements   int    `json:"elements"`   // of its output on this rank
	Wrong      int    `json:"wrong"`
	Chunks     []int  `json:"chunks"` // ascending
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
