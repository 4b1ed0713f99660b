package outdir

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"rsag/internal/atomicfile"
	"rsag/internal/cadence"
	"rsag/internal/exitcode"
	"rsag/internal/fold"
)

// GuardCommand is the hidden first argument that makes rsag a run's guard
// (see StartGuard) instead of a run.
const GuardCommand = "__guard"

// StartGuard starts, beside rank 0 (pid, on host), a small process that
// outlives it: when rank 0 ends without marking run.json, killed outright
// (SIGKILL, the OOM killer, or mpirun, which on a second SIGTERM kills its
// ranks at once), the guard marks it failed. It shares the lock, so that no
// other run takes the directory before it has, and leaves the job's process
// group and session, so that what kills the ranks does not kill it. The
// returned pipe must stay open as long as rank 0 lives: its closing, which
// the kernel does however rank 0 ends, is the guard's cue.
//
// It returns once the guard has started (or after guardStartWithin): the
// guard is a whole rsag process, and its start (loading MPI's libraries,
// Go's runtime) takes milliseconds of a processor. Started beside rank 0 it
// inherits rank 0's binding, so without the wait that start lands on rank
// 0's core in the first timed case, and one sample there takes milliseconds
// (docs/performance-log.md, "The first case's tail").
//
// early says whether, and how, the guard names a stopped rank 0 early
// (stuck.go): rank 0 cannot, and the guard sees its process.
func StartGuard(exe string, lock *Lock, dir, host string, pid int, early EarlyNaming) (*os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	ready, started, err := os.Pipe()
	if err != nil {
		w.Close()
		return nil, err
	}
	defer ready.Close()
	cmd := exec.Command(exe, GuardCommand, dir, host, strconv.Itoa(pid), strconv.Itoa(int(early.Timeout/time.Millisecond)),
		strconv.FormatBool(early.End))
	cmd.Stdin = r
	cmd.Stdout = started
	// Rank 0's stderr: when rank 0 dies first, the guard says what it
	// found where rank 0 would have.
	cmd.Stderr = os.Stderr
	cmd.ExtraFiles = []*os.File{lock.f} // fd 3
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	started.Close()
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("starting the guard of %s: %w", RunFile, err)
	}
	// One byte, or the pipe's end should the guard fail at once; a guard
	// slow to start on a loaded machine still does its job later.
	_ = ready.SetReadDeadline(time.Now().Add(guardStartWithin))
	_, _ = ready.Read(make([]byte, 1))
	// Not waited for: it ends after this process does. Release keeps the
	// process from lingering as a zombie should this process live on.
	_ = cmd.Process.Release()
	return w, nil
}

// guardStartWithin bounds how long StartGuard waits for its guard to start.
const guardStartWithin = cadence.GuardStartWithin

// EarlyNaming is what a guard needs to name a stopped rank 0 early: the
// watchdog's timeout (for how long until it ends the job), and whether
// the job ends then (end_on_stuck_rank).
type EarlyNaming struct {
	Timeout time.Duration
	End     bool
}

// Guard is the guard's whole life (args: dir, host, pid, the watchdog's
// timeout in ms, end_on_stuck_rank): it waits for its
// stdin to close, then marks the run failed if run.json still says running
// for that pid, and releases the lock it shares (fd 3). Its error carries
// the process's exit status (internal/exitcode); it prints nothing: what
// it finds goes into run.json and, when rank 0 died first, rank 0's stderr.
func Guard(args []string) error {
	// Its own session has no terminal; a hang-up or Ctrl-C meant for the
	// job must not end it before it has done its one job.
	signal.Ignore(syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM, syscall.SIGPIPE)
	unbind()
	// Started: StartGuard waits for this byte before rank 0 goes on.
	_, _ = os.Stdout.Write([]byte{1})
	os.Stdout.Close()
	if len(args) != 5 {
		return exitcode.Silent(2)
	}
	pid, err := strconv.Atoi(args[2])
	ms, err2 := strconv.Atoi(args[3])
	end, err3 := strconv.ParseBool(args[4])
	if err != nil || err2 != nil || err3 != nil {
		return exitcode.Silent(2)
	}
	lock := os.NewFile(3, "lock")
	early := EarlyNaming{Timeout: time.Duration(ms) * time.Millisecond, End: end}
	// Its lines fold at the terminal's width, as rank 0's do (fold).
	if err := guard(os.Stdin, fold.NewWriter(os.Stderr), lock, args[0], args[1], pid, ProcState, early); err != nil {
		return exitcode.Silent(1)
	}
	return nil
}

