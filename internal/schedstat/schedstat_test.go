package schedstat

import (
	"runtime"
	"testing"
	"time"
)

// The kernel keeps how long this thread waited for a processor, and it
// only grows.
func TestRunDelayIsRead(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	a, ok := RunDelay()
	if !ok {
		t.Skip("no /proc/thread-self/schedstat (a kernel without schedstats)")
	}
	for i := 0; i < 1e6; i++ {
		_ = i * i
	}
	if b, _ := RunDelay(); b < a {
		t.Errorf("run_delay went from %v to %v", a, b)
	}
}

// A span's waiting is part of its wall time, never more.
func TestWatchWaitsWithinTheSpan(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	stop := Watch()
	x := 0
	for i := 0; i < 1e7; i++ {
		x += i * i
	}
	wall, waited, ok := stop()
	if !ok {
		t.Skip("no /proc/thread-self/schedstat (a kernel without schedstats)")
	}
	if wall <= 0 || waited < 0 || waited > wall {
		t.Errorf("waited %v of %v (%d)", waited, wall, x)
	}
}

// A span that ends on another thread than it began is no thread's, and
// says nothing: the in-process ranks of the e2e tests are goroutines that
// move between threads.
func TestASpanOnTwoThreadsSaysNothing(t *testing.T) {
	if _, ok := RunDelay(); !ok {
		t.Skip("no /proc/thread-self/schedstat (a kernel without schedstats)")
	}
	stops, done := make(chan func() (time.Duration, time.Duration, bool)), make(chan struct{})
	go func() {
		// Locked until done: the test's own thread is then another.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		stops <- Watch()
		<-done
	}()
	stop := <-stops
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	_, waited, ok := stop()
	close(done)
	if ok || waited != 0 {
		t.Errorf("a span begun on one thread and ended on another: waited %v, ok %v", waited, ok)
	}
}
