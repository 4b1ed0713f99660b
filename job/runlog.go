package job

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"rsag/internal/atomicfile"
	"rsag/outdir"
	"rsag/report"
)

// runLog is rank 0's run.json. The main goroutine writes "running", the
// files it is about to write, and the final status; a goroutine of its own
// rewrites the heartbeat; the watchdog and signal goroutines may write
// "failed" at any moment. So writes are serialised and the first final
// status wins. A nil *runLog (every rank but 0) does nothing.
type runLog struct {
	mu  sync.Mutex
	dir string
	rec outdir.Record
	// stderr is rank 0's (Options.Stderr): where a failure to mark the
	// run failed is said.
	stderr io.Writer
	final  bool
	// ending: the watchdog, a signal or end_on_stuck_rank made run.json
	// final (failEnding), not the run's own end: the outputs then say why
	// (endedEarly).
	ending bool
	said   string        // the status run.json holds: the last one written
	stop   chan struct{} // closed once final: the heartbeat ends
}

// write writes rec with a fresh heartbeat; l.mu is held.
func (l *runLog) write() error {
	l.keepStuck()
	l.rec.Heartbeat = time.Now().UTC().Format(time.RFC3339)
	err := outdir.WriteRecord(l.dir, l.rec)
	if err == nil {
		l.said = l.rec.Status
	}
	return err
}

// start writes "running" and starts the heartbeat.
func (l *runLog) start() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.final {
		return nil // a signal came first
	}
	l.rec.Status = outdir.StatusRunning
	if err := l.write(); err != nil {
		return err
	}
	go l.beat()
	return nil
}

// beat rewrites the heartbeat every outdir.HeartbeatEvery until the run
// is final, so that a reader can tell this live run from a dead one.
func (l *runLog) beat() {
	t := time.NewTicker(outdir.HeartbeatEvery)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		l.mu.Lock()
		if !l.final {
			_ = l.write() // a missed beat only ages it; the next may land
		}
		l.mu.Unlock()
	}
}

// plan records files the run is about to write, before it writes them, so
// that run.json lists every file of the run at every moment.
func (l *runLog) plan(files ...string) error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.final {
		return nil
	}
	for _, f := range files {
		if !slices.Contains(l.rec.Files, f) {
			l.rec.Files = append(l.rec.Files, f)
		}
	}
	return l.write()
}

// suspects records the locate phase's suspects in run.json.
func (l *runLog) suspects(list []string) {
	if l == nil || len(list) == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rec.Suspects = list
}

// stuck records ranks named early (outdir.Stuck) in run.json at once.
func (l *runLog) stuck(list []outdir.Stuck) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rec.Stuck = outdir.MergeStuck(l.rec.Stuck, list)
	if !l.final {
		_ = l.write() // the line said it; the next write tries again
	}
}

// keepStuck keeps the ranks that rank 0's guard named in run.json (rank
// 0 itself, while it was stopped) in what this rank writes next; l.mu is
// held.
func (l *runLog) keepStuck() {
	if disk, err := outdir.ReadRecord(l.dir); err == nil && disk.PID == l.rec.PID && disk.Host == l.rec.Host {
		l.rec.Stuck = outdir.MergeStuck(l.rec.Stuck, disk.Stuck)
	}
}

// end writes a final status, once.
func (l *runLog) end(status, reason string) error { return l.endWith(status, reason, false) }

// endWith is end; ending says the run is being ended (failEnding).
func (l *runLog) endWith(status, reason string, ending bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.final {
		return nil
	}
	l.final, l.ending = true, ending
	close(l.stop)
	l.rec.Status, l.rec.Reason = status, reason
	l.rec.Ended = time.Now().UTC().Format(time.RFC3339)
	return l.write()
}

// amend rewrites the reason of a run already marked failed with what
// more is known (what the other ranks left as they ended); nothing else
// changes, and nothing happens to a run that is not failed.
func (l *runLog) amend(f func(reason string) string) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.rec.Status != outdir.StatusFailed {
		return
	}
	l.rec.Reason = f(l.rec.Reason)
	_ = l.write()
}

