package watchdog

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"rsag/internal/cadence"
)

// ExitSignal + the signal's number is the exit code of a run a signal
// ended, as a shell reports a process killed by it.
const ExitSignal = 128

// abortGrace bounds how long an ending process waits for the main goroutine
// to abort the NCCL communicator (it does so at its next device poll); a
// main goroutine blocked in MPI never gets there, and the process then ends
// without it: the driver releases the GPU when the process exits.
const abortGrace = cadence.AbortGrace

// Ender ends the process from a goroutine other than main's, for the
// watchdog and for signals: the main goroutine may be blocked in a
// collective and cannot be waited for. It prints the reason, has rank 0's
// run.json say "failed", asks the backend to abort its communicator and
// exits with a non-zero code through the exit function main gave it (only
// main's os.Exit ends the process); mpirun or srun then end the other
// ranks. Only the first call does anything.
type Ender struct {
	stderr io.Writer
	exit   func(int)

	mu         sync.Mutex
	who        string                     // "rank 1 (node7)", once MPI has started
	markFailed func(reason string)        // rank 0, once run.json exists
	explain    func(signal string) string // rank 0: a signal's reason, with what is known of its cause
	atEnd      []func()                   // last, before exiting: releasing the output dir
	linger     time.Duration              // how long a rank a signal ends waits before it exits
	quiet      bool                       // a signal's line is left to rank 0 (SetQuietOnSignal)
	abort      func() <-chan struct{}     // once the backend can abort; nil channel: nothing to abort
	onEnd      []func(how string)         // first, with what ends the process: the last heartbeat
	settle     func() string              // rank 0, after a signal: what it learns from the others' ends
	verdict    func(code int, msg string) // rank 0: the run's last line, as the process exits
	outputs    func(code int)             // rank 0: what a run ended early leaves for other tools

	once    sync.Once
	ending  atomic.Bool
	aborted chan struct{}
	// leaving is 1 + the code the run already decided to exit with, once
	// it has (0 while it runs): a launcher that ends the job because
	// another rank exited first then only speeds the exit up.
	leaving atomic.Int64
}

// Leaving says the run has ended with code and is only shutting down: a
// signal from now on exits at once with that code, quietly.
func (e *Ender) Leaving(code int) { e.leaving.Store(int64(code) + 1) }

// NewEnder returns an Ender that prints to stderr and ends the process
// with exit (main's os.Exit).
func NewEnder(stderr io.Writer, exit func(int)) *Ender {
	return &Ender{stderr: stderr, exit: exit}
}

// SetWho names this process in every message, once MPI has started.
func (e *Ender) SetWho(rank int, host string) {
	e.mu.Lock()
	e.who = fmt.Sprintf("rank %d (%s)", rank, host)
	e.mu.Unlock()
}

// SetMarkFailed gives the function that marks the run failed (rank 0's
// run.json), once there is one.
func (e *Ender) SetMarkFailed(f func(string)) { e.mu.Lock(); e.markFailed = f; e.mu.Unlock() }

// SetExplain gives the function that, on rank 0, turns a signal's name
// into run.json's reason, with what is known of why it came (a rank that
// failed first). It must be quick: run.json waits for it.
func (e *Ender) SetExplain(f func(signal string) string) {
	e.mu.Lock()
	e.explain = f
	e.mu.Unlock()
}

// AtEnd adds a function that End calls last, just before the process
// exits (releasing the output dir's lock: the main goroutine may write
// there until the backend is aborted).
func (e *Ender) AtEnd(f func()) { e.mu.Lock(); e.atEnd = append(e.atEnd, f); e.mu.Unlock() }

// OnEnd adds a function that End calls first, with the message that ends
// the process (a rank's last heartbeat says how it ended).
func (e *Ender) OnEnd(f func(how string)) { e.mu.Lock(); e.onEnd = append(e.onEnd, f); e.mu.Unlock() }

// SetSettle gives rank 0 a function that a signal's End calls once
// run.json is marked and the signal said: it may wait a moment for what
// the other ranks leave as the same signal ends them, and returns what it
// learnt, which End prints ("" for nothing).
func (e *Ender) SetSettle(f func() string) { e.mu.Lock(); e.settle = f; e.mu.Unlock() }

// SetVerdict gives rank 0 the function that prints the run's last line,
// called with the exit code and the message that ends the process, just
// before it exits.
func (e *Ender) SetVerdict(f func(code int, msg string)) { e.mu.Lock(); e.verdict = f; e.mu.Unlock() }

// SetOutputs gives rank 0 the function that writes, once run.json is
// marked failed and its reason settled, the outputs that other tools read
// (summary.json, junit.xml, rsag.prom), so that they say why the run
// ended rather than keep the previous run's word. It must be bounded in
// time: the job's end waits for it.
func (e *Ender) SetOutputs(f func(code int)) { e.mu.Lock(); e.outputs = f; e.mu.Unlock() }

