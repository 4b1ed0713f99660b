package outdir

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"rsag/internal/atomicfile"
	"rsag/internal/exitcode"
)

// GuardCommand is the hidden first argument that makes rsag a run's guard
// (see StartGuard) instead of a run.
const GuardCommand = "__guard"

// StartGuard starts, beside rank 0 (pid, on host), a small process that
// outlives it: when rank 0 ends without marking run.json, killed outright
// (SIGKILL, the OOM killer, or mpirun, which on a second SIGTERM kills its
// ranks at once), the guard marks it failed. It shares the lock, so that no
// other run takes the directory before it has, and leaves the job's process
// group and session, so that what kills the ranks does not kill it. The
// returned pipe must stay open as long as rank 0 lives: its closing, which
// the kernel does however rank 0 ends, is the guard's cue.
func StartGuard(exe string, lock *Lock, dir, host string, pid int) (*os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	cmd := exec.Command(exe, GuardCommand, dir, host, strconv.Itoa(pid))
	cmd.Stdin = r
	// Rank 0's stderr: when rank 0 dies first, the guard says what it
	// found where rank 0 would have.
	cmd.Stderr = os.Stderr
	cmd.ExtraFiles = []*os.File{lock.f} // fd 3
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		w.Close()
		return nil, fmt.Errorf("starting the guard of %s: %w", RunFile, err)
	}
	// Not waited for: it ends after this process does. Release keeps the
	// process from lingering as a zombie should this process live on.
	_ = cmd.Process.Release()
	return w, nil
}

// Guard is the guard's whole life (args: dir, host, pid): it waits for its
// stdin to close, then marks the run failed if run.json still says running
// for that pid, and releases the lock it shares (fd 3). Its error carries
// the process's exit status (internal/exitcode); it prints nothing: what
// it finds goes into run.json and, when rank 0 died first, rank 0's stderr.
func Guard(args []string) error {
	// Its own session has no terminal; a hang-up or Ctrl-C meant for the
	// job must not end it before it has done its one job.
	signal.Ignore(syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM, syscall.SIGPIPE)
	if len(args) != 3 {
		return exitcode.Silent(2)
	}
	pid, err := strconv.Atoi(args[2])
	if err != nil {
		return exitcode.Silent(2)
	}
	lock := os.NewFile(3, "lock")
	if err := guard(os.Stdin, os.Stderr, lock, args[0], args[1], pid); err != nil {
		return exitcode.Silent(1)
	}
	return nil
}

// guard waits for stdin's end, then marks dir's run.json failed if rank 0
// (pid on host) left it running, and removes the lock file if lock is
// still it.
func guard(stdin io.Reader, stderr io.Writer, lock *os.File, dir, host string, pid int) error {
	_, _ = io.Copy(io.Discard, stdin)
	defer func() {
		if lock != nil {
			if atomicfile.SameFile(lock, dir, LockFile) {
				atomicfile.Remove(dir, LockFile)
			}
			lock.Close()
		}
	}()
	run, err := ReadRecord(dir)
	if err != nil || run.Status != StatusRunning || run.PID != pid || run.Host != host {
		return nil // marked, or not the run this guard watches
	}
	run.Status, run.Ended = StatusFailed, time.Now().UTC().Format(time.RFC3339)
	run.Reason = KilledReason(host, pid, Notes(dir))
	// What every rank was doing, from their heartbeats: rank 0 cannot say.
	h := Hang{World: run.WorldSize, Beats: ReadBeats(dir, RunID(run.Host, run.PID, run.Started)), Now: time.Now(),
		Host: host, State: ProcState, Self: -1}
	if text := h.Text(); text != "" {
		run.Reason += "; hang: " + text
		fmt.Fprintf(stderr, "rsag: guard of rank 0 (%s, pid %d): rank 0 ended before it could say; hang: %s\n", host, pid, text)
	}
	return WriteRecord(dir, run)
}

// KilledReason is run.json's reason for a run whose rank 0 was killed
// before it could say why, with what ranks that failed on their own said.
func KilledReason(host string, pid int, notes []Note) string {
	reason := fmt.Sprintf("rank 0 (%s, pid %d) ended before it could mark the run: killed outright (SIGKILL, the OOM killer, "+
		"or a launcher forcing the job down, as mpirun does on a second SIGTERM) or crashed; its guard marked it", host, pid)
	if len(notes) > 0 {
		reason += "; before that, a rank failed on its own: " + NotesText(notes)
	}
	return reason
}
