// Package job is this rank's part of one rsag job, from MPI's start to its
// finalize: config -> backend -> output dir -> phases -> reports. Each step
// returns its result as a value and an error; Main turns the first error
// into the process's exit code, which main alone passes to os.Exit.
//
// Errors come in two kinds. A shared error is one every rank reached
// together (a bad config, a check that failed somewhere and was agreed on):
// every rank returns it, rank 0 prints it once, and every rank exits with
// its code. Any other error is this rank's alone: it prints it, naming
// itself, and aborts the job, since the other ranks may be waiting for it
// in a collective.
package job

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync/atomic"
	"time"

	"rsag/coll"
	"rsag/config"
	"rsag/internal/cadence"
	"rsag/internal/fold"
	"rsag/internal/stopped"
	"rsag/mpi"
	"rsag/ncclx"
	"rsag/outdir"
	"rsag/phase"
	"rsag/phases"
	"rsag/report"
	"rsag/watchdog"
)

// Exit codes.
const (
	ExitOK       = 0
	ExitFailed   = 1 // a check failed or something broke
	ExitBadArgs  = 2 // bad flags, config or environment
	ExitWatchdog = 3 // a step overran timeout_s
	// A signal ends the run with watchdog.ExitSignal + its number.
)

// Options are the command line's settings and what the binary knows of
// itself.
type Options struct {
	// FlagError is what was wrong with the command line, if anything: it is
	// refused on every rank alike once MPI has started.
	FlagError  error
	ConfigPath string
	OutputDir  string   // "": a new dir under outdir.DefaultRoot, made for this run
	History    string   // -history: the history database the run appends itself to
	Backend    string   // "" leaves it to the config
	Sets       []string // -set overrides, in order; -backend comes last as backend=...
	Overwrite  bool     // replace the results of an earlier run in OutputDir

	Version, Commit string
	Started         time.Time
	Stdout, Stderr  io.Writer
	// Exit ends the process; the watchdog and the signal handler call it
	// from their own goroutines, since the main one may be blocked.
	Exit func(code int)
	// World, when set, is this rank's world, already started, and the
	// rank is not the whole process: goroutine ranks of a test, one
	// process for the job. nil starts MPI's, as the binary does. A rank
	// that is not its process catches no signal, starts no guard (which
	// re-execs the binary) and leaves the process's settings alone; its
	// Exit must end only the rank, and its World's Abort every rank.
	World World
}

// session is what every step of a run needs, fixed once MPI has started.
type session struct {
	opts Options
	comm World
	// process: this rank is its whole process (MPI's world), and may
	// catch signals, start the guard and keep process-wide state.
	process bool
	pid     int // this rank's process, in heartbeats, run.json and the lock
	// beats is this rank's heartbeat writer, once the run has started.
	beats atomic.Pointer[beater]
	// async is the backend's word on its own errors (NCCL's
	// ncclCommGetAsyncError), which each beat carries; nil on MPI.
	async coll.AsyncReporter
	wd    *watchdog.Watchdog
	tr    *watchdog.Steps
	end   *watchdog.Ender
	out   io.Writer // rank 0's tables and progress; nothing elsewhere

	hostsOf []string        // every rank's host, once gathered
	cpusOf  []phase.CPUMask // every rank's processors, once gathered
	agreed  bool            // the first agreement has begun
	// noteDir is the output dir once it is this run's: where a rank that
	// fails on its own leaves rank 0 a note (read from the watchdog's
	// goroutine too).
	noteDir atomic.Pointer[string]
	// newRunDir: no -output-dir was given, and OutputDir is the new one
	// rank 0 made for this run (chooseOutputDir).
	newRunDir bool
	// phaseSeconds are how long each phase that ran took on this rank.
	phaseSeconds []report.PhaseTime
	// history is rank 0's history database, checked: the run appends
	// itself there once it has ended ("" for none).
	history string
	// ended is what rank 0 writes when the run is ended early (ended.go).
	ended endedRun
	// endOnStuck is end_on_stuck_rank: rank 0 (or its guard) ends the job
	// once a rank is known stopped or gone (watchStuck).
	endOnStuck bool
	// ncclOptions are the config's asks of the NCCL backend (gpu.sharing);
	// gpuShared is coll.SharedGPUNote of every rank's GPU, on rank 0.
	ncclOptions ncclx.Options
	gpuShared   string
}

