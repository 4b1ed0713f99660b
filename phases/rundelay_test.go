package phases

import "testing"

// The kernel keeps how long this thread waited for a processor, and it
// only grows.
func TestRunDelayIsRead(t *testing.T) {
	a, ok := runDelay()
	if !ok {
		t.Skip("no /proc/thread-self/schedstat (a kernel without schedstats)")
	}
	for i := 0; i < 1e6; i++ {
		_ = i * i
	}
	if b, _ := runDelay(); b < a {
		t.Errorf("run_delay went from %v to %v", a, b)
	}
}
