package watchdog

import (
	"strings"
	"testing"
)

var steps = StallSteps{World: 4, Phases: []string{"startup", "timing"}, Ops: []string{"all-reduce", "barrier"}}

func TestParseStall(t *testing.T) {
	s, err := ParseStall("rank=1,phase=timing,size=65536,seconds=600,op=all-reduce", steps)
	if err != nil || s.rank != 1 || s.phase != "timing" || s.bytes != 65536 || s.seconds != 600 || s.op != "all-reduce" {
		t.Fatalf("got %+v, %v", s, err)
	}
	if s, err := ParseStall("", steps); s != nil || err != nil {
		t.Errorf("unset: %+v, %v", s, err)
	}
	// Each of these could never do what was meant.
	for v, want := range map[string]string{
		"rank=1,phase=timing":                        "seconds is missing",
		"phase=timing,seconds=5":                     "rank is missing",
		"rank=1,seconds=5":                           "phase is missing (startup, timing)",
		"rank=x,phase=timing,seconds=5":              `rank: "x" is not a whole number`,
		"rank=1,phase=timing,sekonds=5":              `unknown key "sekonds"`,
		"rank=1;phase=timing;seconds=5":              "is not a whole number",
		"rank=4,phase=timing,seconds=5":              "rank 4 is not a rank of this job of 4 (0 to 3)",
		"rank=-1,phase=timing,seconds=5":             "rank -1 is not a rank",
		"rank=1,phase=timming,seconds=5":             `phase "timming" is unknown: use startup, timing`,
		"rank=1,phase=timing,op=allreduce,seconds=5": `op "allreduce" is never waited for: use all-reduce, barrier`,
		"rank=1,phase=timing,size=-3,seconds=5":      "size -3 is negative",
		"rank=1,phase=timing,seconds=99999999":       "seconds 99999999: give 0 to 86400",
		"rank=1,rank=2,phase=timing,seconds=5":       "rank is given twice",
	} {
		if _, err := ParseStall(v, steps); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), StallEnv) {
			t.Errorf("%q: got %v, want %q", v, err, want)
		}
	}
}
