package e2e

import (
	"os"
	"testing"
)

// fullTierVar turns on the full tier (make test-full): the real sizes, the
// real cadences and the whole placement and fleet tables. make test runs a
// fast twin of each full test instead; docs/multi-node.md lists the pairs.
const fullTierVar = "RSAG_TEST_FULL"

// fullTier says the full tier is on.
func fullTier() bool { return os.Getenv(fullTierVar) == "1" }

// onlyInFullTier skips t outside the full tier, naming the fast twin that
// make test runs in its place.
func onlyInFullTier(t *testing.T, twin string) {
	t.Helper()
	if !fullTier() {
		t.Skipf("full tier only (make test-full, %s=1); make test runs its twin, %s", fullTierVar, twin)
	}
}