// Main runs rsag on this rank and returns the process's exit code.
func Main(o Options) int {
	process := o.World == nil
	// What a rank says on stderr folds at the terminal's width (issue 57);
	// the outputs are given the messages themselves, never what was
	// printed, and keep them on one line.
	o.Stderr = fold.NewWriter(o.Stderr)
	if process {
		setUpProcess()
	}
	end := watchdog.NewEnder(o.Stderr, o.Exit)
	startup := config.StartupTimeout(o.Sets)
	comm := o.World
	if process {
		// SIGINT and SIGTERM end the run cleanly from here on.
		watchdog.CatchSignals(end)
		c, err := startMPI(end, startup)
		if err != nil {
			fmt.Fprintln(o.Stderr, "rsag: starting MPI:", err)
			return ExitFailed
		}
		comm = c
	}
	return run(o, comm, end, startup, process)
}

// setUpProcess sets what a rank that is the whole process sets for it,
// before MPI starts.
func setUpProcess() {
	// mpirun binds each rank to one core, and Go then runs one goroutine
	// at a time: its monitor thread hands the rank's only scheduler slot
	// away whenever the main goroutine sits in a cgo call (every MPI and
	// NCCL call), and the handover lands on the core the rank polls from.
	// Measured on 2 ranks at 1 KiB: up to 0.35 us more per AllReduce and
	// bimodal, against 0.03 us with two slots (docs/performance-log.md).
	if runtime.GOMAXPROCS(0) < 2 {
		runtime.GOMAXPROCS(2)
	}
	// A SIGCONT is the proof that this process was stopped (SIGSTOP) and
	// woken; one that comes before anything listens is lost, and a stopped
	// rank 0 then blamed the ranks that waited for it (issue 57, item 4).
	stopped.Watch()
}

