package outdir

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func writeRunning(t *testing.T, dir, host string, pid int) {
	t.Helper()
	if err := WriteRecord(dir, Record{Status: StatusRunning, Host: host, PID: pid, Files: []string{RunFile}}); err != nil {
		t.Fatal(err)
	}
}

// The guard marks failed only the run it watches, and only if its rank 0
// left it running.
func TestGuardMarksOnlyItsOwnRunningRun(t *testing.T) {
	for _, c := range []struct {
		name   string
		status string
		host   string
		pid    int
		marked bool
	}{
		{"killed while running", StatusRunning, "node1", 42, true},
		{"ended complete", StatusComplete, "node1", 42, false},
		{"ended failed", StatusFailed, "node1", 42, false},
		{"another run's record", StatusRunning, "node1", 43, false},
		{"another host's record", StatusRunning, "node2", 42, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := WriteRecord(dir, Record{Status: c.status, Reason: "its own", Host: c.host, PID: c.pid}); err != nil {
				t.Fatal(err)
			}
			LeaveNote(dir, 1, "rank 1 (node1): watchdog: stuck")
			if err := guard(strings.NewReader(""), io.Discard, nil, dir, "node1", 42, sleeping, EarlyNaming{}); err != nil {
				t.Fatal(err)
			}
			run, err := ReadRecord(dir)
			if err != nil {
				t.Fatal(err)
			}
			if !c.marked {
				if run.Status != c.status || run.Reason != "its own" {
					t.Errorf("the guard touched %+v", run)
				}
				return
			}
			if run.Status != StatusFailed || run.Ended == "" ||
				!strings.HasPrefix(run.Reason, "rank 0 (node1, pid 42) ended before it could mark the run: killed outright") ||
				!strings.HasSuffix(run.Reason, "before that, a rank failed on its own: rank 1 (node1): watchdog: stuck") {
				t.Errorf("%+v", run)
			}
		})
	}
}

const guardStarted = "2026-12-01T12:00:00Z"

// guardedRun is a run.json of rank 0 (node1, pid 42) of 2 ranks, running,
// and each of beats in a node's file of its own.
func guardedRun(t *testing.T, dir string, beats []Beat) {
	t.Helper()
	if err := WriteRecord(dir, Record{Status: StatusRunning, Host: "node1", PID: 42, Started: guardStarted, WorldSize: 2}); err != nil {
		t.Fatal(err)
	}
	for i, b := range beats {
		if err := WriteNodeBeats(dir, NodeBeats{Run: b.Run, Host: b.Host, Node: i, Writer: b.Rank, Written: b.Written, Beats: []Beat{b}}); err != nil {
			t.Fatal(err)
		}
	}
}

// When rank 0 dies first, its guard names every rank's part from their
// heartbeats, in run.json and on stderr: here rank 0 itself, gone with no
// last beat, and rank 1 waiting for it.
func TestGuardNamesTheHang(t *testing.T) {
	dir, run, now := t.TempDir(), RunID("node1", 42, guardStarted), time.Now()
	guardedRun(t, dir, []Beat{
		{Run: run, Rank: 0, Host: "node1", PID: 42, Written: now.Add(-10 * time.Second), Step: BeatStep{Seq: 9, Op: "barrier", In: true, At: now.Add(-10 * time.Second)}},
		{Run: run, Rank: 1, Host: "node2", PID: 7, Written: now, Step: BeatStep{Seq: 10, Op: "all-reduce", Bytes: 64, In: true, At: now.Add(-8 * time.Second)}},
	})
	var stderr strings.Builder
	if err := guard(strings.NewReader(""), &stderr, nil, dir, "node1", 42, sleeping, EarlyNaming{}); err != nil {
		t.Fatal(err)
	}
	rec, err := ReadRecord(dir)
	want := "hang: rank 1 waits in all-reduce #10 (64 bytes) for 8.0 s; rank 0 on node1 (pid 42) "
	if err != nil || rec.Status != StatusFailed || !strings.Contains(rec.Reason, want) || !strings.Contains(stderr.String(), want) {
		t.Errorf("%+v, %v\nstderr: %s\nwant %q", rec, err, stderr.String(), want)
	}
}

