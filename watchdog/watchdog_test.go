package watchdog

import (
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestFiresOnAStuckStepWithItsDescription(t *testing.T) {
	got := make(chan string, 1)
	w := New(50*time.Millisecond, func(msg string) { got <- msg })
	w.Start()
	defer w.Stop()
	w.Phase("timing")
	w.Arm("all-reduce", 65536)
	select {
	case msg := <-got:
		for _, s := range []string{"watchdog: timing all-reduce at 65536 bytes did not finish within 50ms (waited ", "); aborting the job"} {
			if !strings.Contains(msg, s) {
				t.Errorf("message %q lacks %q", msg, s)
			}
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the watchdog did not fire within 5 s of a 50 ms deadline")
	}
	if !w.Fired() {
		t.Error("Fired() is false after firing")
	}
}

// Steps that each finish in time never fire, however long the run.
func TestQuickStepsNeverFire(t *testing.T) {
	var mu sync.Mutex
	fired := ""
	w := New(100*time.Millisecond, func(msg string) { mu.Lock(); fired = msg; mu.Unlock() })
	w.Start()
	for i := 0; i < 30; i++ { // 300 ms in all, three timeouts
		w.Arm("barrier", -1)
		time.Sleep(10 * time.Millisecond)
		w.Kick()
	}
	w.Disarm()
	time.Sleep(250 * time.Millisecond) // disarmed: no deadline
	w.Stop()
	mu.Lock()
	defer mu.Unlock()
	if fired != "" {
		t.Errorf("fired on quick steps: %s", fired)
	}
}

func TestMessageWithoutSize(t *testing.T) {
	msg := Message("startup", "config broadcast", -1, 180*time.Second, 181234*time.Millisecond)
	want := "watchdog: startup config broadcast did not finish within 3m0s (waited 3m1.234s); aborting the job"
	if msg != want {
		t.Errorf("got %q, want %q", msg, want)
	}
}

func TestArmAllocatesNothing(t *testing.T) {
	w := New(time.Hour, func(string) {})
	if n := testing.AllocsPerRun(100, func() { w.Arm("all-reduce", 1024); w.Kick() }); n != 0 {
		t.Errorf("Arm+Kick allocate %v times; they sit next to the timed collectives", n)
	}
}

// A step of many parts has a deadline per part: while its progress moves,
// a run of parts far longer than the timeout never fires; once it stops,
// the watchdog fires within the timeout. On a loaded machine a 20 ms
// sleep can take longer than the timeout: then a part really did not move
// on in time, and the watchdog is right to fire; it is wrong only if it
// fired while no gap between parts reached the timeout.
func TestProgressRestartsTheDeadline(t *testing.T) {
	const timeout = 500 * time.Millisecond
	got := make(chan string, 1)
	w := New(timeout, func(msg string) { got <- msg })
	w.Start()
	defer w.Stop()
	var part atomic.Int64
	w.ArmProgress("all-reduce", 1024, part.Load)
	var longest time.Duration
	last := time.Now()
	for range 50 { // 1 s of parts of 20 ms each, twice the timeout
		time.Sleep(20 * time.Millisecond)
		part.Add(1)
		longest, last = max(longest, time.Since(last)), time.Now()
	}
	select {
	case msg := <-got:
		if longest < timeout {
			t.Fatalf("fired while its parts moved on (the longest part %v, under the %v timeout): %s", longest, timeout, msg)
		}
		t.Skipf("a part took %v, over the %v timeout, on this loaded machine: the watchdog fired rightly (%s); "+
			"the moving parts were not tested", longest, timeout, msg)
	default:
	}
	stopped := time.Now()
	select {
	case <-got:
		if waited := time.Since(stopped); waited < timeout {
			t.Errorf("fired %v after the last part, within the %v timeout", waited, timeout)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("a part that never ended did not fire within 10 s of a %v deadline", timeout)
	}
}