// run is Main once the world has started.
func run(o Options, comm World, end *watchdog.Ender, startup time.Duration, process bool) int {
	end.SetWho(comm.Rank(), comm.Host())
	// Every blocking step from here to MPI_Finalize has a deadline: the
	// start-up's until the config's timeout_s is known. A rank whose
	// deadline passes fails on its own: it leaves rank 0 a note first.
	var s *session
	wd := watchdog.New(startup, func(msg string) {
		// Rank 0 names every rank's part, from their heartbeats.
		if comm.Rank() == 0 {
			msg = s.withHang(msg)
		}
		if b := s.beats.Load(); b != nil {
			b.endAs(msg, true) // its last beat holds the step that overran
		}
		s.leaveNote(msg)
		if comm.Rank() != 0 && s.beats.Load() != nil {
			// Rank 0 names the hang once, from every rank's heartbeat, and
			// its deadline passes about now too (it may wait one step
			// later than this rank): exiting at once would let the
			// launcher kill it first (seen on 16 ranks).
			time.Sleep(watchdogLinger)
			if !s.speaksForAll() {
				// Rank 0 (or its guard) says it for every rank: a hang
				// at 8,192 ranks is a line, not 8,192.
				end.EndQuietly(ExitWatchdog, msg, "")
			}
			// Rank 0 is silent (stopped, frozen or dead) and this rank
			// speaks instead: it names every rank's part as rank 0 would.
			// Rank 0's guard's line may come too late on a loaded
			// machine, or be lost as the launcher ends the job.
			msg = s.withHang(msg)
		}
		end.End(ExitWatchdog, msg, "")
	})
	s = &session{opts: o, comm: comm, wd: wd, end: end, out: io.Discard, process: process, pid: os.Getpid(),
		tr: watchdog.NewSteps(watchdog.NewTracker(wd))}
	wd.Start()
	if !process {
		// The process outlives this rank: nothing of it may fire later.
		defer wd.Stop()
		defer s.forgetBeats()
	}
	if comm.Rank() == 0 {
		s.out = report.Terminal(o.Stdout) // prose folded to the terminal's width
		end.SetVerdict(s.printEndedVerdict)
	} else {
		// The launcher's signal reaches every rank at once: the others stay
		// a moment, so that rank 0 does not take them for the rank that
		// ended first (see explainSignal).
		end.SetLinger(signalLinger)
	}
	var st state
	err := s.execute(&st)
	if end.Ending() {
		end.WaitForEnd() // the watchdog or a signal is ending the process
	}
	if err == nil {
		s.endBeats(fmt.Sprintf("exit %d", ExitOK))
		end.Leaving(ExitOK)
		st.releaseLock(o.Stderr)
		s.finalize()
		return s.appendHistory(&st, ExitOK, nil) // and the verdict, last
	}
	var sh *sharedError
	if errors.As(err, &sh) {
		// Every rank has it: said once, by rank 0.
		if comm.Rank() == 0 {
			fmt.Fprintf(o.Stderr, "rsag: %v\n", err)
		}
		st.log.fail(err.Error())
		s.printEnd(report.Rows{}, nil, err, st.log)
		s.endBeats(fmt.Sprintf("exit %d: %v", sh.code, err))
		end.Leaving(sh.code)
		st.releaseLock(o.Stderr)
		s.removeMadeTogether(&st)
		// Rank 0 adds the failed run to the history before MPI_Finalize,
		// where the other ranks wait for it: once one of them exits
		// non-zero the launcher ends the rest (Open MPI after a second,
		// srun --kill-on-bad-exit at once), and the run was lost (1 of 3
		// clean make tests). A passing run's ranks exit 0, and rank 0 may
		// wait out another writer's lock after them.
		code := s.appendHistory(&st, sh.code, err) // and the verdict, last
		s.finalize()
		return code
	}
	fmt.Fprintf(o.Stderr, "rsag: rank %d (%s): %v\n", comm.Rank(), comm.Host(), err)
	st.log.fail(fmt.Sprintf("rank %d (%s): %v", comm.Rank(), comm.Host(), err))
	s.printEnd(report.Rows{}, nil, err, st.log)
	s.leaveNote(err.Error())
	s.endBeats(fmt.Sprintf("exit %d: %v", ExitFailed, err))
	st.releaseLock(o.Stderr)
	st.removeMade()
	s.appendHistory(&st, ExitFailed, err) // rank 0's failure: run.json says failed; and the verdict, last
	// Only this rank knows: the others may be waiting in a collective, so
	// end the whole job rather than let it hang.
	st.abortBackend()
	if aerr := comm.Abort(ExitFailed); aerr != nil {
		fmt.Fprintf(o.Stderr, "rsag: rank %d (%s): %v\n", comm.Rank(), comm.Host(), aerr)
	}
	return ExitFailed
}

// startMPI starts MPI within timeout. MPI_Init waits for every process of
// the job to join it, and one that never will (it exited first, as an MPMD
// part that is not rsag may; its node never started it) would keep this
// one waiting for ever, silently: the watchdog, which names ranks and
// hosts, can only start once MPI has. When the deadline passes, the
// process says what it waited for and ends itself, non-zero; the launcher
// then ends the rest of the job.
func startMPI(end *watchdog.Ender, timeout time.Duration) (*mpi.Comm, error) {
	start := time.Now()
	timer := time.AfterFunc(timeout, func() {
		end.End(ExitWatchdog, startupMessage(time.Since(start)), "")
	})
	comm, err := mpi.Start()
	if !timer.Stop() {
		end.WaitForEnd() // the deadline passed as MPI_Init returned: the timer is ending the process
	}
	return comm, err
}

