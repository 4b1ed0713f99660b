// Package stopped says whether this process was stopped (SIGSTOP, a
// debugger's ^Z) and continued. A timer or a heartbeat that comes seconds
// late cannot say it: on a loaded machine a process's wake can be as late
// without anyone having stopped it (issue 34 class 5, an innocent rank
// said "this process itself did not run" and took the blame for the
// rank that was stopped). A stopped process that runs again has been sent
// SIGCONT, and that the process can see: a late wake is told as this
// process's stop only when a SIGCONT came in the meantime.
package stopped

import (
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"rsag/internal/cadence"
)

var (
	once sync.Once
	last atomic.Int64 // unix nanoseconds of the last SIGCONT; 0 for none
)

// Watch starts listening for SIGCONT, once per process; Since calls it.
// The signal's default action (the kernel continues the process) is kept.
func Watch() {
	once.Do(func() {
		c := make(chan os.Signal, 1)
		signal.Notify(c, syscall.SIGCONT)
		go func() {
			for range c {
				last.Store(time.Now().UnixNano())
			}
		}()
	})
}

// noteWait is how long Since waits for the note of a SIGCONT: a late
// timer wakes at the continue, before the goroutine that notes the signal
// has run (measured: under 100 ms).
const noteWait = cadence.StopNoteWait

// Since reports whether a SIGCONT has come since t: this process was
// stopped and continued after t. It watches from its first call on. Asked
// at a late wake, it waits up to noteWait for the signal's note, so call
// it only once a wake is known to be late.
func Since(t time.Time) bool {
	Watch()
	for end := time.Now().Add(noteWait); ; time.Sleep(10 * time.Millisecond) {
		if n := last.Load(); n != 0 && n >= t.UnixNano() {
			return true
		}
		if time.Now().After(end) {
			return false
		}
	}
}
