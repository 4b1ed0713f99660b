// Package phase is the list of a run's phases. Each phase is one file here
// (or a package of its own) that registers itself from init, the way
// report's outputs do: its name, when the config enables it, and how to
// prepare it against the job, which yields its checks, its run on each
// rank and its part of the summary. The job runs the registered phases in
// order through one wrapper (job/phases.go), and nothing else names them.
//
// What a phase measures lives in package phases; what it decides from the
// rows (the locate verdict) lives here beside it; report writes what it is
// given.
package phase

import (
	"fmt"
	"slices"

	"rsag/coll"
	"rsag/config"
	"rsag/phases"
	"rsag/report"
)

// Phase is one phase of a run.
type Phase struct {
	// Name is the phase's, in the watchdog's messages, in report.Phases
	// and in every output that says which phases ran.
	Name string
	// Order is where it runs among the others: lower first.
	Order int
	// Enabled says whether the config asks for it.
	Enabled func(cfg config.Config) bool
	// Table says that the phase's rows are a table of its own
	// (report.PhaseTable in Rows.Tables), which report writes as NAME.csv,
	// in summary.json's phases, on the page and in the terminal: a phase
	// that report has no struct for needs nothing else.
	Table bool
	// Checks are the phase's checks in the run's one list of verdicts
	// (report.VerdictsOf), over the summary: what held, failed, could
	// not judge or did not run. nil for a phase whose table's failed rows
	// are its checks, or whose section report checks itself.
	Checks func(s report.Summary) report.PhaseVerdict
	// Has says whether a summary holds the phase's results, for Checks;
	// nil: whenever summary.json's phases list it.
	Has func(s report.Summary) bool
	// Prepare resolves the phase against the job, alike on every rank and
	// before any collective but the job's own agreement (Job.Hosts): an
	// error is the config's fault, and ends the run as bad input.
	Prepare func(j Job) (Prepared, error)
}

// Job is what a phase is prepared against, the same on every rank.
type Job struct {
	Config config.Config
	World  int
	// Hosts returns every rank's host, by rank; the first call is a
	// collective, so every rank calls it alike or none does.
	Hosts func() ([]string, error)
	// CPUs returns the processors every rank may run on, by rank; the
	// first call is a collective, as Hosts'.
	CPUs func() ([]CPUMask, error)
	// Groups are the hierarchy's, nil when it is off.
	Groups *phases.Groups
}

// Prepared is a phase ready to run. Every func may be nil.
type Prepared struct {
	// Support says what the phase needs that the backend cannot do.
	Support func(be coll.Backend) error
	// Fits says whether the phase's buffers fit the backend's memory.
	Fits func(be coll.Backend) error
	// Run runs the phase on this rank and adds its rows to rows. A check
	// that failed alike on every rank is an *Agreed or a
	// *phases.CheckError with Ranks; anything else is this rank's alone.
	Run func(env Env, rows *report.Rows) error
	// Summarize adds, on rank 0, the phase's part of the summary from
	// every rank's rows.
	Summarize func(merged report.Rows, sum *report.Summary)
}

// Env is what a phase runs with on one rank.
type Env struct {
	Backend coll.Backend
	// Comm is the job's communicator, watched.
	Comm     coll.Comm
	Rank     int
	Host     string
	Progress func(line string)
	// Checkpoint, on rank 0, writes the phase's own files from its rows so
	// far (the soak's soak.csv), so that what ran survives a signal; the
	// files at the end replace them. nil where there is none.
	Checkpoint func(rows report.Rows)
}

// Agreed is a failure every rank found alike: the run ends with it as a
// failed check, said once.
type Agreed struct{ Err error }

func (e *Agreed) Error() string { return e.Err.Error() }
func (e *Agreed) Unwrap() error { return e.Err }

var registered []Phase

// Register adds a phase; it is called from init.
func Register(p Phase) {
	if p.Name == "" || p.Enabled == nil || p.Prepare == nil {
		panic(fmt.Sprintf("phase: %q registered without a name, Enabled or Prepare", p.Name))
	}
	for _, q := range registered {
		if q.Name == p.Name || q.Order == p.Order {
			panic(fmt.Sprintf("phase: %q registered with the name or order of %q", p.Name, q.Name))
		}
	}
	registered = append(registered, p)
	if p.Table {
		report.RegisterTable(p.Name)
	}
	if p.Checks != nil {
		report.RegisterChecks(report.Checker{Phase: p.Name, Has: p.Has, Checks: p.Checks})
	}
	slices.SortFunc(registered, func(a, b Phase) int { return a.Order - b.Order })
}

// All are the registered phases, in order.
func All() []Phase { return slices.Clone(registered) }

// Enabled are the phases cfg enables, by name, and whether its timing
// sweeps beyond the seed's single case.
func Enabled(cfg config.Config) report.Phases {
	ran := report.Ran()
	for _, p := range registered {
		if p.Enabled(cfg) {
			ran = ran.With(p.Name)
		}
	}
	ran.Sweep = !cfg.IsSeedCase()
	return ran
}
