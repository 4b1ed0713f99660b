package phases_test

import "testing"

// noErrors fails the test at the first rank that returned an error.
func noErrors(t *testing.T, errs []error) {
	t.Helper()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
}
