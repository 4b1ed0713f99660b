package job

import (
	"errors"
	"fmt"
	"strings"

	"rsag/coll"
	"rsag/config"
	"rsag/phases"
)

// results are one rank's phase results.
type results struct {
	contracts []phases.ContractResult
	timings   []phases.TimingSample
	memory    []phases.MemoryResult
	numerics  []phases.NumericsResult
	locate    phases.LocateResult
	soak      phases.SoakResult
}

// work is what the phases run, resolved against the job: the config's
// timing runs and memory run, with the hierarchy's groups when it is on.
type work struct {
	timing []coll.Sweep
	memory phases.MemoryRun
	groups *phases.Groups
	hosts  []string           // every rank's, in rank order
	locate *phases.LocatePlan // nil when [locate] is off
}

// plan resolves the config against the job: the hierarchy's groups come
// from every rank's host, the same on every rank, so that a world that
// cannot split evenly is refused alike everywhere before any collective.
func (s *session) plan(cfg config.Config) (work, error) {
	w := work{timing: cfg.Sweeps,
		memory: phases.MemoryRun{PayloadBytes: int64(cfg.Memory.PayloadBytes), Modes: cfg.Memory.Modes}}
	if cfg.Locate.Enabled {
		if err := s.planLocate(cfg, &w); err != nil {
			return w, err
		}
	}
	if !cfg.Hierarchy.Enabled {
		return w, nil
	}
	hosts, err := s.hosts()
	if err != nil {
		return w, err
	}
	if w.groups, err = phases.NewGroups(hosts, cfg.Hierarchy.GroupSize); err != nil {
		return w, shared(ExitBadArgs, fmt.Errorf("config: hierarchy: %w", err))
	}
	w.hosts = hosts
	w.memory.Groups = w.groups
	return w, nil
}

// groupSize is the hierarchy's ranks per group, 0 when it is off.
func (w work) groupSize() int {
	if w.groups == nil {
		return 0
	}
	return w.groups.Size
}

// runPhases runs the enabled phases in order. A check that failed on any
// rank stops the run as a sharedError, with what ran so far; a backend
// failure is returned as is.
func (s *session) runPhases(cfg config.Config, w work, be coll.Backend) (res results, err error) {
	progress := func(line string) { s.printf("%s\n", line) }
	comm := phases.WatchComm(s.comm, s.tr)
	if cfg.Contracts.Enabled {
		s.phase("contracts")
		if res.contracts, err = phases.RunContracts(be); err != nil {
			return res, fmt.Errorf("contracts on rank %d: %w", s.comm.Rank(), err)
		}
		if w.groups != nil {
			more, err := phases.RunHierarchyContracts(be, w.groups, w.hosts)
			res.contracts = append(res.contracts, more...)
			if err != nil {
				return res, fmt.Errorf("hierarchical contracts on rank %d: %w", s.comm.Rank(), err)
			}
		}
		var failed []string
		for _, r := range res.contracts {
			if !r.Correct {
				failed = append(failed, r.Name)
			}
		}
		ok, bad, err := comm.AllTrue(len(failed) == 0)
		if err != nil {
			return res, err
		}
		if !ok {
			return res, shared(ExitFailed, fmt.Errorf("contracts failed on rank(s) %v (rank 0: %s)", bad, orNone(failed)))
		}
		progress(fmt.Sprintf("contracts: %d held on every rank", len(res.contracts)))
	}
	if err := comm.Barrier(); err != nil {
		return res, err
	}
	if w.locate != nil {
		if res.locate, err = s.runLocate(be, comm, w.locate, progress); err != nil {
			return res, err
		}
	}
	if cfg.Timing.Enabled {
		s.phase("timing")
		progress(phases.ProgressHeader)
		if res.timings, err = phases.RunTiming(be, comm, w.timing, w.groups, progress); err != nil {
			return res, checkShared(err)
		}
	}
	if cfg.Memory.Enabled {
		s.phase("memory")
		if res.memory, err = phases.RunMemory(be, comm, w.memory, progress); err != nil {
			return res, checkShared(err)
		}
	}
	if cfg.Numerics.Enabled {
		s.phase("numerics")
		if res.numerics, err = phases.RunNumerics(be, comm, cfg.Numerics.Spec()); err != nil {
			return res, checkShared(err)
		}
		for _, r := range res.numerics {
			progress(fmt.Sprintf("numerics %-8s %-6s %s (rank 0; largest error %.3g of its bound)",
				r.DType, coll.SizeText(r.SizeBytes), r.Verdict(), r.MaxBoundRatio))
		}
	}
	if cfg.Soak.Enabled {
		s.phase("soak")
		if res.soak, err = phases.RunSoak(be, comm, cfg.Soak.Spec(), w.groups, progress); err != nil {
			return res, checkShared(err)
		}
	}
	return res, nil
}

// checkShared marks a check failure that every rank agreed on as shared.
func checkShared(err error) error {
	var ce *phases.CheckError
	if errors.As(err, &ce) && ce.Ranks != nil {
		return shared(ExitFailed, err)
	}
	return err
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