// Rank 0 stopped, then killed by the launcher while rank 1's watchdog
// gave up on it: the reason leads with the stop, and rank 1's failure
// follows as what it was, waiting for rank 0 (issue 34 class 6: it said
// "killed outright or crashed" and "rank 1 failed on its own" first). It
// is called stopped only with a proof: its guard saw it in state T, or its
// own beat says it did not run with a SIGCONT since. The same silence
// without either is what a loaded machine makes of a rank that was never
// stopped (issue 33): the reason says it was silent, not stopped.
func TestGuardLeadsWithAStoppedRank0(t *testing.T) {
	for _, c := range []struct {
		name   string
		state  func(int) string
		frozen float64
		lead   string
		has    []string
	}{
		{"seen stopped by its guard", stoppedState("T"), 0,
			"rank 0 (node1, pid 42) was stopped (state T, seen by its guard): it wrote no heartbeat for the last 7.",
			[]string{"the other ranks waited for it: rank 1 (node2): watchdog"}},
		{"traced", stoppedState("t"), 0,
			"rank 0 (node1, pid 42) was stopped (state t, seen by its guard): it wrote no heartbeat for the last 7.",
			[]string{"the other ranks waited for it: rank 1 (node2): watchdog"}},
		{"continued, as its beat says", sleeping, 6.5,
			"rank 0 (node1, pid 42) was stopped (and continued: it did not run for 6.5 s, and a SIGCONT came meanwhile): it wrote no heartbeat for the last 7.",
			[]string{"the other ranks waited for it: rank 1 (node2): watchdog"}},
		{"silent, never seen stopped", sleeping, 0,
			"rank 0 (node1, pid 42) ended before it could mark the run: killed outright",
			[]string{"after it had written no heartbeat for 7.", "without being seen stopped (starved on a loaded machine, or frozen)",
				"meanwhile, a rank failed, perhaps waiting for it: rank 1 (node2): watchdog"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir, run, now := t.TempDir(), RunID("node1", 42, guardStarted), time.Now()
			guardedRun(t, dir, []Beat{
				{Run: run, Rank: 0, Host: "node1", PID: 42, Written: now.Add(-7 * time.Second), Frozen: c.frozen,
					Step: BeatStep{Seq: 10, Op: "all-reduce", In: true, At: now.Add(-7 * time.Second)}},
				{Run: run, Rank: 1, Host: "node2", PID: 7, Written: now, Ended: "watchdog: all-reduce did not finish within 5s", TimedOut: true,
					Step: BeatStep{Seq: 10, Op: "all-reduce", Bytes: 64, In: true, At: now.Add(-6 * time.Second)}},
			})
			LeaveNote(dir, 1, "rank 1 (node2): watchdog: all-reduce did not finish within 5s")
			var stderr strings.Builder
			if err := guard(strings.NewReader(""), &stderr, nil, dir, "node1", 42, c.state, EarlyNaming{}); err != nil {
				t.Fatal(err)
			}
			rec, err := ReadRecord(dir)
			if err != nil || rec.Status != StatusFailed || !strings.HasPrefix(rec.Reason, c.lead) || strings.Contains(rec.Reason, "failed on its own") {
				t.Errorf("%+v, %v\nwant a reason that starts %q", rec, err, c.lead)
			}
			for _, h := range c.has {
				if !strings.Contains(rec.Reason, h) {
					t.Errorf("reason %q\nwant it to hold %q", rec.Reason, h)
				}
			}
		})
	}
}

// A stop is rank 0's silence's only when it was seen after rank 0's last
// beat: a rank stopped and continued, then silent for another reason, was
// not stopped then.
func TestSilence(t *testing.T) {
	died := time.Now()
	b := Beat{Written: died.Add(-5 * time.Second)}
	for _, c := range []struct {
		name   string
		seen   time.Time
		frozen float64
		stop   string
	}{
		{"seen stopped after its last beat", died.Add(-time.Second), 0, "state T, seen by its guard"},
		{"seen stopped before its last beat", died.Add(-6 * time.Second), 0, ""},
		{"never seen stopped", time.Time{}, 0, ""},
		{"continued, its beat says", time.Time{}, 4, "and continued: it did not run for 4.0 s, and a SIGCONT came meanwhile"},
		{"a short stop it noticed", time.Time{}, 2, ""},
	} {
		b := b
		b.Frozen = c.frozen
		silent, stop := silence(b, died, c.seen, "T")
		if silent != 5*time.Second || stop != c.stop {
			t.Errorf("%s: silent %v, stop %q; want 5s, %q", c.name, silent, stop, c.stop)
		}
	}
}

// The guard looks at its rank 0 while it lives, and remembers the last
// time it saw it stopped; once it has seen it stopped, later looks at a
// running process do not forget it.
func TestStopWatch(t *testing.T) {
	var looks atomic.Int64
	states := []string{"S", "T", "R", "S"}
	w := watchStops(42, func(int) string { return states[min(int(looks.Add(1))-1, len(states)-1)] }, time.Millisecond)
	for looks.Load() < int64(len(states)) {
		time.Sleep(time.Millisecond)
	}
	if seen, state := w.end(); seen.IsZero() || state != "T" {
		t.Errorf("seen %v in state %q; want a time, in T", seen, state)
	}
	if seen, _ := watchStops(42, sleeping, time.Millisecond).end(); !seen.IsZero() {
		t.Errorf("a process never stopped was seen stopped at %v", seen)
	}
}

// sleeping and stoppedState stand for ProcState of a rank 0 that is not
// stopped, and of one that is.
func sleeping(int) string { return "S" }

func stoppedState(st string) func(int) string { return func(int) string { return st } }

