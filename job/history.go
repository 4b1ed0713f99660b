package job

import (
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"rsag/config"
	"rsag/history"
)

// ExitHistory is a run that passed but could not be appended to its
// history database: the run's results stand (run.json says complete), the
// history lacks it. A run that failed keeps its own exit status, and says
// the append failed too.
const ExitHistory = 5

// historyFile is the history database the run appends itself to, and
// what named it: -history first, then RSAG_HISTORY (rank 0's: only rank 0
// appends), then the config's history key; "" for none.
func historyFile(flag, env string, cfg config.Config) (path, from string) {
	switch {
	case flag != "":
		return flag, "-history"
	case env != "":
		return env, history.Env
	case cfg.History != "":
		return cfg.History, "the config's history key"
	}
	return "", ""
}

// checkHistory refuses, on every rank alike and before anything is
// measured, a history database that rank 0 (which appends the run at the
// end) could not append to, naming where it was given and the fix.
func (s *session) checkHistory(cfg config.Config) error {
	var err error
	if s.comm.Rank() == 0 {
		path, from := historyFile(s.opts.History, s.getenv(history.Env), cfg)
		if path != "" {
			cerr := history.Check(path)
			if cerr == nil {
				cerr = history.CheckInside(path, s.opts.OutputDir)
			}
			if cerr != nil {
				err = fmt.Errorf("%s: %v (or drop it: the run needs no history)", from, cerr)
			}
			s.history = path
		}
	}
	return s.agree(err, ExitBadArgs, "the history database cannot take the run")
}

// appendHistory appends the ended run, on rank 0, from its output dir once
// run.json is final (complete or failed; a failed run is kept as failed
// and is never a baseline), and returns the run's exit status: code, or
// ExitHistory when the run passed and the append failed, said on stderr
// with the command that adds it later. A run that wrote nothing (refused
// before its output dir) is not appended. Then rank 0 prints the run's
// verdict (code, verr): the last line, whatever the append said.
func (s *session) appendHistory(st *state, code int, verr error) int {
	verdict := func(code int) func() { return func() { s.printVerdict(st, code, verr) } }(code)
	if s.comm.Rank() != 0 || s.history == "" || st.log.status() == "" {
		verdict()
		return code
	}
	// The run is over: waiting for another writer's lock is no hang.
	s.wd.Disarm()
	add := fmt.Sprintf("rsag history -append %s %s", s.opts.OutputDir, s.history)
	if code == ExitOK {
		code = ExitHistory // until the run is in the history
	}
	// A signal now (the watchdog's handler would exit with the verdict's
	// status and no word) ends the process with code, saying the run was
	// not added and how to add it: its transaction is never committed.
	sigs := make(chan os.Signal, 1)
	if s.process { // a goroutine rank of a test leaves the process's signals alone
		signal.Reset(syscall.SIGINT, syscall.SIGTERM)
		signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	}
	var mu sync.Mutex
	done := false
	go func() {
		name := "SIGTERM"
		if <-sigs == syscall.SIGINT {
			name = "SIGINT"
		}
		mu.Lock() // never while the append's outcome is being said
		if !done {
			fmt.Fprintf(s.opts.Stderr, "rsag: received %s while adding the run to history %s: it was not added (the verdict below stands); add it with: %s\n",
				name, s.history, add)
			verdict()
			s.opts.Exit(code)
		}
		mu.Unlock()
	}()
	id, status, err := appendRun(s.history, s.opts.OutputDir, func() {
		s.printf("history: %s is held by another writer: waiting up to %v\n", s.history, history.BusyTimeout)
	})
	mu.Lock()
	defer mu.Unlock()
	done = true
	// From here a signal has its default effect: the process ends, non-zero.
	if s.process {
		signal.Stop(sigs)
		signal.Reset(syscall.SIGINT, syscall.SIGTERM)
	}
	close(sigs) // no signal comes now: the goroutine above ends, done
	if err != nil {
		fmt.Fprintf(s.opts.Stderr, "rsag: the run's verdict below stands, but it was not added to history %s: %v; add it with: %s\n",
			s.history, err, add)
		verdict()
		return code
	}
	s.printf("history: added as run %d (%s) to %s\n", id, status, s.history)
	verdict()
	if code == ExitHistory {
		return ExitOK
	}
	return code
}

func appendRun(file, dir string, waiting func()) (int64, string, error) {
	r, err := history.LoadRun(dir)
	if err != nil {
		return 0, "", err
	}
	db, err := history.OpenWaiting(file, history.Create, waiting)
	if err != nil {
		return 0, "", err
	}
	id, err := db.Append(r)
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	return id, r.Status, err
}
