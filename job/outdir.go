package job

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"rsag/config"
	"rsag/internal/atomicfile"
	"rsag/mpi"
	"rsag/outdir"
	"rsag/report"
)

// chooseOutputDir gives a run started without -output-dir a directory of
// its own, new, under outdir.DefaultRoot (outdir.NewRunDir), before
// anything is checked or written there: rank 0 makes it, so that the
// name is this run's alone, and tells the others. Every rank then has the
// same -output-dir, as if it had been given; what rank 0 made is removed
// if the run is refused.
func (s *session) chooseOutputDir(st *state) error {
	if s.opts.OutputDir != "" {
		return nil
	}
	var msg []byte
	if s.comm.Rank() == 0 {
		dir, made, err := outdir.NewRunDir(outdir.DefaultRoot, outdir.Stem(s.opts.ConfigPath), s.opts.Started)
		st.made = made
		if err != nil {
			msg = append([]byte{1}, fmt.Sprintf("%v; or give one with -output-dir", err)...)
		} else {
			msg = append([]byte{0}, dir...)
		}
	}
	s.tr.Arm("output dir name broadcast (rank 0 makes it)", -1)
	defer s.tr.Leave()
	msg, err := s.comm.BcastBlob(msg, 0)
	if err != nil {
		return err
	}
	if len(msg) < 2 {
		return errors.New("output dir name broadcast arrived empty")
	}
	if msg[0] == 1 {
		return shared(ExitBadArgs, errors.New(string(msg[1:])))
	}
	s.opts.OutputDir, s.newRunDir = string(msg[1:]), true
	return nil
}

// pointLatest, on rank 0 of a run given no -output-dir, points
// results/latest at its dir once the dir is this run's. A latest that is
// not rsag's link is left alone, and said.
func (s *session) pointLatest() {
	if !s.newRunDir || s.comm.Rank() != 0 {
		return
	}
	if err := outdir.PointLatest(outdir.DefaultRoot, s.opts.OutputDir); err != nil {
		fmt.Fprintf(s.opts.Stderr, "rsag: warning: %v; this run's results are in %s\n", err, s.opts.OutputDir)
	}
}

// checkPaths refuses, on every rank alike, before anything is created and
// before any collective of the run, an output dir that could not take
// every file the run may write (report.MayWrite, from the config's runs):
// a name too long for its file system, a path past PATH_MAX, or a name of
// rsag's held by a link, which rsag never follows, or by a directory,
// FIFO or socket. It creates nothing, so that a refused run leaves
// nothing behind.
func (s *session) checkPaths(cfg config.Config, ran report.Phases) error {
	dir := s.opts.OutputDir
	var runs []string
	for _, r := range cfg.Sweeps {
		runs = append(runs, r.Name)
	}
	world := s.comm.Size()
	names := append(outdir.OwnNames(world), report.MayWrite(world, ran, runs)...)
	err := outdir.CheckPaths(dir, names)
	var ne *outdir.NameError
	if errors.As(err, &ne) {
		err = fmt.Errorf("%w: %s", err, nameHint(ne, world, ran, runs))
	}
	if err == nil {
		err = outdir.CheckEntries(dir, report.IsOutput)
	}
	if err == nil && ran.RankFolder {
		err = outdir.CheckFolder(dir, report.RankFolder)
	}
	return s.agree(err, ExitBadArgs, "output dir "+config.Clip(dir))
}

// nameHint says how to shorten a file name that is too long: a figure's
// name holds its [[run]]'s.
func nameHint(ne *outdir.NameError, world int, ran report.Phases, runs []string) string {
	for _, r := range runs {
		names := report.MayWrite(world, ran, []string{r})
		if !slices.Contains(names, ne.Name) {
			continue
		}
		longest := 0
		for _, n := range names {
			longest = max(longest, len(n))
		}
		over := longest + atomicfile.TempExtra - ne.Max
		return fmt.Sprintf("a figure's name holds its [[run]]'s name, and the run named %q makes it too long: "+
			"give that [[run]] a name of at most %d bytes", config.Clip(r), max(len(r)-over, 1))
	}
	return "shorten the [[run]] name it comes from, or choose an output dir on a file system that takes longer names"
}

// checkOutputDir makes the output dir this run's, on every rank alike and
// once every other input is answered: it makes the directory (remembering
// the levels it made, so that a refusal removes exactly those), every
// rank can write there, it is one directory that every rank sees, rank 0
// holds its lock (for the rest of the run), and an earlier run left
// nothing there, or (with -overwrite) only files its run.json lists as
// its own. It changes nothing else there: the earlier run's files are
// removed only once every input is answered (startRunLog), so that a
// refused run leaves them as they were.
func (s *session) checkOutputDir(st *state) (outdir.Earlier, error) {
	dir := s.opts.OutputDir
	what := "output dir " + config.Clip(dir)
	made, err := outdir.MakeDir(dir)
	st.made = append(made, st.made...) // deepest first: chooseOutputDir's are above
	if err == nil {
		err = outdir.CheckWritable(dir)
	}
	if err != nil {
		err = fmt.Errorf("%w; choose another with -output-dir", err)
	}
	if err := s.agree(err, ExitBadArgs, what+" is not writable"); err != nil {
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
		// Again, in the one dir every rank sees: a link planted since
		// checkPaths is refused by name before anything is written.
		if err = outdir.CheckEntries(dir, report.IsOutput); err == nil {
			st.lock, err = outdir.Acquire(dir, outdir.Holder{Host: s.comm.Host(), PID: s.pid,
				Started: s.opts.Started.UTC().Format(time.RFC3339)})
		}
		if err == nil {
			lock := st.lock
			s.end.AtEnd(func() { lock.Release() })
			err = outdir.ClearNotes(dir) // an earlier run's: a note there now is this run's
		}
	}
	if err := s.agree(err, ExitBadArgs, what); err != nil {
		return outdir.Earlier{}, err
	}
	earlier, err := outdir.Survey(dir, report.IsOutput)
	if err == nil {
		err = earlier.Refusal(s.opts.Overwrite)
	}
	if err := s.agree(err, ExitBadArgs, what); err != nil {
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
