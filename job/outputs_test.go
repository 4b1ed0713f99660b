package job

import (
	"testing"

	"rsag/report"
)

// The run writes every output that registers itself, and only those its
// imports bring in register: the figures, from report/plot, must be among
// them, or a run would neither list nor write them.
func TestTheRunKnowsEveryOutput(t *testing.T) {
	for _, name := range []string{"summary.json", "timings.csv", "rank0_timings.csv", "time_vs_size.png", "memory_by_mode.svg", "soak.csv", ".rsag-beat-node3"} {
		if !report.IsOutput(name) {
			t.Errorf("%s is not an output this run writes", name)
		}
	}
}
