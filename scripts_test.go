package main

import (
	"context"
	"os/exec"
	"testing"
	"time"
)

// scripts/bench-imb.sh reduces rsag's per-rank samples IMB's way (each
// rank's mean, then the mean and the maximum over the ranks) and takes the
// median of per-round ratios; its self-test checks both on samples whose
// answers are known, and this runs it.
func TestBenchIMBReductions(t *testing.T) {
	for _, tool := range []string{"bash", "awk"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s", tool)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "bash", "scripts/bench-imb.sh", "--self-test").CombinedOutput()
	if err != nil {
		t.Fatalf("bench-imb.sh --self-test: %v\n%s", err, out)
	}
}
