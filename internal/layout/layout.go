// Package layout is rsag's package layout in one place: every package, its
// job and exactly the rsag packages it imports (Packages), and the rules
// that no import may break (Rules). Its test compares them with what
// `go list` says the code imports, and writes the table of
// docs/ARCHITECTURE.md from Packages, so that the document, the table and
// the code cannot drift apart.
//
// Only a package's own imports count, not its tests': a test may reach
// further (report's tests run the real soak to get faults to write).
package layout

import (
	"fmt"
	"slices"
	"strings"
)

// Package is one of rsag's packages: its path inside the module ("main" for
// the command at the root), what it does, and every rsag package its
// non-test files import, no more and no fewer.
type Package struct {
	Path    string
	Job     string
	Imports []string
}

// Packages are rsag's packages, top down: a product package imports only
// packages listed after it. The test-only packages come last and are
// exempt from the order (a checker main may use any package), though not
// from Rules.
var Packages = []Package{
	{"main", "`main.go`, `cli.go`: reads the flags, dispatches the subcommands from one commands table (`report`, `compare`, `suspects`, `history`, `check`, the guard), hands the rest to `job.Main`; only it exits. Built with `-tags rsag_testphase` it also links the test-only echo phase (`testphase.go`)",
		[]string{"baseline", "config", "history", "internal/exitcode", "internal/fold", "internal/testkit/echophase", "job", "outdir", "report/page", "report/suspects"}},
	{"job", "this rank's part of one rsag job over its `World` (MPI's, or goroutine ranks in a test): MPI's start, the agreed inputs, the backend, the output dir, the registered phases through one wrapper (`job/phases.go`), the outputs, run.json",
		[]string{"coll", "config", "history", "internal/atomicfile", "internal/cadence", "internal/fold", "internal/rankset", "internal/stopped", "mpi", "mpibackend", "ncclx", "outdir", "phase", "phases", "report", "report/page", "report/plot", "watchdog"}},
	{"baseline", "the one judge of a slower run, `rsag check -baseline` and `rsag compare A B` its two front-ends: a run's cases against a baseline run or a history's last runs of its kind, judged against their spread from run to run (inconclusive when it cannot be), the verdict recorded in the history",
		[]string{"coll", "history", "internal/exitcode", "internal/fold", "internal/quantile", "internal/termsafe", "outdir", "report", "report/page"}},
	{"history", "`rsag history`: a SQLite database of finished runs (a run appends itself with -history), each case's median over them and each node's record as a suspect, as tables and a page",
		[]string{"coll", "internal/exitcode", "internal/quantile", "outdir", "report", "report/page", "report/plot", "report/runfile"}},
	{"report/suspects", "`rsag suspects DIR`: a complete locate run's suspects and which to drain (the rule: figure beyond the healthy spread by a margin, from a step that could judge, not the fabric), as JSON, NUL-separated fields or escaped lines",
		[]string{"internal/termsafe", "outdir", "report", "report/runfile"}},
	{"phase", "the phase contract and registry: one file per phase (contracts, timing, memory, numerics, soak, locate) that registers its name, order, config switch, preparation, run and part of the summary; what a phase decides from its rows (the locate verdict) lives beside it",
		[]string{"coll", "config", "internal/quantile", "internal/schedstat", "locate", "phases", "report"}},
	{"report/page", "`report.html`, self-contained, from the Summary; `rsag report DIR`",
		[]string{"coll", "internal/atomicfile", "internal/termsafe", "model", "outdir", "report", "report/plot", "report/runfile"}},
	{"report/runfile", "the one reader of a finished run's summary.json and run.json (regular files, bounded sizes, the summary checked), for rsag report, compare, check, history and suspects",
		[]string{"internal/regularfile", "outdir", "report"}},
	{"report/plot", "the figures, PNG and SVG, from the report's statistics",
		[]string{"coll", "internal/atomicfile", "model", "report"}},
	{"report", "rows (the CSVs' columns), the Summary (summary.json), tables, statistics; the one list of outputs (`report.Register`); it writes what it is given and decides nothing of a phase's",
		[]string{"coll", "internal/atomicfile", "internal/fold", "internal/quantile", "internal/rankset", "internal/termsafe", "model"}},
	{"config", "the TOML config: strict keys, bounds, `-set`, resolved once into `coll.Sweep`s and the phases' specs",
		[]string{"coll", "internal/regularfile", "locate", "phases"}},
	{"phases", "the experiments' runs: contracts, timing, memory, numerics, the soak and its diagnosis, the hierarchy's groups and contracts, the locate phase's steps; no C",
		[]string{"coll", "internal/cadence", "internal/quantile", "internal/schedstat", "locate"}},
	{"model", "the Hockney fit t(n) = α + n/B, the crossover, where the decomposition's time goes",
		[]string{"coll"}},
	{"locate", "which node, link or rank is slow: the round-robin and sampled schedules of pairs, and the solver over their figures (no backend, tested on synthetic clusters)",
		[]string{"internal/quantile"}},
	{"outdir", "the output dir's contract: run.json (`outdir.Record`), the lock, the shared-dir probe, `-overwrite`'s manifest, notes, each rank's heartbeat and what a hang's heartbeats say, the guard, the checks before a run makes anything, `results/latest`",
		[]string{"internal/atomicfile", "internal/cadence", "internal/exitcode", "internal/fold", "internal/rankset"}},
	{"mpibackend", "`coll.Backend` over MPI, in host memory",
		[]string{"coll", "internal/hostmem", "internal/memlimit", "mpi"}},
	{"ncclx", "`coll.Backend` over NCCL and the CUDA driver, dlopen'd (no headers)",
		[]string{"coll"}},
	{"mpi", "rsag's small, checked MPI API (cgo over MPI_COMM_WORLD, and gompi)",
		nil},
	{"watchdog", "a deadline on every blocking step; each rank's step in memory, kept with atomic stores; the ender of a run on a signal",
		[]string{"internal/cadence", "internal/stopped"}},
	{"coll/colltest", "the conformance suite every backend passes",
		[]string{"coll"}},
	{"internal/hostmem", "what the host-memory backends share: a rank's buffers and their accounting (`Heap`), fills, the monotonic clock",
		[]string{"coll"}},
	{"coll", "the contract at the bottom: element types and ops, `Backend` and every optional ability, the collective and timed-mode records, `Case`, `Sweep`, the soak's `StepFault`",
		nil},
	{"internal/atomicfile", "the one way into a file in an output dir: never through a link, never half written", nil},
	{"internal/exitcode", "a subcommand's exit status as an error, which only main turns into `os.Exit`", nil},
	{"internal/layout", "this table and its rules; its test holds the code and this document to them", nil},
	{"internal/memlimit", "the memory cgroup limit that bounds this process", nil},
	{"internal/quantile", "order statistics by numpy's default method", nil},
	{"internal/rankset", "a set of ranks in bounded words: \"1-7,10-1023\"", nil},
	{"internal/regularfile", "an input file that must be a regular file of a bounded size", nil},
	{"internal/stopped", "whether this process was stopped and continued", []string{"internal/cadence"}},
	{"internal/termsafe", "the one path by which text from a file reaches a terminal", nil},
	{"internal/fold", "the one way a line is folded to the terminal's 120 columns (continuations indented by two), and unfolded", nil},
	{"internal/schedstat", "how long this thread sat runnable but not running (the kernel's run_delay): whether a rank waited for a processor", nil},
	{"internal/cadence", "every deadline and cadence of a run in one place (heartbeats, beats, silences, lingers, the guard's start); `-tags rsag_fastcadence` shortens them for the tests that wait on them", nil},
	{"slurm", "tests only: the sbatch scripts under a local Slurm cluster", nil},
	{"e2e", "tests only: the built binary under mpirun, end to end", nil},
	{"internal/testkit/backendcheck", "test-only main: the conformance suite on the MPI backend under mpirun",
		[]string{"coll", "coll/colltest", "mpi", "mpibackend"}},
	{"internal/testkit/browser", "test-only: headless Chromium through chromedp", nil},
	{"internal/testkit/echophase", "test-only: a phase that registers itself in one line (its echophase_test.go)",
		[]string{"coll", "config", "phase", "report"}},
	{"internal/testkit/hosts", "test-only: emulated hosts in namespaces", nil},
	{"internal/testkit/inmem", "test-only: a backend of goroutine ranks, with faults; `Ranks`, a job of goroutine ranks that `job.Main` runs on (e2e's inproc)",
		[]string{"coll", "internal/hostmem"}},
	{"internal/testkit/mpicheck", "test-only main: package mpi under mpirun",
		[]string{"coll", "mpi"}},
	{"internal/testkit/mpitesting", "test-only: runs those mains under mpirun; the one MPI `TestMain`", nil},
	{"internal/testkit/outcheck", "test-only: an output dir checked as a notebook reads it", nil},
	{"internal/testkit/schemacheck", "test-only: summary.json against its JSON Schema", nil},
}

