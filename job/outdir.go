package job

import (
	"errors"
	"fmt"
	"os"
	"time"

	"rsag/mpi"
	"rsag/outdir"
	"rsag/report"
)

// checkOutputDir makes the output dir this run's, on every rank alike and
// before any collective: every rank can write there, it is one directory
// that every rank sees, rank 0 holds its lock (for the rest of the run),
// and an earlier run left nothing there, or (with -overwrite) only files
// its run.json lists as its own. It changes nothing there: the earlier
// run's files are removed only once every input is answered (startRunLog),
// so that a refused run leaves them as they were.
func (s *session) checkOutputDir(st *state) (outdir.Earlier, error) {
	dir := s.opts.OutputDir
	err := os.MkdirAll(dir, 0o755)
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
		return outdir.Earlier{}, err
	}
	// One directory for every rank: a node-local one would scatter the files.
	s.tr.Arm("output dir check between ranks", -1)
	defer s.tr.Leave()
	if err := outdir.CheckShared(s.comm, dir); err != nil {
		var mpiErr *mpi.Error
		if errors.As(err, &mpiErr) {
			return outdir.Earlier{}, err // an MPI failure is this rank's
		}
		// Built from what every rank gathered: the same everywhere.
		return outdir.Earlier{}, shared(ExitBadArgs, err)
	}
	// The lock before the survey: a live run's files are never surveyed,
	// let alone removed.
	err = nil
	if s.comm.Rank() == 0 {
		st.lock, err = outdir.Acquire(dir, outdir.Holder{Host: s.comm.Host(), PID: os.Getpid(),
			Started: s.opts.Started.UTC().Format(time.RFC3339)})
		if err == nil {
			lock := st.lock
			s.end.AtEnd(func() { lock.Release() })
			err = outdir.ClearNotes(dir) // an earlier run's: a note there now is this run's
		}
	}
	if err := s.agree(err, ExitBadArgs, "output dir "+dir); err != nil {
		return outdir.Earlier{}, err
	}
	earlier, err := outdir.Survey(dir, report.IsOutput)
	if err == nil {
		err = earlier.Refusal(s.opts.Overwrite)
	}
	if err := s.agree(err, ExitBadArgs, "output dir "+dir); err != nil {
		return outdir.Earlier{}, err
	}
	s.noteDir.Store(&dir)
	return earlier, nil
}

// leaveNote, on a rank other than 0 that fails on its own, tells rank 0
// why before the launcher ends it (see outdir.LeaveNote); nothing before
// the output dir is this run's.
func (s *session) leaveNote(msg string) {
	if dir := s.noteDir.Load(); dir != nil && s.comm.Rank() != 0 {
		outdir.LeaveNote(*dir, s.comm.Rank(), fmt.Sprintf("rank %d (%s): %s", s.comm.Rank(), s.comm.Host(), msg))
	}
}