// unbind lets the guard run on any processor this process may use: it
// inherits rank 0's binding, often one core, where rank 0 polls inside its
// timed collectives, and the few times the guard's runtime wakes belong
// elsewhere. The kernel keeps the mask within the job's cpuset and the
// processors online.
func unbind() {
	var all unix.CPUSet
	for c := 0; c < len(all)*64; c++ {
		all.Set(c)
	}
	_ = unix.SchedSetaffinity(0, &all)
}

// guard waits for stdin's end, then marks dir's run.json failed if rank 0
// (pid on host) left it running, and removes the lock file if lock is
// still it. Meanwhile it looks at rank 0's process (state, ProcState's):
// whether it saw it stopped.
func guard(stdin io.Reader, stderr io.Writer, lock *os.File, dir, host string, pid int, state func(pid int) string, early EarlyNaming) error {
	watch := watchStops(pid, state, StopLookEvery)
	done := make(chan struct{})
	looked := make(chan struct{})
	go func() {
		defer close(looked)
		watchRankZero(done, stderr, dir, host, pid, state, early)
	}()
	_, _ = io.Copy(io.Discard, stdin)
	died := time.Now() // or soon before: the pipe closes as rank 0 ends
	close(done)
	<-looked
	seenStopped, stoppedState := watch.end()
	defer func() {
		if lock != nil {
			if atomicfile.SameFile(lock, dir, LockFile) {
				atomicfile.Remove(dir, LockFile)
			}
			lock.Close()
		}
	}()
	run, err := ReadRecord(dir)
	if err != nil || run.PID != pid || run.Host != host {
		return nil // not the run this guard watches
	}
	if run.Status != StatusRunning {
		return stoppedToTheEnd(stderr, dir, run, died, seenStopped, stoppedState)
	}
	run.Status, run.Ended = StatusFailed, time.Now().UTC().Format(time.RFC3339)
	// What every rank was doing, from their heartbeats: rank 0 cannot say.
	id := RunID(run.Host, run.PID, run.Started)
	beats, unread := ReadBeats(dir, id)
	Merge(beats, LocalBeatsOf(id, dir).Read(id, host)) // rank 0's node's, fresher than its file
	now := time.Now()
	var silent time.Duration
	stop := ""
	if b, ok := beats[0]; ok && b.PID == pid && b.Ended == "" {
		silent, stop = silence(b, died, seenStopped, stoppedState)
	}
	run.Reason = KilledReason(host, pid, Notes(dir), silent, stop)
	// Rank 0 has ended (its pipe closed), though /proc may still show it
	// for a moment: the hang tells it as it was, stopped when its guard
	// saw it so, else gone.
	ended := func(p int) string {
		switch {
		case p != pid:
			return ProcState(p)
		case stop != "" && stoppedState != "":
			return stoppedState
		}
		return "gone"
	}
	h := Hang{World: run.WorldSize, Beats: beats, Now: now, Host: host, State: ended, Self: -1, Unread: unread}
	if text := h.Text(); text != "" {
		run.Reason += "; hang: " + text
		how := "rank 0 ended before it could say"
		if stop != "" {
			how = fmt.Sprintf("rank 0 was stopped (%s) and ended before it could say", stop)
		}
		fmt.Fprintf(stderr, "rsag: guard of rank 0 (%s, pid %d): %s; hang: %s\n", host, pid, how, text)
	}
	return WriteRecord(dir, run)
}

