package job

import (
	"errors"
	"fmt"
	"time"

	"rsag/coll"
	"rsag/config"
	"rsag/phase"
	"rsag/phases"
	"rsag/report"
)

// work is what the run runs, resolved against the job: the hierarchy's
// groups when it is on, and every enabled phase, prepared.
type work struct {
	groups *phases.Groups
	phases []prepared
}

// prepared is one enabled phase, ready to run.
type prepared struct {
	name string
	phase.Prepared
}

// plan resolves the config against the job: the hierarchy's groups come
// from every rank's host, the same on every rank, so that a world that
// cannot split evenly is refused alike everywhere before any collective;
// then each enabled phase is prepared, and what it refuses is the config's
// fault, refused alike everywhere too.
func (s *session) plan(cfg config.Config) (work, error) {
	var w work
	var hostsErr error
	hosts := func() ([]string, error) {
		h, err := s.hosts()
		hostsErr = err
		return h, err
	}
	if cfg.Hierarchy.Enabled {
		h, err := hosts()
		if err != nil {
			return w, err
		}
		if w.groups, err = phases.NewGroups(h, cfg.Hierarchy.GroupSize); err != nil {
			return w, shared(ExitBadArgs, fmt.Errorf("config: hierarchy: %w", err))
		}
	}
	cpus := func() ([]phase.CPUMask, error) {
		c, err := s.cpus()
		if err != nil {
			hostsErr = err
		}
		return c, err
	}
	j := phase.Job{Config: cfg, World: s.comm.Size(), Hosts: hosts, CPUs: cpus, Groups: w.groups}
	for _, p := range phase.All() {
		if !p.Enabled(cfg) {
			continue
		}
		ready, err := p.Prepare(j)
		if hostsErr != nil {
			return w, hostsErr
		}
		if err != nil {
			return w, shared(ExitBadArgs, err)
		}
		w.phases = append(w.phases, prepared{p.Name, ready})
	}
	return w, nil
}

// groupSize is the hierarchy's ranks per group, 0 when it is off.
func (w work) groupSize() int {
	if w.groups == nil {
		return 0
	}
	return w.groups.Size
}

// runPhases runs the prepared phases in order, each through runPhase. A
// check that failed on any rank stops the run as a sharedError, with the
// rows so far; a failure of this rank alone is returned as is.
func (s *session) runPhases(w work, be coll.Backend) (report.Rows, error) {
	env := phase.Env{Backend: be, Comm: phases.WatchComm(s.comm, s.tr), Rank: s.comm.Rank(), Host: s.comm.Host(),
		Progress: func(line string) { s.printf("%s\n", line) }}
	var rows report.Rows
	for _, p := range w.phases {
		if err := s.runPhase(p, env, &rows); err != nil {
			return rows, err
		}
		// Every phase ends together: what follows is timed, or judged
		// against every rank at once.
		if err := env.Comm.Barrier(); err != nil {
			return rows, err
		}
		// It ended on every rank: a run ended early says it ran.
		s.ended.phaseEnded(s.phaseSeconds[len(s.phaseSeconds)-1])
	}
	return rows, nil
}

// runPhase is the one wrapper every phase runs in: it names the phase to
// the watchdog, keeps how long it took, and shapes its error alike for
// all: a failure every rank found is shared, said once by rank 0.
func (s *session) runPhase(p prepared, env phase.Env, rows *report.Rows) error {
	s.phase(p.name)
	if env.Rank == 0 {
		env.Checkpoint = s.checkpoint(p.name)
	}
	start := time.Now()
	err := p.Run(env, rows)
	s.phaseSeconds = append(s.phaseSeconds, report.PhaseTime{Name: p.name, Seconds: time.Since(start).Seconds()})
	var agreed *phase.Agreed
	var ce *phases.CheckError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &agreed), errors.As(err, &ce) && ce.Ranks != nil:
		return shared(ExitFailed, err)
	}
	return err
}

// checkpoint writes phase's combined files from its rows so far into the
// output dir (rank 0): a run signalled later keeps them, said failed by
// run.json. A write that fails only loses the checkpoint.
func (s *session) checkpoint(phase string) func(report.Rows) {
	dir := s.opts.OutputDir
	return func(rows report.Rows) {
		in := report.Input{World: s.comm.Size(), Ran: report.Ran(phase), Rows: rows}
		if err := report.Write(report.Combined, dir, in); err != nil {
			fmt.Fprintf(s.opts.Stderr, "rsag: rank 0: warning: checkpoint of the %s phase: %v\n", phase, err)
		}
	}
}

// summarize adds each phase's part of the summary, on rank 0.
func (w work) summarize(merged report.Rows, sum *report.Summary) {
	for _, p := range w.phases {
		if p.Summarize != nil {
			p.Summarize(merged, sum)
		}
	}
}
