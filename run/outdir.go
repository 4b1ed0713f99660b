package run

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"rsag/mpi"
	"rsag/outdir"
	"rsag/report"
)

// checkOutputDir makes sure every rank can write its files before any
// collective runs, and that no rank would overwrite an earlier run's
// results without -overwrite.
func (s *session) checkOutputDir() error {
	dir := s.opts.OutputDir
	if err := s.checkEarlierResults(); err != nil {
		return err
	}
	err := os.MkdirAll(dir, 0o755)
	if err == nil && s.opts.Overwrite {
		err = report.RemoveResults(dir)
	}
	if err == nil {
		var f *os.File
		if f, err = os.CreateTemp(dir, ".rsag-write-test*"); err == nil {
			f.Close()
			err = os.Remove(f.Name())
		}
	}
	if err != nil {
		err = fmt.Errorf("%w; choose another with -output-dir", err)
	}
	if err := s.agree(err, ExitBadArgs, "output dir "+dir+" is not writable"); err != nil {
		return err
	}
	// One directory for every rank: a node-local one would scatter the files.
	s.tr.Arm("output dir check between ranks", -1)
	err = outdir.CheckShared(s.comm, dir)
	var mpiErr *mpi.Error
	if err == nil || errors.As(err, &mpiErr) {
		return err // an MPI failure is this rank's
	}
	// Built from what every rank gathered: the same everywhere.
	return shared(ExitBadArgs, err)
}

// checkEarlierResults refuses, on every rank alike, an output dir that
// holds an earlier run's results (as any rank sees it), unless -overwrite.
func (s *session) checkEarlierResults() error {
	var err error
	if !s.opts.Overwrite {
		// A dir that cannot be read is reported by the write check next.
		found, _ := report.FindResults(s.opts.OutputDir)
		if len(found) > 3 {
			found = append(found[:3], fmt.Sprintf("and %d more", len(found)-3))
		}
		if len(found) > 0 {
			err = fmt.Errorf("it already holds results of an earlier run (%s): pass -overwrite to replace them, or choose another -output-dir",
				strings.Join(found, ", "))
		}
	}
	return s.agree(err, ExitBadArgs, "output dir "+s.opts.OutputDir)
}
