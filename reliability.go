package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"rsag/watchdog"
)

// More exit codes: the watchdog's, and 128 + the signal's number for a
// signal, as a shell reports a process killed by it.
const (
	exitWatchdog = 3
	exitSignal   = 128
)

// abortGrace bounds how long an ending process waits for the main goroutine
// to abort the NCCL communicator (it does so at its next device poll); a
// main goroutine blocked in MPI never gets there, and the process then ends
// without it: the driver releases the GPU when the process exits.
const abortGrace = 3 * time.Second

// ender ends the process from a goroutine other than main's, for the
// watchdog and for signals: the main goroutine may be blocked in a
// collective and cannot be waited for. It prints the reason, has rank 0's
// run.json say "failed", asks the backend to abort its communicator and
// exits with a non-zero code; mpirun or srun then end the other ranks. Only
// the first call does anything.
type ender struct {
	stderr io.Writer
	exit   func(int)

	mu         sync.Mutex
	who        string                 // "rank 1 (node7)", once MPI has started
	markFailed func(reason string)    // rank 0, once run.json exists
	abort      func() <-chan struct{} // once the backend can abort; nil channel: nothing to abort

	once    sync.Once
	ending  atomic.Bool
	aborted chan struct{}
}

func newEnder(stderr io.Writer) *ender {
	return &ender{stderr: stderr, exit: os.Exit}
}

func (e *ender) setWho(rank int, host string) {
	e.mu.Lock()
	e.who = fmt.Sprintf("rank %d (%s)", rank, host)
	e.mu.Unlock()
}

func (e *ender) setMarkFailed(f func(string)) { e.mu.Lock(); e.markFailed = f; e.mu.Unlock() }

func (e *ender) setAbort(f func() <-chan struct{}) { e.mu.Lock(); e.abort = f; e.mu.Unlock() }

// Ending reports whether the process is being ended; main then waits for
// it instead of exiting on its own.
func (e *ender) Ending() bool { return e.ending.Load() }

// end prints msg, records reason (msg with the rank when empty), aborts the
// backend and exits with code. It does not return.
func (e *ender) end(code int, msg, reason string) {
	e.once.Do(func() {
		e.ending.Store(true)
		e.mu.Lock()
		who, mark, abort := e.who, e.markFailed, e.abort
		e.mu.Unlock()
		line := msg
		if who != "" {
			line = who + ": " + msg
		}
		fmt.Fprintf(e.stderr, "rsag: %s\n", line)
		if reason == "" {
			reason = line
		}
		if mark != nil {
			mark(reason)
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
		e.exit(code)
	})
	select {} // another goroutine is ending the process
}

// waitForEnd is main's side: the process is being ended by another
// goroutine, which exits; main must not exit first with another code.
func (e *ender) waitForEnd() {
	for {
		time.Sleep(time.Hour)
	}
}

// catchSignals ends the process cleanly on SIGINT or SIGTERM (Ctrl-C, scancel,
// Slurm's time limit, mpirun ending the job because another rank failed).
func catchSignals(e *ender) {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		s := (<-c).(syscall.Signal)
		name := signalName(s)
		e.end(exitSignal+int(s), fmt.Sprintf("received %s: stopping (the results are marked failed); "+
			"a launcher sends it when the job is cancelled, hits its time limit, or another rank failed", name),
			"signal "+name)
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

// stallEnv makes one rank stall, to prove the watchdog: the value is
// "rank=1,phase=timing,size=65536,seconds=600" (size and op=all-reduce
// narrow it; without them the first step of the phase stalls). The rank
// sleeps once, on the main goroutine, at the first matching step. Debug
// only: nothing else reads it.
const stallEnv = "RSAG_DEBUG_STALL"

type stall struct {
	rank    int
	phase   string
	op      string // "" is any
	bytes   int64  // -1 is any
	seconds int
	done    bool
}

// parseStall reads RSAG_DEBUG_STALL; nil when it is unset.
func parseStall(v string) (*stall, error) {
	if v == "" {
		return nil, nil
	}
	s := &stall{rank: -1, bytes: -1, seconds: -1}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%s=%q: %s (e.g. %s=\"rank=1,phase=timing,size=65536,seconds=600\")",
			stallEnv, v, fmt.Sprintf(format, args...), stallEnv)
	}
	for _, kv := range strings.Split(v, ",") {
		k, val, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			return nil, bad("%q is not key=value", kv)
		}
		var err error
		switch k {
		case "rank":
			s.rank, err = strconv.Atoi(val)
		case "phase":
			s.phase = val
		case "op":
			s.op = val
		case "size":
			s.bytes, err = strconv.ParseInt(val, 10, 64)
		case "seconds":
			s.seconds, err = strconv.Atoi(val)
		default:
			return nil, bad("unknown key %q: use rank, phase, op, size, seconds", k)
		}
		if err != nil {
			return nil, bad("%s: %q is not a whole number", k, val)
		}
	}
	switch {
	case s.rank < 0:
		return nil, bad("rank is missing")
	case s.phase == "":
		return nil, bad("phase is missing (startup, contracts, timing, memory, results)")
	case s.seconds < 0:
		return nil, bad("seconds is missing")
	}
	return s, nil
}

// tracker is what the phases arm: the watchdog, and the debug stall.
type tracker struct {
	wd     *watchdog.Watchdog
	stall  *stall
	rank   int
	phase  string
	stderr io.Writer
	host   string
}

func (t *tracker) setPhase(name string) {
	t.phase = name
	t.wd.Phase(name)
}

func (t *tracker) Arm(op string, bytes int64) {
	t.wd.Arm(op, bytes)
	if s := t.stall; s != nil && !s.done && s.rank == t.rank && s.phase == t.phase &&
		(s.op == "" || s.op == op) && (s.bytes < 0 || s.bytes == bytes) {
		s.done = true
		fmt.Fprintf(t.stderr, "rsag: rank %d (%s): debug: %s: stalling before %s %s at %d bytes for %ds\n",
			t.rank, t.host, stallEnv, t.phase, op, bytes, s.seconds)
		time.Sleep(time.Duration(s.seconds) * time.Second)
	}
}

func (t *tracker) Kick() { t.wd.Kick() }
