package e2e

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"rsag/coll"
	"rsag/internal/testkit/inmem"
	rsag "rsag/job"
	"rsag/mpibackend"
	"rsag/outdir"
)

// inproc runs rsag's job on np goroutine ranks of this test process
// (job.Main over an inmem world, its in-memory backend for whatever
// backend is asked) and returns what mpirun's run would: every rank's
// stdout and stderr, in rank order, and the job's exit code. It is for
// what a run's logic proves (refusals, the output dir's contract, the
// files a run writes); what only a process shows (signals, launch, a rank
// that really stops, several hosts) is mpirun's (STYLE.md, rule 20).
// Differences from mpirun: no guard beside rank 0, no signals caught, the
// header says backend inmem.
func inproc(t *testing.T, np int, limit time.Duration, args ...string) result {
	t.Helper()
	return inprocWith(t, np, inmem.Faults{}, limit, args...)
}

// inprocMPI is inproc whose backend refuses what MPI's refuses
// (mpibackend's Supports: float16, bfloat16, avg), in MPI's words, and
// lacks what it lacks (CUDA graphs, for the graph method): a run the MPI
// backend refuses before any collective is refused alike here.
func inprocMPI(t *testing.T, np int, limit time.Duration, args ...string) result {
	t.Helper()
	return inprocWith(t, np, inmem.Faults{Refusals: mpiRefusals}, limit, args...)
}

// mpiRefusals are the MPI backend's: its Supports reads only its tables of
// MPI's types and reductions, never MPI itself, and its type says whether
// it has CUDA graphs (coll.GraphTimer).
var mpiRefusals = &inmem.Refusals{Supports: (&mpibackend.Backend{}).Supports, NoGraphs: !hasGraphs(&mpibackend.Backend{})}

// hasGraphs says whether be can capture CUDA graphs.
func hasGraphs(be coll.Backend) bool {
	_, ok := coll.Find[coll.GraphTimer](be)
	return ok
}

// inprocWith is inproc with faults in the ranks' backend: what
// testdata/corrupt.c does to MPI, in memory (inmem.Flip).
func inprocWith(t *testing.T, np int, faults inmem.Faults, limit time.Duration, args ...string) result {
	t.Helper()
	return inprocWatching(t, np, faults, nil, limit, args...)
}

// inprocWatching is inprocWith that calls watch, when not nil, with all
// rank 0 has written to its stdout so far, at each of its writes and before
// the write returns: a test acts or looks at the moment a line comes (as
// mpirun's pipe shows it a moment later), while rank 0 waits. watch runs
// on rank 0's goroutine: it records, and the test asserts afterwards.
func inprocWatching(t *testing.T, np int, faults inmem.Faults, watch func(stdout string), limit time.Duration, args ...string) result {
	t.Helper()
	return inprocParts(t, faults, watch, limit, mpmdPart{np: np, args: args})
}

// mpmdPart is one part of an MPMD line (mpirun -np 1 ARGS : -np 1 -x
// VAR=value ARGS): the command line and the variables (mpirun's -x) of its
// ranks, which come after the earlier parts'.
type mpmdPart struct {
	np   int
	env  []string // KEY=value, over this process's environment
	args []string
}

// inprocEnv is inproc whose ranks have env (KEY=value) as mpirun -x gives
// it, over this process's environment: job.EnvWorld.
func inprocEnv(t *testing.T, np int, env []string, limit time.Duration, args ...string) result {
	t.Helper()
	return inprocParts(t, inmem.Faults{}, nil, limit, mpmdPart{np: np, env: env, args: args})
}

// inprocMPMD is inproc of an MPMD line: each part's ranks with their own
// command line and variables, in the part's order.
func inprocMPMD(t *testing.T, limit time.Duration, parts ...mpmdPart) result {
	t.Helper()
	return inprocParts(t, inmem.Faults{}, nil, limit, parts...)
}

// The goroutine ranks' world gives each rank its own variables.
var _ rsag.EnvWorld = (*inmem.World)(nil)

