// Command rsag proves, on the ranks it is started on, that AllReduce equals
// ReduceScatter followed by AllGather, times both and measures their memory.
//
// main is thin: a table of subcommands (rsag report, compare, suspects,
// history, check and the guard), each a function that returns an error carrying its
// exit status (internal/exitcode); anything else is a run, whose flags it
// reads and hands to job.Main. Only main exits.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"time"

	"rsag/baseline"
	"rsag/history"
	"rsag/internal/exitcode"
	"rsag/internal/fold"
	"rsag/job"
	"rsag/outdir"
	"rsag/report/page"
	"rsag/report/suspects"
)

// Set at build time with -ldflags "-X main.version=... -X main.commit=...".
var (
	version = "dev"
	commit  = "unknown"
)

// MPI, CUDA and NCCL keep per-thread state (the current context, dlerror),
// so every call stays on the main goroutine's OS thread.
func init() { runtime.LockOSThread() }

// command is a subcommand: rsag NAME args. None of them starts MPI or a GPU.
type command struct {
	name string
	run  func(args []string, stdout, stderr io.Writer) error
}

// commands are rsag's subcommands; the first argument picks one, and a
// first argument that is none of them starts a run.
var commands = []command{
	// A finished run's page and tables again, from its summary.json.
	// report and suspects keep returning their code (they print
	// their own messages, through termsafe); the table turns it into an
	// error.
	{"report", func(args []string, stdout, stderr io.Writer) error {
		return exitcode.Silent(page.Command(args, stdout, stderr))
	}},
	// B against A, case by case: rsag check -baseline A B.
	{"compare", baseline.Compare},
	// A locate run's suspects and which to drain (slurm/healthcheck.sbatch).
	{"suspects", func(args []string, stdout, stderr io.Writer) error {
		return exitcode.Silent(suspects.Command(args, stdout, stderr))
	}},
	// Runs over time: the history database's trends, and appending a run.
	{"history", history.Command},
	// A run against a baseline run or the history's last complete runs.
	{"check", baseline.Command},
	// The guard rank 0 starts beside itself (outdir.StartGuard).
	{outdir.GuardCommand, func(args []string, _, _ io.Writer) error { return outdir.Guard(args) }},
}

func main() {
	// Every line rsag says on stderr folds at the terminal's width (issue
	// 57); what it writes to files keeps a message on one line.
	stderr := fold.NewWriter(os.Stderr)
	if len(os.Args) > 1 {
		for _, c := range commands {
			if os.Args[1] == c.name {
				os.Exit(exitcode.Say(stderr, "rsag "+c.name, c.run(os.Args[2:], os.Stdout, stderr)))
			}
		}
	}
	os.Exit(run(os.Args[1:], stderr))
}

// run is an rsag run on this rank: its exit code.
func run(args []string, stderr io.Writer) int {
	started := time.Now()
	opts, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return job.ExitOK
	}
	if err == nil && opts.version {
		fmt.Printf("rsag %s (commit %s, %s)\n", version, commit, runtime.Version())
		return job.ExitOK
	}
	// A bad flag is refused once MPI has started, so that every rank
	// agrees on it and it is said once.
	return job.Main(job.Options{FlagError: err, ConfigPath: opts.configPath, OutputDir: opts.outputDir,
		History: opts.history, Backend: opts.backend, Sets: opts.sets, Overwrite: opts.overwrite, Version: version, Commit: commit,
		Started: started, Stdout: os.Stdout, Stderr: stderr, Exit: os.Exit})
}