// The real thing: a guard process shares the lock while it waits, and
// once its rank 0's pipe closes (as it does however rank 0 dies) marks the
// run failed and frees the directory.
func TestGuardProcess(t *testing.T) {
	dir := t.TempDir()
	l, err := Acquire(dir, me)
	if err != nil {
		t.Fatal(err)
	}
	writeRunning(t, dir, "here", os.Getpid())
	w, err := StartGuard(os.Args[0], l, dir, "here", os.Getpid(), EarlyNaming{})
	if err != nil {
		t.Fatal(err)
	}
	// Rank 0 dies: its lock's file closes without a release...
	close(l.stop)
	<-l.done
	l.f.Close()
	// ...and the guard still holds the lock.
	if _, err := Acquire(dir, me); !errors.As(err, new(*BusyError)) {
		t.Fatalf("the guard does not hold the lock: %v", err)
	}
	w.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		run, _ := ReadRecord(dir)
		_, lerr := os.Stat(filepath.Join(dir, LockFile))
		if run.Status == StatusFailed && os.IsNotExist(lerr) {
			if !strings.Contains(run.Reason, "its guard marked it") {
				t.Errorf("reason %q", run.Reason)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("within 10 s of rank 0's end: %+v, lock %v", run, lerr)
		}
		time.Sleep(10 * time.Millisecond)
	}
	l2, err := Acquire(dir, me)
	if err != nil {
		t.Fatalf("after the guard: %v", err)
	}
	l2.Release()
}

// A guard started by a rank bound to one core (as mpirun binds up to 2
// ranks) has left that core by the time StartGuard returns: its start and
// its wake-ups are kept out of rank 0's timed collectives.
func TestGuardHasStartedAndLeftTheRanksCoreOnReturn(t *testing.T) {
	var online unix.CPUSet
	if err := unix.SchedGetaffinity(0, &online); err != nil || online.Count() < 2 {
		t.Skipf("needs 2 processors to choose from (%v)", err)
	}
	dir := t.TempDir()
	l, err := Acquire(dir, me)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	writeRunning(t, dir, "here", os.Getpid())
	// The guard is forked from this thread, and inherits its binding.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var one unix.CPUSet
	one.Set(firstCPU(online))
	if err := unix.SchedSetaffinity(0, &one); err != nil {
		t.Fatal(err)
	}
	defer unix.SchedSetaffinity(0, &online)
	w, err := StartGuard(os.Args[0], l, dir, "here", os.Getpid(), EarlyNaming{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	pid := guardOf(t, dir)
	defer func() {
		// The guard marks run.json as it ends: the dir goes only after it.
		w.Close()
		for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
			if s := ProcState(pid); s == "gone" || s == "Z" {
				return
			}
		}
	}()
	var got unix.CPUSet
	if err := unix.SchedGetaffinity(pid, &got); err != nil {
		t.Fatal(err)
	}
	if got.Count() < 2 {
		t.Errorf("the guard (pid %d) runs on %d processor(s) on StartGuard's return, want all %d of the job's", pid,
			got.Count(), online.Count())
	}
}

func firstCPU(s unix.CPUSet) int {
	for c := 0; ; c++ {
		if s.IsSet(c) {
			return c
		}
	}
}

// guardOf finds the pid of the guard process that watches dir.
func guardOf(t *testing.T, dir string) int {
	t.Helper()
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if len(args) > 2 && args[1] == GuardCommand && args[2] == dir {
			var pid int
			if _, err := fmt.Sscan(filepath.Base(filepath.Dir(p)), &pid); err == nil {
				return pid
			}
		}
	}
	t.Fatalf("no guard process watches %s", dir)
	return 0
}

// A rank 0 that its guard saw stopped until it ended, and that marked
// run.json with the others' failures but was killed before it could name
// itself, is named stopped by its guard; one that named itself, or was
// seen stopped long before its end, is left as it said.
func TestGuardAddsThatRankZeroWasStoppedToTheEnd(t *testing.T) {
	died := time.Now()
	for _, c := range []struct {
		name   string
		reason string
		seen   time.Time
		added  bool
	}{
		{"stopped to the end, unsaid", "signal SIGTERM from the launcher, after a rank failed on its own: rank 1: watchdog", died.Add(-time.Second), true},
		{"said by rank 0", "...; rank 0 on node1 (pid 42) did not run for 5.5 s", died.Add(-time.Second), false},
		{"seen stopped long before", "signal SIGTERM", died.Add(-time.Minute), false},
		{"never seen stopped", "signal SIGTERM", time.Time{}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			run := Record{Status: StatusFailed, Reason: c.reason, Host: "node1", PID: 42}
			var stderr strings.Builder
			if err := stoppedToTheEnd(&stderr, dir, run, died, c.seen, "T"); err != nil {
				t.Fatal(err)
			}
			got, err := ReadRecord(dir)
			const want = "rank 0 (node1, pid 42) was stopped (state T, seen by its guard 1.0 s before it ended): the others waited for it"
			if c.added {
				if err != nil || got.Reason != c.reason+"; "+want || !strings.Contains(stderr.String(), want) {
					t.Errorf("reason %q, said %q, %v; want the reason and a line to add %q", got.Reason, stderr.String(), err, want)
				}
				return
			}
			if err == nil || stderr.Len() > 0 {
				t.Errorf("wrote %+v, said %q; want nothing", got, stderr.String())
			}
		})
	}
}