// SetLinger makes a rank that a signal ends wait d before it exits, so
// that rank 0, which looks at that moment for a rank that had already gone
// (the one whose end made the launcher signal the others), still finds
// every rank that the same signal ends.
func (e *Ender) SetLinger(d time.Duration) { e.mu.Lock(); e.linger = d; e.mu.Unlock() }

// SetQuietOnSignal leaves the line a signal ends this process with
// unsaid: rank 0 speaks for every rank, whose last heartbeat says it, so
// that a launcher's SIGTERM to 8,192 ranks prints a line, not 8,192.
func (e *Ender) SetQuietOnSignal() { e.mu.Lock(); e.quiet = true; e.mu.Unlock() }

// SetAbort gives the function that asks the backend to abort its
// communicator; its channel is closed once it has (nil: nothing to abort).
func (e *Ender) SetAbort(f func() <-chan struct{}) { e.mu.Lock(); e.abort = f; e.mu.Unlock() }

// Ending reports whether the process is being ended; main then waits for
// it instead of exiting on its own.
func (e *Ender) Ending() bool { return e.ending.Load() }

// End records reason (msg with the rank when empty) in run.json first, so
// that a launcher's kill soon after cannot leave it "running", then prints
// msg, writes rank 0's outputs (SetOutputs), aborts the backend, runs the
// AtEnd functions and exits with code.
// It does not return.
func (e *Ender) End(code int, msg, reason string) { e.end(code, msg, reason, false, false) }

// EndQuietly is End without msg's line: another process (rank 0, or its
// guard) says it for every rank, from this one's last heartbeat.
func (e *Ender) EndQuietly(code int, msg, reason string) { e.end(code, msg, reason, false, true) }

func (e *Ender) end(code int, msg, reason string, bySignal, unsaid bool) {
	e.once.Do(func() {
		e.ending.Store(true)
		e.mu.Lock()
		who, mark, atEnd, abort, linger, onEnd, settle, quiet, verdict := e.who, e.markFailed, e.atEnd, e.abort, e.linger, e.onEnd, e.settle, e.quiet, e.verdict
		outputs := e.outputs
		e.mu.Unlock()
		line := msg
		if who != "" {
			line = who + ": " + msg
		}
		if reason == "" {
			reason = line
		}
		for _, f := range onEnd {
			f(msg)
		}
		if mark != nil {
			mark(reason)
		}
		if !unsaid && (!bySignal || !quiet) {
			fmt.Fprintf(e.stderr, "rsag: %s\n", line)
		}
		if bySignal && settle != nil {
			if more := settle(); more != "" {
				fmt.Fprintf(e.stderr, "rsag: %s: hang: %s\n", who, more)
			}
		}
		// The reason is final: the outputs say it too, before the lock
		// (AtEnd) lets another run have the directory.
		if outputs != nil {
			outputs(code)
		}
		if abort != nil {
			if done := abort(); done != nil {
				select {
				case <-done:
					fmt.Fprintf(e.stderr, "rsag: %s: communicator aborted\n", who)
				case <-time.After(abortGrace):
					fmt.Fprintf(e.stderr, "rsag: %s: the communicator was not aborted within %v (the main thread is not waiting on the device); exiting without it\n", who, abortGrace)
				}
			}
		}
		for _, f := range atEnd {
			f()
		}
		if verdict != nil {
			verdict(code, msg)
		}
		if bySignal {
			time.Sleep(linger)
		}
		e.exit(code)
	})
	select {} // another goroutine is ending the process
}

// WaitForEnd is the main goroutine's side: the process is being ended by
// another goroutine, which exits; main must not exit first with another code.
func (e *Ender) WaitForEnd() {
	for {
		time.Sleep(time.Hour)
	}
}

// CatchSignals ends the process cleanly on SIGINT or SIGTERM (Ctrl-C,
// scancel, Slurm's time limit, mpirun ending the job because another rank
// failed).
func CatchSignals(e *Ender) {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		s := (<-c).(syscall.Signal)
		if code := e.leaving.Load(); code > 0 {
			e.exit(int(code - 1))
		}
		name := signalName(s)
		e.mu.Lock()
		explain := e.explain
		e.mu.Unlock()
		reason := "signal " + name
		if explain != nil {
			reason = explain(name)
		}
		e.end(ExitSignal+int(s), fmt.Sprintf("received %s: stopping (the results are marked failed); "+
			"a launcher sends it when the job is cancelled, hits its time limit, or another rank failed", name),
			reason, true, false)
	}()
}

func signalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return s.String()
}