// commit ends the run in one step that a full disk cannot stop half way:
// the final record is written to run.json's temporary first, so that its
// space is taken; then writeLast writes the Last outputs (summary.json and
// the page, which state the same status, named in last); then a rename,
// which needs no space, makes the record final. So neither claims more
// than run.json: whatever fails before the rename removes the Last
// outputs written so far, and leaves run.json as it was. The lock is held throughout, so that a signal's "failed" waits
// for it: once committed, run.json's word is the truth (every file is
// there), and the signal only ends the process.
func (l *runLog) commit(status, reason, ended string, last []string, writeLast func(dir string) error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.final {
		return nil // a signal or the watchdog marked it failed first
	}
	l.keepStuck()
	rec := l.rec
	rec.Status, rec.Reason, rec.Ended, rec.Heartbeat = status, reason, ended, ended
	pending, err := outdir.PrepareRecord(l.dir, rec)
	if err != nil {
		return err
	}
	// A last output written when a later one or the rename fails would
	// claim the status run.json does not: each is removed again (what is
	// a regular file there: a link planted at its name is not the run's).
	removeLast := func() {
		for _, f := range last {
			if st, err := os.Lstat(filepath.Join(l.dir, f)); err == nil && st.Mode().IsRegular() {
				atomicfile.Remove(l.dir, f)
			}
		}
	}
	if err := writeLast(l.dir); err != nil {
		pending.Abort()
		removeLast()
		return err
	}
	if err := pending.Commit(); err != nil {
		removeLast()
		return fmt.Errorf("writing %s: %w", outdir.RunFile, err)
	}
	l.rec, l.final, l.said = rec, true, status
	close(l.stop)
	return nil
}