// stoppedToTheEnd adds to the reason of a run rank 0 marked that rank 0
// was stopped until it ended, when its guard saw it stopped within
// SilentAfter of its end and the reason does not say so: a launcher that
// wakes a stopped rank 0 to end the job (SIGCONT, SIGTERM) can kill it
// (SIGKILL) after it marked run.json with the others' failures, which
// waited for it, and before it could name itself.
func stoppedToTheEnd(stderr io.Writer, dir string, run Record, died, seen time.Time, state string) error {
	if run.Status != StatusFailed || seen.IsZero() || died.Sub(seen) > SilentAfter ||
		strings.Contains(run.Reason, fmt.Sprintf("rank 0 on %s (pid %d)", run.Host, run.PID)) ||
		strings.Contains(run.Reason, fmt.Sprintf("rank 0 (%s, pid %d) was stopped", run.Host, run.PID)) {
		return nil
	}
	said := fmt.Sprintf("rank 0 (%s, pid %d) was stopped (state %s, seen by its guard %.1f s before it ended): the others waited for it",
		run.Host, run.PID, state, died.Sub(seen).Seconds())
	run.Reason += "; " + said
	fmt.Fprintf(stderr, "rsag: guard of rank 0 (%s, pid %d): %s\n", run.Host, run.PID, said)
	return WriteRecord(dir, run)
}

// silence is how long rank 0, whose last beat is b, had been silent when
// it died, and the proof, if any, that it was stopped meanwhile (its
// guard saw it in state, at seen, zero for never): KilledReason's silent
// and stop. A long silence alone does not say it was stopped: on a
// loaded machine a rank can go as long without running (issue 33). It
// was stopped when its guard saw it stopped after its last beat, or when
// that beat says it did not run, with a SIGCONT to prove it (job's
// beater).
func silence(b Beat, died, seen time.Time, state string) (time.Duration, string) {
	frozen := time.Duration(b.Frozen * float64(time.Second))
	silent := max(died.Sub(b.Written), frozen)
	switch {
	case !seen.IsZero() && !seen.Before(b.Written):
		return silent, fmt.Sprintf("state %s, seen by its guard", state)
	case frozen > SilentAfter:
		return silent, fmt.Sprintf("and continued: it did not run for %.1f s, and a SIGCONT came meanwhile", frozen.Seconds())
	}
	return silent, ""
}

// KilledReason is run.json's reason for a run whose rank 0 was killed
// before it could say why, with what ranks that failed on their own said.
// silent is how long rank 0's heartbeat had stopped when it died; stop,
// when not "", the proof that it was stopped meanwhile (its guard saw its
// state T, or a SIGCONT came). Above SilentAfter, with a proof, rank 0
// was stopped first, and the reason leads with that, the others' failures
// (waiting for it) after; without one it is not called stopped: a loaded
// machine starves a process as long (issue 33), and the reason says only
// that it was silent.
func KilledReason(host string, pid int, notes []Note, silent time.Duration, stop string) string {
	if silent > SilentAfter && stop != "" {
		reason := fmt.Sprintf("rank 0 (%s, pid %d) was stopped (%s): it wrote no heartbeat for the last %.1f s "+
			"before it ended, and was killed (a launcher forcing the job down, as mpirun does) before it could mark the run; its guard marked it",
			host, pid, stop, silent.Seconds())
		if len(notes) > 0 {
			reason += "; the other ranks waited for it: " + NotesText(notes)
		}
		return reason
	}
	reason := fmt.Sprintf("rank 0 (%s, pid %d) ended before it could mark the run: killed outright (SIGKILL, the OOM killer, "+
		"or a launcher forcing the job down, as mpirun does on a second SIGTERM) or crashed", host, pid)
	if silent > SilentAfter {
		reason += fmt.Sprintf(", after it had written no heartbeat for %.1f s without being seen stopped (starved on a loaded machine, or frozen)", silent.Seconds())
	}
	reason += "; its guard marked it"
	if len(notes) > 0 {
		if silent > SilentAfter {
			reason += "; meanwhile, a rank failed, perhaps waiting for it: " + NotesText(notes)
		} else {
			reason += "; before that, a rank failed on its own: " + NotesText(notes)
		}
	}
	return reason
}

