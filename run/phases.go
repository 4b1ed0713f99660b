package run

import (
	"errors"
	"fmt"
	"strings"

	"rsag/config"
	"rsag/phases"
)

// results are one rank's phase results.
type results struct {
	contracts []phases.ContractResult
	timings   []phases.TimingSample
	memory    []phases.MemoryResult
	numerics  []phases.NumericsResult
}

// runPhases runs the enabled phases in order. A check that failed on any
// rank stops the run as a sharedError, with what ran so far; a backend
// failure is returned as is.
func (s *session) runPhases(cfg config.Config, be phases.Backend) (res results, err error) {
	progress := func(line string) { s.printf("%s\n", line) }
	comm := phases.WatchComm(s.comm, s.tr)
	if cfg.Contracts.Enabled {
		s.phase("contracts")
		if res.contracts, err = phases.RunContracts(be); err != nil {
			return res, fmt.Errorf("contracts on rank %d: %w", s.comm.Rank(), err)
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
	if cfg.Timing.Enabled {
		s.phase("timing")
		if res.timings, err = phases.RunTiming(be, comm, cfg.TimingRuns, progress); err != nil {
			return res, checkShared(err)
		}
	}
	if cfg.Memory.Enabled {
		s.phase("memory")
		if res.memory, err = phases.RunMemory(be, comm, int64(cfg.Memory.PayloadBytes), cfg.Memory.Modes, progress); err != nil {
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
				r.DType, phases.SizeText(r.SizeBytes), r.Verdict(), r.MaxBoundRatio))
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