// status is what run.json says now: "" before it was first written, or
// on every rank but 0.
func (l *runLog) status() string {
	if l == nil {
		return ""
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.said
}

// failEnding is fail for a run that the watchdog, a signal or
// end_on_stuck_rank ends (watchdog.Ender's mark): when it is what makes
// run.json final, the run's outputs say why too (endedEarly).
func (l *runLog) failEnding(reason string) {
	if l == nil {
		return
	}
	if err := l.endWith(outdir.StatusFailed, reason, true); err != nil {
		fmt.Fprintf(l.stderr, "rsag: rank 0: marking the run failed in %s: %v\n", outdir.RunFile, err)
	}
}

// endedEarly is run.json's reason when failEnding made it final (false
// when the run had ended first, complete or failed on its own): the
// reason as amended since (settle).
func (l *runLog) endedEarly() (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.ending || l.rec.Status != outdir.StatusFailed {
		return "", false
	}
	return l.rec.Reason, true
}

// fail marks the run failed; an error writing it is printed, since the run
// has failed already.
func (l *runLog) fail(reason string) {
	if l == nil {
		return
	}
	if err := l.end(outdir.StatusFailed, reason); err != nil {
		fmt.Fprintf(l.stderr, "rsag: rank 0: marking the run failed in %s: %v\n", outdir.RunFile, err)
	}
}

// startRunLog is where a run starts writing into the output dir, once
// every input is answered: every rank removes the earlier run's files it
// sees (with -overwrite; ranks sharing the dir remove the same ones), then
// rank 0 writes run.json saying "running", listing the files the run will
// write. Every rank learns whether it could, so that a failure ends every
// rank alike.
func (s *session) startRunLog(backend string, earlier outdir.Earlier, ran report.Phases, lock *outdir.Lock) (*runLog, error) {
	dir := s.opts.OutputDir
	if err := s.agree(earlier.Remove(), ExitFailed, "removing the earlier run's files in "+dir); err != nil {
		return nil, err
	}
	pids, err := gatherJSON(s, "process ids", s.pid)
	if err != nil {
		return nil, err
	}
	hosts, err := s.hosts() // every rank's, for the nodes' files
	if err != nil {
		return nil, err
	}
	var l *runLog
	if s.comm.Rank() == 0 {
		files := append([]string{outdir.RunFile}, report.PlannedOn(report.NodesOf(hosts), ran)...)
		l = &runLog{dir: dir, stderr: s.opts.Stderr, stop: make(chan struct{}), rec: outdir.Record{Version: s.opts.Version, Commit: s.opts.Commit,
			Backend: backend, WorldSize: s.comm.Size(), Config: s.opts.ConfigPath, Host: s.comm.Host(), PID: s.pid,
			GPUShared: s.gpuShared, Started: s.opts.Started.UTC().Format(time.RFC3339), Files: files}}
		// Before "running" is written: a signal from here on marks it failed,
		// and the guard marks it if rank 0 is killed outright.
		s.end.SetExplain(s.explainSignal(pids))
		s.end.SetMarkFailed(l.failEnding)
		s.end.SetOutputs(s.writeEnded(l))
		s.end.SetSettle(s.settle(l))
		s.startGuard(lock)
		err = l.start()
		if err == nil {
			go s.watchStuck(l)
		}
		if err == nil && ran.RankFolder {
			// Made once, by rank 0, before any rank writes its files there.
			err = atomicfile.MkdirIn(dir, report.RankFolder)
		}
	}
	if err := s.agree(err, ExitFailed, "writing "+outdir.RunFile+" in "+dir); err != nil {
		return nil, err
	}
	return l, nil
}

// guardPipe is rank 0's end of its guard's stdin, open for the life of the
// process: its closing, at rank 0's end however it comes, is the guard's
// cue (and a closed os.File would close it early).
var guardPipe *os.File

// startGuard starts the guard that marks run.json failed if rank 0 is
// killed before it can (outdir.StartGuard). Without one the run goes on:
// run.json's heartbeat still tells a dead run from a live one.
func (s *session) startGuard(lock *outdir.Lock) {
	if !s.process {
		// A goroutine rank of a test: the guard re-execs the binary, which
		// the test's process is not, and watches a process that outlives
		// the rank. Off: run.json's heartbeat still tells a dead run, and
		// the guard's work is proved under mpirun.
		return
	}
	exe, err := os.Executable()
	if err == nil {
		guardPipe, err = outdir.StartGuard(exe, lock, s.opts.OutputDir, s.comm.Host(), s.pid,
			outdir.EarlyNaming{Timeout: s.wd.Timeout(), End: s.endOnStuck})
	}
	if err != nil {
		fmt.Fprintf(s.opts.Stderr, "rsag: rank 0 (%s): warning: %v; a run killed outright is left %q, told dead by its heartbeat\n",
			s.comm.Host(), err, outdir.StatusRunning)
	}
}

// explainSignal returns, for rank 0, what a signal's reason in run.json
// says of its cause, from what can be known within microseconds: notes of
// ranks that failed on their own (outdir.Notes), and ranks on this host
// whose process had already gone. A rank on another host killed without a
// note (SIGKILL, the OOM killer) cannot be named: the reason says so.
func (s *session) explainSignal(pids []int) func(signal string) string {
	hosts, me, dir := s.hostsOf, s.comm.Host(), s.opts.OutputDir
	return func(signal string) string {
		// A rank's last heartbeat says how it ended, where it could (a
		// signal of its own): the reason then says that, as the hang does.
		var last map[int]outdir.Beat
		if b := s.beats.Load(); b != nil {
			last = b.local.Read(b.me.Run, b.me.Host)
		}
		var gone []goneRank
		for r, pid := range pids {
			// An unreaped rank counts as alive, so only one that ended
			// before the launcher signalled the others is named.
			if r != 0 && r < len(hosts) && hosts[r] == me && !outdir.PIDAlive(pid) {
				how := ""
				if b, ok := last[r]; ok && b.PID == pid {
					how = b.Ended
				}
				gone = append(gone, goneRank{fmt.Sprintf("rank %d (%s, pid %d)", r, me, pid), how})
			}
		}
		return signalReason(signal, gone, outdir.Notes(dir))
	}
}

// goneRank is a rank that had ended before the launcher's signal: who,
// and how its last heartbeat says it ended ("" for no word).
type goneRank struct{ who, how string }

// signalReason is run.json's reason for a run a signal ended.
func signalReason(signal string, gone []goneRank, notes []outdir.Note) string {
	switch {
	case len(notes) > 0:
		return fmt.Sprintf("signal %s from the launcher, after a rank failed on its own: %s", signal, outdir.NotesText(notes))
	case len(gone) > 0:
		var parts []string
		for _, g := range gone {
			if g.how != "" {
				parts = append(parts, fmt.Sprintf("%s had already ended (%s)", g.who, g.how))
			} else {
				parts = append(parts, fmt.Sprintf("%s had already ended without leaving a note (killed by a signal, such as SIGKILL or the OOM killer's, or crashed)", g.who))
			}
		}
		return fmt.Sprintf("signal %s from the launcher, after %s", signal, strings.Join(parts, ", and "))
	}
	return fmt.Sprintf("signal %s: the job was stopped from outside (cancelled, at its time limit, or by the launcher after a rank ended); "+
		"no rank is known to have failed first (one on another host killed by SIGKILL or the OOM killer leaves no note)", signal)
}
