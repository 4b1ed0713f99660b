// Command rsag proves, on the ranks it is started on, that AllReduce equals
// ReduceScatter followed by AllGather, times both and measures their memory.
//
// main is thin: it reads the flags, hands them to job.Main (or to rsag
// compare or rsag report) and exits with the code it gets back. Only main
// exits.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"time"

	"rsag/compare"
	"rsag/job"
	"rsag/outdir"
	"rsag/report"
	"rsag/report/page"
)

// Set at build time with -ldflags "-X main.version=... -X main.commit=...".
var (
	version = "dev"
	commit  = "unknown"
)

// MPI, CUDA and NCCL keep per-thread state (the current context, dlerror),
// so every call stays on the main goroutine's OS thread.
func init() { runtime.LockOSThread() }

func main() {
	// rsag compare A/summary.json B/summary.json: no MPI, no GPU.
	if len(os.Args) > 1 && os.Args[1] == "compare" {
		os.Exit(compare.Main(os.Args[2:], os.Stdout, os.Stderr))
	}
	// rsag report DIR: a finished run's page and tables again, from its
	// summary.json; no MPI, no GPU.
	if len(os.Args) > 1 && os.Args[1] == "report" {
		os.Exit(page.Command(os.Args[2:], os.Stdout, os.Stderr))
	}
	// rsag suspects DIR: a locate run's suspects, one a line, for scripts
	// (slurm/healthcheck.sbatch); no MPI.
	if len(os.Args) > 1 && os.Args[1] == "suspects" {
		os.Exit(report.SuspectsCommand(os.Args[2:], os.Stdout, os.Stderr))
	}
	// The guard rank 0 starts beside itself (outdir.StartGuard): no MPI.
	if len(os.Args) > 1 && os.Args[1] == outdir.GuardCommand {
		os.Exit(outdir.Guard(os.Args[2:]))
	}
	started := time.Now()
	opts, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(job.ExitOK)
	}
	if err == nil && opts.version {
		fmt.Printf("rsag %s (commit %s, %s)\n", version, commit, runtime.Version())
		os.Exit(job.ExitOK)
	}
	// A bad flag is refused once MPI has started, so that every rank
	// agrees on it and it is said once.
	os.Exit(job.Main(job.Options{FlagError: err, ConfigPath: opts.configPath, OutputDir: opts.outputDir,
		Backend: opts.backend, Sets: opts.sets, Overwrite: opts.overwrite, Version: version, Commit: commit,
		Started: started, Stdout: os.Stdout, Stderr: os.Stderr, Exit: os.Exit}))
}
