// Package schedstat reads how long the calling thread sat runnable but not
// running: the kernel's run_delay (/proc/thread-self/schedstat), the time
// a rank waited for a processor. A rank that waits so is measured taking
// turns with whatever else runs on its processors, not only its collective.
//
// It reads the calling thread's figure, not the process's: the collectives
// run on the main goroutine, locked to its OS thread (main's init), and it
// is that thread's waiting that the timings take in. The process's other
// threads (Go's garbage collector and sysmon, the watchdog's timers) wait
// mostly behind their own rank's busy thread, which is not the rank
// waiting; summing them (/proc/self/task/*/schedstat) would say a quiet
// 2-rank run on 2 processors waited. Both reads of a span must be on one
// locked thread.
package schedstat

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// RunDelay is the calling thread's time spent runnable but waiting for a
// processor since it started; ok is false where the kernel does not keep
// it (no schedstats).
func RunDelay() (time.Duration, bool) {
	b, err := os.ReadFile("/proc/thread-self/schedstat")
	if err != nil {
		return 0, false
	}
	// Three numbers: time on a processor, time waiting for one (both in
	// ns), timeslices run.
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0, false
	}
	ns, err := strconv.ParseInt(f[1], 10, 64)
	return time.Duration(ns), err == nil
}

// Watch starts a span on the calling thread; the func it returns gives the
// span's wall time and how much of it the thread waited for a processor,
// ok false (waited 0) where the kernel does not say, or where the span
// ended on another thread than it began: a goroutine not locked to its
// thread (the e2e tests' in-process ranks) has no thread's figure.
func Watch() func() (wall, waited time.Duration, ok bool) {
	start := time.Now()
	tid, w0, ok0 := onThread()
	return func() (time.Duration, time.Duration, bool) {
		wall := time.Since(start)
		tid1, w1, ok1 := onThread()
		if !ok0 || !ok1 || tid1 != tid || w1 < w0 {
			return wall, 0, false
		}
		return wall, w1 - w0, true
	}
}

// onThread is RunDelay with the thread it was read on; ok is false too
// when the goroutine moved to another thread during the read.
func onThread() (tid int, d time.Duration, ok bool) {
	tid = syscall.Gettid()
	d, ok = RunDelay()
	return tid, d, ok && syscall.Gettid() == tid
}