// testOnly says whether a package exists for the tests: it may import any
// package, but no product package may import it.
func testOnly(path string) bool {
	return strings.HasPrefix(path, "internal/testkit/") || path == "e2e" || path == "slurm"
}

// Rule is one thing no import may do.
type Rule struct {
	Says string
	// Breaks says whether an import of to by from breaks the rule.
	Breaks func(from, to string) bool
}

func in(p string, set ...string) bool { return slices.Contains(set, p) }

// Rules are the layout's promises, checked against the code and against
// Packages (so that the table cannot permit what a rule forbids).
var Rules = []Rule{
	{"report, report/page and report/plot write what they are given: they import no phase, no analysis (locate) and not job",
		func(from, to string) bool {
			return in(from, "report", "report/page", "report/plot") && in(to, "phases", "phase", "locate", "job")
		}},
	{"nothing but main imports job",
		func(from, to string) bool { return to == "job" && from != "main" }},
	{"the experiments and the analysis (phases, locate, model) import no output (report, report/page, report/plot)",
		func(from, to string) bool {
			return in(from, "phases", "locate", "model") && in(to, "report", "report/page", "report/plot")
		}},
	{"no package imports main",
		func(from, to string) bool { return to == "main" }},
	{"mpi (cgo) is imported only by mpibackend, job (MPI's start and finalize) and the test kit",
		func(from, to string) bool {
			return to == "mpi" && !in(from, "mpibackend", "job") && !strings.HasPrefix(from, "internal/testkit/")
		}},
	{"coll, the ground floor, imports nothing of rsag's",
		func(from, to string) bool { return from == "coll" }},
	{"a backend knows only the contract: mpibackend and ncclx import coll, mpi and internal helpers",
		func(from, to string) bool {
			return in(from, "mpibackend", "ncclx") && !in(to, "coll", "mpi") && !strings.HasPrefix(to, "internal/")
		}},
	{"no product package imports the test kit (main may, for the echo phase under -tags rsag_testphase)",
		func(from, to string) bool {
			return testOnly(to) && !testOnly(from) && !(from == "main" && to == "internal/testkit/echophase")
		}},
}