// startupMessage says what a start-up that overran waited for, naming this
// process as its launcher knows it, since MPI cannot yet.
func startupMessage(waited time.Duration) string {
	who := "this process"
	for _, v := range [][2]string{{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"}, {"PMIX_RANK", ""}, {"PMI_RANK", "PMI_SIZE"}, {"SLURM_PROCID", "SLURM_NTASKS"}} {
		if rank := os.Getenv(v[0]); rank != "" {
			who = "rank " + rank
			if size := os.Getenv(v[1]); v[1] != "" && size != "" {
				who += " of " + size
			}
			break
		}
	}
	host, _ := os.Hostname()
	return fmt.Sprintf("MPI start-up: waited %v for the other ranks of the job to join MPI_Init (%s, on %s); "+
		"a process of the job exited before it or was never started (an MPMD part that is not rsag, a wrapper that "+
		"exits first, a node that failed to start it): ending the job. The deadline is startup_timeout_s or timeout_s when -set gives it, else %d s",
		waited.Round(100*time.Millisecond), who, host, config.DefaultTimeoutS)
}

// finalize shuts MPI down, under the watchdog.
func (s *session) finalize() {
	s.wd.Arm("MPI finalize", -1)
	if err := s.comm.Finalize(); err != nil {
		fmt.Fprintf(s.opts.Stderr, "rsag: rank %d (%s): %v\n", s.comm.Rank(), s.comm.Host(), err)
	}
}

// signalLinger is how long a rank other than 0 that a signal ends waits
// before it exits: far more than rank 0 takes to look (milliseconds, even
// on a loaded node), less than a launcher's grace between its SIGTERM and
// its SIGKILL (Open MPI's: a second; Slurm's KillWait: 30 s).
const signalLinger = cadence.SignalLinger

// watchdogLinger is how long a rank other than 0 whose deadline passed
// waits before it exits, so that rank 0, whose deadline passes about then
// too, can read every rank's heartbeat and name the hang before the
// launcher ends the job: far more than the milliseconds rank 0 takes,
// a small part of any timeout_s.
const watchdogLinger = cadence.WatchdogLinger

// state is what a run holds that the end of Run must release or mark: the
// backend to abort, the run.json to mark failed and the output dir's lock.
// Nothing else is kept between steps; results pass from step to step as
// values.
type state struct {
	backend coll.Backend
	log     *runLog         // rank 0's, once the output dir is ours
	lock    *outdir.Lock    // rank 0's, from the output-dir check to the end
	made    []string        // the directories this rank made for the output dir (outdir.MakeDir)
	sum     *report.Summary // rank 0's, once the results are written: the verdict line's
}

// removeMade removes, in a run refused before it wrote run.json, the
// directories this rank made for it, while they are empty: a refusal
// leaves nothing behind. (Called after the lock is released.)
func (st *state) removeMade() {
	if st.log == nil {
		outdir.RemoveMade(st.made)
	}
}

// removeMadeTogether removes the directories this rank made for the
// output dir once every rank has let go of it: the rank that made a
// directory is not always the one with files in it (rank 0's probe and
// lock), and rmdir(2) fails on a directory that still holds them, leaving
// it behind (seen with ranks 0 and 1 on one node). Every rank ends a
// refusal here, so the barrier is one more collective of a run that
// agreed to stop.
func (s *session) removeMadeTogether(st *state) {
	s.wd.Arm("ranks letting go of the output dir", -1)
	if err := s.comm.Barrier(); err != nil {
		fmt.Fprintf(s.opts.Stderr, "rsag: rank %d (%s): %v\n", s.comm.Rank(), s.comm.Host(), err)
		return
	}
	st.removeMade()
}

// releaseLock releases the output dir, once run.json is final.
func (st *state) releaseLock(stderr io.Writer) {
	if err := st.lock.Release(); err != nil {
		fmt.Fprintf(stderr, "rsag: rank 0: releasing the output dir: %v\n", err)
	}
}

func (st *state) abortBackend() {
	if a, ok := st.backend.(coll.Aborter); ok {
		a.Abort()
	}
}

// phase names the phase the next blocking steps belong to.
func (s *session) phase(name string) { s.tr.SetPhase(name) }

func (s *session) printf(format string, args ...any) { fmt.Fprintf(s.out, format, args...) }

// execute is the whole job on this rank.
func (s *session) execute(st *state) error {
	s.phase("startup")
	if err := s.agree(s.opts.FlagError, ExitBadArgs, "bad command line (see rsag -h)"); err != nil {
		return err
	}
	cfg, err := s.loadConfig()
	if err != nil {
		return shared(ExitBadArgs, err)
	}
	s.wd.SetTimeout(cfg.Timeout())
	s.endOnStuck = cfg.EndOnStuckRank
	s.ncclOptions = ncclx.Options{ShareGPU: cfg.GPU.Sharing}
	if err := s.checkEnvironment(); err != nil {
		return err
	}
	if err := s.checkHistory(cfg); err != nil {
		return err
	}
	ran := phase.Enabled(cfg)
	ran.RankFolder = s.comm.Size() > cfg.RankFolderAbove
	if err := s.chooseOutputDir(st); err != nil {
		return err
	}
	if err := s.checkPaths(cfg, ran); err != nil {
		return err
	}
	backendName, err := s.chooseBackend(cfg.Backend)
	if err != nil {
		return err
	}
	be, err := s.openBackend(backendName)
	if err != nil {
		return err
	}
	st.backend = be
	defer be.Close()
	s.async, _ = coll.Find[coll.AsyncReporter](be)
	watched := phases.Watch(be, s.tr)
	s.end.SetAbort(requestAbort(be))
	infos, err := s.gatherInfos(be)
	if err != nil {
		return err
	}
	s.gpuShared = coll.SharedGPUNote(infos)
	w, err := s.plan(cfg)
	if err != nil {
		return err
	}
	s.printHeader(be.Info(), infos, w.groups)
	if err := s.preflight(w, be); err != nil {
		return err
	}
	if err := s.checkMetricsDir(cfg); err != nil {
		return err
	}
	// Every other input is answered: only now is the output dir made (and
	// checked, locked and surveyed), so that no refusal before leaves one.
	earlier, err := s.checkOutputDir(st)
	if err != nil {
		return err
	}
	// From here the run writes into the output dir, and run.json says how
	// far it got; a run ended early says why in its other outputs too.
	s.prepareEnded(cfg, infos, w)
	if st.log, err = s.startRunLog(backendName, earlier, ran, st.lock); err != nil {
		return err
	}
	s.pointLatest()
	if err := s.startBeats(); err != nil {
		return err
	}
	rows, phaseErr := s.runPhases(w, watched)
	var shErr *sharedError
	if phaseErr != nil && !errors.As(phaseErr, &shErr) {
		return phaseErr
	}
	s.phase("results")
	sum, err := s.writeResults(cfg, w, rows, ran, infos)
	if err != nil {
		return err
	}
	st.sum = sum
	if phaseErr == nil {
		phaseErr = s.gate(cfg, sum)
	}
	// Suspects are a finding, not a failure: the run completes, and the
	// gate, when asked for, sets the exit status alone.
	// run.json lists them whatever else failed: a health check reading it
	// must learn of a suspect beside a failed gate or contract.
	if sum != nil {
		st.log.suspects(report.SuspectTexts(sum.Locate))
	}
	var suspectErr error
	if phaseErr == nil {
		suspectErr = s.suspectGate(cfg, sum)
	}
	status, reason := outdir.StatusComplete, ""
	if phaseErr != nil {
		status, reason = outdir.StatusFailed, phaseErr.Error()
	}
	// Last: every rank's files and the combined ones are in place. With a
	// failed check, every file is written too, the failed checks marked
	// False; the run as a whole failed, and run.json says why.
	if err := s.agreeOnWriting(s.writeReport(cfg, sum, ran, status, reason, st.log)); err != nil {
		return err
	}
	if phaseErr != nil {
		if s.comm.Rank() == 0 {
			s.printf("%s", locateLine(sum)) // the suspects are found even when the run failed
		}
		return phaseErr
	}
	// Only now, with run.json final: the seed's closing lines.
	s.printEnd(rows, sum, nil, st.log)
	return suspectErr
}