// inprocParts is inprocWatching of an MPMD line's parts.
func inprocParts(t *testing.T, faults inmem.Faults, watch func(stdout string), limit time.Duration, parts ...mpmdPart) result {
	t.Helper()
	ended, took := inprocRanks(t, faults, watch, limit, parts...)
	r := result{took: took, code: jobCode(ended)}
	var out, errs strings.Builder
	for rank, e := range ended {
		if e.How == "stuck" || e.How == "panicked" {
			t.Fatalf("rank %d %s (limit %v)\nstderr:\n%s", rank, e.How, limit, e.Stderr)
		}
		out.WriteString(e.Stdout)
		errs.WriteString(e.Stderr)
	}
	r.stdout, r.stderr, r.rawStderr = out.String(), unfold(errs.String()), errs.String()
	return r
}

// jobCode is the job's exit code as mpirun gives it: that of the rank
// that aborted the job, else the lowest rank's that is not 0.
func jobCode(ended []inmem.Ended) int {
	for _, e := range ended {
		if e.How == "aborted" {
			return e.Code
		}
	}
	for _, e := range ended {
		if e.Code != 0 {
			return e.Code
		}
	}
	return 0
}

// inprocRanks is inproc's run, rank by rank: the ranks of parts in turn.
func inprocRanks(t *testing.T, faults inmem.Faults, watch func(string), limit time.Duration, parts ...mpmdPart) ([]inmem.Ended, time.Duration) {
	t.Helper()
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	var hosts []string
	var partOf []mpmdPart // each rank's part
	for _, p := range parts {
		for range p.np {
			hosts, partOf = append(hosts, host), append(partOf, p)
		}
	}
	// Jobs of this process run side by side (t.Parallel): every rank of
	// every job is this process, and a run's node-local heartbeats are
	// keyed by its output dir as well as by host, process and second of
	// start (outdir.LocalBeatsOf), so two jobs started in one second keep
	// their beats apart. The tests give each job a dir of its own.
	started := time.Now()
	// What a rank leaves in node-local memory when it ends without its
	// last beat (an abort) is removed, as the end of the node's processes
	// would leave it to the next run of another second.
	// (Rank 0's output dir: ranks given another are refused before any
	// beat.)
	dir := flagOptions(parts[0].args).OutputDir
	defer os.RemoveAll(outdir.LocalBeatsOf(outdir.RunID(host, os.Getpid(), started.UTC().Format(time.RFC3339)), dir).Dir)
	ranks := inmem.NewRanks(hosts, faults, limit)
	for r, p := range partOf {
		for _, kv := range p.env {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				t.Fatalf("rank %d's variable %q is not KEY=value", r, kv)
			}
			ranks.World(r).Setenv(k, v)
		}
	}
	ended := ranks.Run(limit, func(w *inmem.World) int {
		o := flagOptions(partOf[w.Rank()].args)
		o.Version, o.Commit, o.Started = "inproc", "inproc", started
		o.Stdout, o.Stderr, o.Exit, o.World = w.Stdout(), w.Stderr(), w.Exit, w
		if watch != nil && w.Rank() == 0 {
			o.Stdout = &watched{to: w.Stdout(), watch: watch}
		}
		return rsag.Main(o)
	})
	return ended, time.Since(started)
}

// flagOptions reads a run's flags as rsag's main does (cli.go, whose own
// tests hold its refusals): -config, -output-dir, -backend, -history,
// -set and -overwrite. A command line it refuses is the run's FlagError.
func flagOptions(args []string) rsag.Options {
	var o rsag.Options
	fs := flag.NewFlagSet("rsag", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&o.ConfigPath, "config", "configs/ch7.toml", "")
	fs.StringVar(&o.OutputDir, "output-dir", "", "")
	fs.StringVar(&o.Backend, "backend", "", "")
	fs.StringVar(&o.History, "history", "", "")
	fs.BoolVar(&o.Overwrite, "overwrite", false, "")
	fs.Func("set", "", func(v string) error { o.Sets = append(o.Sets, v); return nil })
	o.FlagError = fs.Parse(args)
	if o.FlagError == nil && fs.NArg() > 0 {
		o.FlagError = fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if o.Backend != "" {
		o.Sets = append(o.Sets, "backend="+o.Backend)
	}
	return o
}

// watched is rank 0's stdout under inprocWatching.
type watched struct {
	mu    sync.Mutex // rank 0's goroutines may write at once
	to    io.Writer
	seen  strings.Builder
	watch func(string)
}

func (w *watched) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.to.Write(p)
	w.seen.Write(p)
	w.watch(w.seen.String())
	return n, err
}