// Edge is one import: From imports To, both paths inside the module.
type Edge struct{ From, To string }

// Check compares the code's packages and imports with the table and the
// rules, and returns what is wrong, one sentence each; none when the
// layout holds.
func Check(code map[string][]string, table []Package, rules []Rule) []string {
	var wrong []string
	at := map[string]int{}
	for i, p := range table {
		if _, dup := at[p.Path]; dup {
			wrong = append(wrong, fmt.Sprintf("%s is in the table twice", p.Path))
		}
		at[p.Path] = i
	}
	for _, path := range sortedKeys(code) {
		if _, ok := at[path]; !ok {
			wrong = append(wrong, fmt.Sprintf("%s is not in internal/layout's table: add it, with its job and imports", path))
		}
	}
	for _, p := range table {
		imports, ok := code[p.Path]
		if !ok {
			wrong = append(wrong, fmt.Sprintf("%s is in internal/layout's table but not in the code", p.Path))
			continue
		}
		for _, to := range imports {
			if !slices.Contains(p.Imports, to) {
				wrong = append(wrong, fmt.Sprintf("%s imports %s, which internal/layout's table does not list", p.Path, to))
			}
		}
		for _, to := range p.Imports {
			if !slices.Contains(imports, to) {
				wrong = append(wrong, fmt.Sprintf("internal/layout's table says %s imports %s, which it does not", p.Path, to))
			}
		}
	}
	// Every import the code has or the table allows, each once.
	var edges []Edge
	add := func(e Edge) {
		if !slices.Contains(edges, e) {
			edges = append(edges, e)
		}
	}
	for _, p := range table {
		for _, to := range p.Imports {
			add(Edge{p.Path, to})
		}
	}
	for _, from := range sortedKeys(code) {
		for _, to := range code[from] {
			add(Edge{from, to})
		}
	}
	for _, e := range edges {
		for _, r := range rules {
			if r.Breaks(e.From, e.To) {
				wrong = append(wrong, fmt.Sprintf("%s imports %s, breaking the rule: %s", e.From, e.To, r.Says))
			}
		}
		i, ok1 := at[e.From]
		j, ok2 := at[e.To]
		if ok1 && ok2 && !testOnly(e.From) && j <= i {
			wrong = append(wrong, fmt.Sprintf("%s imports %s, which the table lists above it: imports point down the table", e.From, e.To))
		}
	}
	return wrong
}

func sortedKeys(m map[string][]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Markdown is docs/ARCHITECTURE.md's table and list of rules.
func Markdown(table []Package, rules []Rule) string {
	var b strings.Builder
	b.WriteString("| package | its job | imports of rsag's |\n|---|---|---|\n")
	for _, p := range table {
		imports := "—"
		if len(p.Imports) > 0 {
			imports = strings.Join(p.Imports, ", ")
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", p.Path, p.Job, imports)
	}
	b.WriteString("\nThe rules, which the table itself must keep too (only a package's own imports count, not its tests'):\n\n")
	for _, r := range rules {
		fmt.Fprintf(&b, "- %s.\n", r.Says)
	}
	return b.String()
}
