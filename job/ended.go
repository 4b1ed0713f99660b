package job

import (
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"rsag/coll"
	"rsag/config"
	"rsag/internal/cadence"
	"rsag/mpi"
	"rsag/outdir"
	"rsag/report"
)

// endedRun is what rank 0 needs to write, when the run is ended early (by
// end_on_stuck_rank, the watchdog or a signal, from the Ender's goroutine
// while the main one may be stuck in a collective), the outputs that other
// tools read: summary.json, junit.xml and rsag.prom (report.PlanEnded).
// Its summary holds what was known before the run wrote into its dir (the
// config, the ranks and their hosts, the libraries) and no results: the
// ranks' rows are gathered only at the end, and rank 0's alone are not the
// run's. It also keeps the phases that ended, with their times, so that
// the list says those ran and were never judged, not that they never ran.
type endedRun struct {
	mu      sync.Mutex
	base    *report.Summary // nil until the run writes into its dir (rank 0 only)
	metrics string          // the config's metrics_dir
	phases  []report.PhaseTime
}

// prepareEnded builds, on rank 0's main goroutine (MPI is called here,
// never from the Ender's), the summary a run ended early writes.
func (s *session) prepareEnded(cfg config.Config, infos []coll.Info, w work) {
	if s.comm.Rank() != 0 {
		return
	}
	obj, err := report.ConfigObject(cfg)
	if err != nil {
		obj = map[string]any{}
	}
	sum := report.NewSummary(report.SummaryInput{Version: s.opts.Version, Commit: s.opts.Commit,
		Status: outdir.StatusRunning, Started: s.opts.Started, Ended: time.Now(), Config: obj,
		MPILibrary: mpi.LibraryVersion(), Infos: infos, Environ: os.Environ(), Command: os.Args,
		World: s.comm.Size(), GroupSize: w.groupSize(), Groups: w.groups.Of()})
	s.ended.mu.Lock()
	s.ended.base, s.ended.metrics = &sum, cfg.MetricsDir
	s.ended.mu.Unlock()
}

// phaseEnded records a phase that ended on this rank, with its time.
func (e *endedRun) phaseEnded(p report.PhaseTime) {
	e.mu.Lock()
	e.phases = append(e.phases, p)
	e.mu.Unlock()
}

// summary is the run's summary as it ended early, for reason; false
// before there is one.
func (e *endedRun) summary(reason string, ended time.Time) (report.Summary, string, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.base == nil {
		return report.Summary{}, "", false
	}
	sum := *e.base
	sum.Status, sum.Reason, sum.EndedEarly = outdir.StatusFailed, reason, true
	sum.Ended = ended.UTC().Format(time.RFC3339)
	// No check ran to its end on every rank: none passed.
	sum.ChecksPassed = false
	sum.Phases = report.PhasesOf(slices.Clone(e.phases), nil)
	v := report.VerdictsOf(sum)
	sum.Verdict = &v
	return sum, e.metrics, true
}

// writeEnded is the Ender's last word on rank 0 (watchdog.Ender's
// SetOutputs): once run.json says failed, for a run the watchdog, a signal
// or end_on_stuck_rank ended, it writes summary.json, junit.xml and
// rsag.prom (into metrics_dir too) from the one list of verdicts of what
// was known, each saying why, so that CI and Prometheus do not keep the
// previous run's word. Only the run's own files (report's outputs, listed
// in run.json from its start), reached as every output is. It waits at
// most endedWritesWithin for them: a full disk or a stuck file system
// must not hold the job's end up; the writing goes on meanwhile until the
// process exits.
func (s *session) writeEnded(log *runLog) func(code int) {
	return func(code int) {
		reason, ok := log.endedEarly()
		if !ok {
			return // the run had ended on its own: its outputs are its end's
		}
		sum, metrics, ok := s.ended.summary(reason, time.Now())
		if !ok {
			return
		}
		files, write := report.PlanEnded(report.Input{World: s.comm.Size(), Summary: &sum, MetricsDir: metrics})
		done := make(chan error, 1)
		go func() { done <- write(log.dir) }()
		select {
		case err := <-done:
			if err != nil {
				fmt.Fprintf(s.opts.Stderr, "rsag: rank 0 (%s): writing what the run's end leaves (%s): %v\n",
					s.comm.Host(), filesText(files), err)
			}
		case <-time.After(endedWritesWithin):
			fmt.Fprintf(s.opts.Stderr, "rsag: rank 0 (%s): %s not written within %v (a full or stuck file system?): ending without them\n",
				s.comm.Host(), filesText(files), endedWritesWithin)
		}
	}
}

// endedWritesWithin bounds writeEnded's wait.
const endedWritesWithin = cadence.EndedWritesWithin

// filesText is "summary.json, junit.xml and rsag.prom".
func filesText(files []string) string {
	switch len(files) {
	case 0:
		return "nothing"
	case 1:
		return files[0]
	}
	out := ""
	for i, f := range files[:len(files)-1] {
		if i > 0 {
			out += ", "
		}
		out += f
	}
	return out + " and " + files[len(files)-1]
}
