package ncclx

import (
	"testing"

	"rsag/coll/colltest"
)

// The NCCL backend over the fake libraries passes coll's conformance
// suite, abort included, on 1, 2 and 4 ranks.
func TestConformanceOnTheFakes(t *testing.T) {
	for _, n := range []int{1, 2, 4} {
		runRanks(t, n, func(_ fakeRank, b *Backend) error { return colltest.Check(b) })
	}
}
