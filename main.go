// Command rsag proves, on the ranks it is started on, that AllReduce equals
// ReduceScatter followed by AllGather, times both and measures their memory.
//
// main is thin: flags -> MPI -> config -> backend -> phases -> report -> exit
// code. Every step returns an error and only main exits.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"time"

	"rsag/compare"
	"rsag/config"
	"rsag/mpi"
	"rsag/watchdog"
)

// Set at build time with -ldflags "-X main.version=... -X main.commit=...".
var (
	version = "dev"
	commit  = "unknown"
)

// MPI, CUDA and NCCL keep per-thread state (the current context, dlerror),
// so every call stays on the main goroutine's OS thread.
func init() { runtime.LockOSThread() }

// Exit codes.
const (
	exitOK      = 0
	exitFailed  = 1 // a check failed or something broke
	exitBadArgs = 2 // bad flags or config
)

func main() {
	// rsag compare A/summary.json B/summary.json: no MPI, no GPU.
	if len(os.Args) > 1 && os.Args[1] == "compare" {
		os.Exit(compare.Run(os.Args[2:], os.Stdout, os.Stderr))
	}
	started := time.Now()
	opts, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(exitOK)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "rsag:", err)
		os.Exit(exitBadArgs)
	}
	if opts.version {
		fmt.Printf("rsag %s (commit %s, %s)\n", version, commit, runtime.Version())
		os.Exit(exitOK)
	}

	// SIGINT and SIGTERM end the run cleanly from here on (see ender).
	end := newEnder(os.Stderr)
	catchSignals(end)

	comm, err := mpi.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "rsag: starting MPI:", err)
		os.Exit(exitFailed)
	}
	end.setWho(comm.Rank(), comm.Host())
	// Every blocking step from here to MPI_Finalize has a deadline: the
	// default until the config's timeout_s is known.
	wd := watchdog.New(config.DefaultTimeoutS*time.Second, func(msg string) { end.end(exitWatchdog, msg, "") })
	wd.Start()
	j := &job{opts: opts, comm: comm, out: os.Stdout, stderr: os.Stderr, started: started, wd: wd, end: end,
		tr: &tracker{wd: wd, rank: comm.Rank(), host: comm.Host(), stderr: os.Stderr}}
	err = j.run()
	if end.Ending() {
		end.waitForEnd() // the watchdog or a signal is ending the process
	}
	if err == nil {
		wd.Arm("MPI finalize", -1)
		comm.Finalize()
		os.Exit(exitOK)
	}
	fmt.Fprintf(os.Stderr, "rsag: rank %d (%s): %v\n", comm.Rank(), comm.Host(), err)
	j.fail(err.Error())
	var shared *sharedError
	if !errors.As(err, &shared) {
		// Only this rank knows: the others may be waiting in a collective,
		// so end the whole job rather than let it hang.
		j.abortBackend()
		comm.Abort(exitFailed)
	}
	wd.Arm("MPI finalize", -1)
	comm.Finalize()
	os.Exit(shared.code)
}
