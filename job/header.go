package job

import (
	"fmt"
	"path/filepath"

	"rsag/coll"
	"rsag/mpi"
	"rsag/phases"
	"rsag/report"
)

// gatherInfos gathers every rank's backend description to rank 0 (nil on
// the other ranks).
func (s *session) gatherInfos(be coll.Backend) ([]coll.Info, error) {
	info := be.Info()
	info.LocalRank = s.comm.LocalRank()
	info.CPUs = myCPUs().List()
	return gatherJSON(s, "backend descriptions", info)
}

// printHeader prints, on rank 0, what runs where: the binary, the backend,
// the libraries and every rank.
func (s *session) printHeader(mine coll.Info, infos []coll.Info, groups *phases.Groups) {
	if s.comm.Rank() != 0 {
		return
	}
	s.printf("rsag %s (commit %s): backend %s, %d ranks, config %s\n", s.opts.Version, s.opts.Commit, mine.Backend, s.comm.Size(), s.opts.ConfigPath)
	s.printf("  mpi %s\n", mpi.LibraryVersion())
	for _, lib := range mine.Libraries {
		if lib.Name == "mpi" {
			continue // the line above
		}
		s.printf("  %s %s %s\n", lib.Name, lib.Version, lib.Path)
	}
	if mine.Driver != "" {
		s.printf("  driver %s\n", mine.Driver)
	}
	if s.gpuShared != "" {
		s.printf("  %s\n", s.gpuShared)
	}
	report.RanksTable(s.out, infos)
	report.NodesTable(s.out, report.WithGroups(report.Nodes(infos), groups.Of()))
}

// sameForBackend is, for a shipped config and a backend it asks too much
// of, the shipped config that does the same on that backend.
var sameForBackend = map[[2]string]string{{"sweep.toml", "mpi"}: "configs/sweep-mpi.toml"}

// preflight refuses, on every rank alike and before any collective, a run
// the backend cannot do: a dtype, op, method or mode it lacks, or phases
// that do not fit in some rank's free memory.
func (s *session) preflight(w work, be coll.Backend) error {
	var err error
	for _, p := range w.phases {
		if err == nil && p.Support != nil {
			err = p.Support(be)
		}
	}
	if other, ok := sameForBackend[[2]string{filepath.Base(s.opts.ConfigPath), be.Info().Backend}]; err != nil && ok {
		err = fmt.Errorf("%w; or run %s, the same for the %s backend", err, other, be.Info().Backend)
	}
	if err := s.agree(err, ExitBadArgs, "the config asks for what this backend cannot do"); err != nil {
		return err
	}
	err = nil
	for _, p := range w.phases {
		if err == nil && p.Fits != nil {
			err = p.Fits(be)
		}
	}
	return s.agree(err, ExitBadArgs, "payload too large")
}
