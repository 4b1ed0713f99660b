// Package cadence holds every deadline and cadence of a run in one place:
// how often a rank beats and run.json's heartbeat is rewritten, how long a
// silence or a stale heartbeat takes to count, how long the ending ranks
// linger, how long rank 0 waits for its guard. Each is a constant, so that
// the arithmetic the other packages build on it (EarlySilentAfter, ten
// beats; a lock's wait, half a beat) stays constant too.
//
// A test build shortens them: built with -tags rsag_fastcadence (as
// e2e/cadence_test.go builds the binary its deadline tests run), every
// cadence marked "scaled" below is FastBy times shorter, all by the one
// factor, so that the ratios the rules rest on hold in both builds
// (SilentAfter is three beats, StaleAfter six heartbeats, a guard looks at
// rank 0 once a beat). What is not scaled is a bound on the machine, not
// a wait a test sits through: how late a timer may wake before a process
// is said not to have run, how long a signal's last word may take within a
// launcher's grace. A product binary is never built with the tag: the
// Makefile's build and go build leave it off.
//
// timeout_s, the watchdog's deadline, is the config's (and takes
// fractions): a test shortens it with -set, not here.
package cadence

import "time"

// FastBy is how many times shorter the scaled cadences are in a build with
// -tags rsag_fastcadence.
const FastBy = 5

// Fast says this binary was built with -tags rsag_fastcadence.
const Fast = speedup != 1

// The real values of the scaled cadences: what a product binary uses. A
// test that runs a fast build finds its value as RealX / FastBy.
const (
	RealHeartbeatEvery   = 5 * time.Second
	RealBeatEvery        = time.Second
	RealWatchdogLinger   = time.Second
	RealSignalLinger     = 500 * time.Millisecond
	RealZeroSpeaksWithin = 5 * time.Second
	RealGuardStartWithin = 5 * time.Second
	RealSharedSettle     = 2 * time.Second
	RealSoakProgress     = 5 * time.Second
)

// Scaled: a test build's are FastBy times shorter.
const (
	// HeartbeatEvery is how often a live run rewrites run.json's heartbeat
	// and touches its lock (outdir.Record, outdir.Lock).
	HeartbeatEvery = RealHeartbeatEvery / speedup
	// StaleAfter, six missed heartbeats, is how long a reader waits before
	// it calls a "running" run.json dead, and a lock's record lapses
	// where flock cannot tell (outdir.Stale, outdir.Acquire).
	StaleAfter = 6 * HeartbeatEvery

	// BeatEvery is how often a rank beats into node-local memory and a
	// node's first live rank copies its node's beats into the output dir;
	// rank 0 (and its guard) look for stuck ranks once a beat.
	BeatEvery = RealBeatEvery / speedup
	// SilentAfter, three missed beats, is how old a beat may grow before
	// its rank is called silent: stopped, frozen, dead, or on a node that
	// is gone.
	SilentAfter = 3 * BeatEvery
	// StopLookEvery is how often a guard reads its rank 0's state in
	// /proc: once a beat, so a rank silent for SilentAfter is seen at
	// least twice meanwhile.
	StopLookEvery = BeatEvery

	// WatchdogLinger is how long a rank other than 0 whose deadline passed
	// waits before it exits, so that rank 0, whose deadline passes about
	// then too, reads every rank's heartbeat and names the hang before the
	// launcher ends the job.
	WatchdogLinger = RealWatchdogLinger / speedup
	// SignalLinger is how long a rank other than 0 that a signal ends
	// waits before it exits, so that rank 0 still finds it: less than a
	// launcher's grace between its SIGTERM and its SIGKILL (Open MPI's: a
	// second; Slurm's KillWait: 30 s).
	SignalLinger = RealSignalLinger / speedup
	// ZeroSpeaksWithin bounds how long a rank whose watchdog fired waits
	// for rank 0 to say the hang for every rank before it says its own.
	ZeroSpeaksWithin = RealZeroSpeaksWithin / speedup

	// GuardStartWithin bounds how long rank 0 waits for its guard to start
	// (milliseconds, unless the machine is loaded; a late guard still
	// does its job).
	GuardStartWithin = RealGuardStartWithin / speedup
	// SharedSettle is how long a rank that does not see rank 0's probe in
	// the output dir keeps looking (a shared file system's attribute
	// caches): only a failing check waits for it.
	SharedSettle = RealSharedSettle / speedup

	// SoakProgress is how often rank 0 says how far a soak has got, and
	// at most how often it checkpoints soak.csv.
	SoakProgress = RealSoakProgress / speedup
)

// Not scaled: bounds on the machine, the same in both builds.
const (
	// FrozenAfter is how late a beat or a watchdog's check may come before
	// this process is said not to have run (with a SIGCONT to prove it):
	// far more than a scheduler's delay on a loaded node.
	FrozenAfter = 2 * time.Second
	// SettleFor bounds rank 0's wait, on a signal, for the other ranks'
	// last beats: less than a launcher's grace, more than they take to
	// write them.
	SettleFor = 400 * time.Millisecond
	// LockSettle is how long a run without flock waits after writing its
	// lock record before it reads it back: longer than two runs starting
	// at once take between reading no record and writing theirs.
	LockSettle = 250 * time.Millisecond
	// AbortGrace bounds how long an ending process waits for its main
	// goroutine to abort the NCCL communicator.
	AbortGrace = 3 * time.Second
	// EndedWritesWithin bounds how long rank 0 (or its guard) waits for
	// the outputs a run ended early leaves (summary.json, junit.xml,
	// rsag.prom) to be written: milliseconds on a healthy file system; a
	// full disk or a stuck mount must not hold the job's end up.
	EndedWritesWithin = 500 * time.Millisecond
	// StopNoteWait is how long a late wake waits for the note of a
	// SIGCONT (internal/stopped): measured under 100 ms.
	StopNoteWait = 500 * time.Millisecond
)
