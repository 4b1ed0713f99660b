// Package watchdog gives every blocking step of a run a deadline. The main
// goroutine, which makes every MPI, CUDA and NCCL call, arms the watchdog
// before each collective or synchronisation with what it is about to wait
// for; a goroutine of the watchdog's own checks the deadline and, when a
// step has not finished within the timeout, calls the fire function with a
// message naming the phase, the operation, its size and how long it waited.
//
// The deadline runs from the last Arm or Kick, so a long run of quick steps
// never fires and one stuck step always does, within timeout plus one check
// interval. Arm and Kick take a mutex and read the clock and allocate
// nothing: they sit next to the timed collectives.
package watchdog

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"rsag/internal/cadence"
	"rsag/internal/stopped"
)

// Watchdog watches one process's blocking steps.
type Watchdog struct {
	fire func(msg string)
	now  func() time.Time

	mu      sync.Mutex
	timeout time.Duration
	armed   bool
	since   time.Time // when the current step was armed or kicked
	phase   string
	op      string
	bytes   int64 // < 0: the step has no size
	fired   bool
	// progress, when the step has it, counts the parts of a step that runs
	// many (a run of timed samples in one C call): each new count restarts
	// the deadline, as a Kick would, so that every part has its own.
	progress func() int64
	seen     int64

	stop chan struct{}
	done chan struct{}
}

// New returns a watchdog with the given timeout that calls fire, once, from
// its own goroutine when a step overruns. Start begins the watching.
func New(timeout time.Duration, fire func(msg string)) *Watchdog {
	return &Watchdog{fire: fire, now: time.Now, timeout: timeout}
}

// Start begins checking the deadline on a goroutine of the watchdog's own.
func (w *Watchdog) Start() {
	w.stop, w.done = make(chan struct{}), make(chan struct{})
	go w.loop()
}

// Stop ends the watching; nothing fires after Stop returns.
func (w *Watchdog) Stop() {
	if w.stop == nil {
		return
	}
	close(w.stop)
	<-w.done
	w.stop = nil
}

// SetTimeout changes the deadline of every later step (the config's
// timeout_s is known only once the config has been broadcast and parsed).
func (w *Watchdog) SetTimeout(d time.Duration) {
	w.mu.Lock()
	w.timeout = d
	w.mu.Unlock()
}

// Timeout is the current deadline.
func (w *Watchdog) Timeout() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.timeout
}

// Phase names the phase the next steps belong to ("startup", "contracts",
// "timing", "memory", "results").
func (w *Watchdog) Phase(name string) {
	w.mu.Lock()
	w.phase = name
	w.mu.Unlock()
}

// Arm starts the deadline of a step: op is what the process is about to wait
// for ("all-reduce", "barrier"), bytes its payload (-1 when it has none).
func (w *Watchdog) Arm(op string, bytes int64) { w.ArmProgress(op, bytes, nil) }

// ArmProgress is Arm for a step of many parts, which progress counts (it
// is read from the watchdog's goroutine): the deadline restarts whenever
// the count moves, so that each part has the whole timeout.
func (w *Watchdog) ArmProgress(op string, bytes int64, progress func() int64) {
	t := w.now()
	var seen int64
	if progress != nil {
		seen = progress()
	}
	w.mu.Lock()
	w.armed, w.since, w.op, w.bytes, w.progress, w.seen = true, t, op, bytes, progress, seen
	w.mu.Unlock()
}

// Kick restarts the deadline of the current step, keeping its description:
// a synchronisation after a collective waits for that collective.
func (w *Watchdog) Kick() {
	t := w.now()
	w.mu.Lock()
	w.armed, w.since = true, t
	w.mu.Unlock()
}

// Disarm stops the deadline until the next Arm or Kick.
func (w *Watchdog) Disarm() {
	w.mu.Lock()
	w.armed, w.progress = false, nil
	w.mu.Unlock()
}

// Fired reports whether the watchdog has fired.
func (w *Watchdog) Fired() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.fired
}

// interval is how often the deadline is checked: a tenth of the timeout,
// at most a second, so a step is caught within 10% (or 1 s) of its deadline.
func interval(timeout time.Duration) time.Duration {
	return max(min(timeout/10, time.Second), time.Millisecond)
}

func (w *Watchdog) loop() {
	defer close(w.done)
	for {
		every := interval(w.Timeout())
		slept := time.Now()
		t := time.NewTimer(every)
		select {
		case <-w.stop:
			t.Stop()
			return
		case <-t.C:
		}
		if msg, ok := w.check(); ok {
			// A timer that fires seconds late may mean this process was
			// stopped, and then it held the job up, not the others; but a
			// loaded machine makes timers as late, and an innocent rank
			// must not take the blame (issue 34 class 5). Only a SIGCONT
			// since the timer was set proves a stop: without one, nothing
			// is claimed.
			if late := time.Since(slept) - every; late > frozenAfter && stopped.Since(slept) {
				msg = strings.TrimSuffix(msg, "; aborting the job") + fmt.Sprintf("; this process itself did not run for %.1f s "+
					"(stopped by a signal and continued, SIGCONT): the other ranks waited for it; aborting the job", late.Seconds())
			}
			w.fire(msg)
			return
		}
	}
}

// frozenAfter is how late a check may come before the process is said to
// have not run: far more than any scheduler's delay on a loaded node.
const frozenAfter = cadence.FrozenAfter

// check returns the message for an overdue step, once.
func (w *Watchdog) check() (string, bool) {
	now := w.now()
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.armed || w.fired {
		return "", false
	}
	if w.progress != nil {
		if n := w.progress(); n != w.seen {
			w.seen, w.since = n, now
		}
	}
	waited := now.Sub(w.since)
	if waited < w.timeout {
		return "", false
	}
	w.fired = true
	return Message(w.phase, w.op, w.bytes, w.timeout, waited), true
}

// Message is what the watchdog says when a step overran: "watchdog: timing
// all-reduce at 65536 bytes did not finish within 3m0s (waited 3m0.4s);
// aborting the job".
func Message(phase, op string, bytes int64, timeout, waited time.Duration) string {
	what := op
	if phase != "" {
		what = phase + " " + op
	}
	if bytes >= 0 {
		what += fmt.Sprintf(" at %d bytes", bytes)
	}
	return fmt.Sprintf("watchdog: %s did not finish within %v (waited %v); aborting the job",
		what, timeout, waited.Round(time.Millisecond))
}