// StopLookEvery is how often a guard looks at its rank 0's process, to see
// whether it is stopped: a rank called silent after SilentAfter is seen
// at least twice meanwhile. One read of /proc a second costs nothing a
// timing sees.
const StopLookEvery = cadence.StopLookEvery

// stopWatch looks at a process's state until end: the last time it saw it
// stopped (T, or t: traced), and in which state. Its goroutine alone keeps
// them, and hands them over at the end.
type stopWatch struct {
	done chan struct{}
	seen chan stopSeen
}

type stopSeen struct {
	at    time.Time
	state string
}

// watchStops looks at pid's state once now, then every every until end.
func watchStops(pid int, state func(int) string, every time.Duration) *stopWatch {
	w := &stopWatch{done: make(chan struct{}), seen: make(chan stopSeen, 1)}
	var last stopSeen
	look := func() {
		if st := state(pid); st == "T" || st == "t" {
			last = stopSeen{time.Now(), st}
		}
	}
	look()
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-w.done:
				w.seen <- last
				return
			case <-t.C:
				look()
			}
		}
	}()
	return w
}

// end stops the watch and returns when it last saw the process stopped
// (zero: never), and in which state.
func (w *stopWatch) end() (time.Time, string) {
	close(w.done)
	last := <-w.seen
	return last.at, last.state
}

// watchRankZero names rank 0 early (stuck.go) when it is stopped or gone
// while other ranks wait for it, looking once a beat until done: in one
// line on rank 0's stderr and in run.json's "stuck". With early.End it
// then ends the job: it marks run.json failed, saying why, and kills rank
// 0 (SIGKILL: a stopped process cannot act on a gentler signal), so that
// the launcher ends the rest.
func watchRankZero(done <-chan struct{}, stderr io.Writer, dir, host string, pid int, state func(int) string, early EarlyNaming) {
	w := StuckWatch{Timeout: early.Timeout}
	t := time.NewTicker(BeatEvery)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		run, err := ReadRecord(dir)
		if err != nil || run.Status != StatusRunning || run.PID != pid || run.Host != host {
			continue
		}
		id := RunID(run.Host, run.PID, run.Started)
		beats, _ := ReadBeats(dir, id)
		Merge(beats, LocalBeatsOf(id, dir).Read(id, host))
		if b, ok := beats[0]; !ok || b.PID != pid {
			continue
		}
		h := Hang{World: run.WorldSize, Beats: beats, Now: time.Now(), Host: host, State: state, Self: -1}
		named := w.Look(h, func(r int) bool { return r == 0 })
		if len(named) == 0 {
			continue
		}
		ending := early.End && named[0].Known()
		named[0].Ending = ending
		line := StuckText(named)
		run.Stuck = MergeStuck(run.Stuck, named)
		if ending {
			line += "; ending the job now (end_on_stuck_rank): its guard kills rank 0"
			run.Status, run.Ended = StatusFailed, time.Now().UTC().Format(time.RFC3339)
			run.Reason = StuckReason(named)
		}
		fmt.Fprintf(stderr, "rsag: guard of rank 0 (%s, pid %d): %s\n", host, pid, line)
		if WriteRecord(dir, run) == nil && ending {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			return
		}
	}
}

// StuckReason is run.json's reason for a job ended early for a stuck
// rank (end_on_stuck_rank).
func StuckReason(named []Stuck) string {
	return StuckText(named) + "; the job was ended early for it (end_on_stuck_rank), not at timeout_s"
}
