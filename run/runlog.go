package run

import (
	"fmt"
	"os"
	"sync"
	"time"

	"rsag/report"
)

// runLog is rank 0's run.json. The main goroutine writes "running" and
// the final status; the watchdog and signal goroutines may write "failed"
// at any moment, so writes are serialised and the first final status wins.
// A nil *runLog (every rank but 0) does nothing.
type runLog struct {
	mu    sync.Mutex
	dir   string
	rec   report.Run
	final bool
}

func (l *runLog) write(status, reason string, files []string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.final {
		return nil
	}
	l.rec.Status, l.rec.Reason = status, reason
	if status != report.StatusRunning {
		l.final = true
		l.rec.Ended = time.Now().UTC().Format(time.RFC3339)
		l.rec.Files = files
	}
	return report.WriteRun(l.dir, l.rec)
}

// finish writes the final status and the files written.
func (l *runLog) finish(status, reason string, files []string) error {
	if l == nil {
		return nil
	}
	return l.write(status, reason, files)
}

// fail marks the run failed; an error writing it is printed, since the run
// has failed already.
func (l *runLog) fail(reason string) {
	if l == nil {
		return
	}
	if err := l.write(report.StatusFailed, reason, nil); err != nil {
		fmt.Fprintf(os.Stderr, "rsag: rank 0: marking the run failed in %s: %v\n", report.RunFile, err)
	}
}

// startRunLog has rank 0 write run.json saying "running"; every rank
// learns whether it could, so that a failure ends every rank alike.
func (s *session) startRunLog(backend string) (*runLog, error) {
	var l *runLog
	var err error
	if s.comm.Rank() == 0 {
		l = &runLog{dir: s.opts.OutputDir, rec: report.Run{Version: s.opts.Version, Commit: s.opts.Commit, Backend: backend,
			WorldSize: s.comm.Size(), Config: s.opts.ConfigPath, Started: s.opts.Started.UTC().Format(time.RFC3339)}}
		if err = l.write(report.StatusRunning, "", nil); err == nil {
			s.end.SetMarkFailed(l.fail)
		}
	}
	if err := s.agree(err, ExitFailed, "writing "+report.RunFile+" in "+s.opts.OutputDir); err != nil {
		return nil, err
	}
	return l, nil
}
