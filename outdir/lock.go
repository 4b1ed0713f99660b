package outdir

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"rsag/internal/atomicfile"
	"rsag/internal/cadence"
)

// LockFile is the lock in an output directory. Rank 0 holds it from the
// output-dir check to the end of the run and removes it then; it holds
// the holder's host, pid and start as JSON, and its modification time is
// the holder's heartbeat.
const LockFile = ".rsag.lock"

// beatEvery is how often a holder touches the lock file (a variable for
// tests); staleAfter is how long without a touch makes a record dead when
// the lock itself cannot tell (see Acquire). They are run.json's heartbeat
// and staleness, so that a lock and its run lapse together.
var beatEvery = HeartbeatEvery

const staleAfter = StaleAfter

// settle is how long a run without flock waits after writing its record
// before it reads it back (a variable for tests): longer than two runs
// starting at once take between reading no record and writing theirs.
var settle = cadence.LockSettle

// Holder is who holds a lock.
type Holder struct {
	Host    string `json:"host"`
	PID     int    `json:"pid"`
	Started string `json:"started"` // RFC 3339, UTC
}

// BusyError is a directory another live run holds.
type BusyError struct {
	Path   string
	Holder Holder        // zero when its record could not be read
	Beat   time.Duration // since the holder last touched the lock
	// Fresh: the file system granted the lock, but the holder on another
	// host touched it within staleAfter, so its flock may be node-local
	// (Lustre localflock, NFS nolock) or the holder just died.
	Fresh bool
}

func (e *BusyError) Error() string {
	who := "another rsag run"
	if e.Holder.PID != 0 {
		who = fmt.Sprintf("another rsag run (pid %d on host %s, started %s, its lock last touched %v ago)",
			e.Holder.PID, e.Holder.Host, e.Holder.Started, e.Beat.Round(time.Second))
	}
	msg := fmt.Sprintf("%s holds %s: wait for it to end, or choose another -output-dir", who, e.Path)
	if e.Fresh {
		msg += fmt.Sprintf(" (if that run has ended, its lock lapses %v after it last beat)", staleAfter)
	}
	return msg
}

// Lock is a held lock on an output directory.
type Lock struct {
	mu   sync.Mutex // Release may come from the main goroutine and a signal's at once
	f    *os.File
	dir  string
	path string
	stop chan struct{}
	done chan struct{}
}

// flock is flock(2), a variable so that tests can play a file system
// without it.
var flock = func(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) }

// unsupported is what flock(2) returns on a file system without it.
func unsupported(err error) bool {
	return errors.Is(err, syscall.ENOLCK) || errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ENOSYS)
}

// Acquire takes the lock on dir (which must exist) for me, or returns a
// *BusyError naming the live run that holds it.
//
// The lock is flock(2) on LockFile, which the kernel (or the file server)
// releases when its holder dies, however it dies: a dead run never blocks
// the next. Its record decides only where flock cannot: on a file system
// without flock, a record is live while its holder touched it within
// staleAfter and, on this host, its pid still runs, and of two runs that
// start at once the one whose record was overwritten yields; and a record from
// another host touched within staleAfter refuses the lock even though
// flock granted it, since flock may be local to each node there.
func Acquire(dir string, me Holder) (*Lock, error) {
	path := filepath.Join(dir, LockFile)
	// A holder removes the file as it releases it: a lock taken on a file
	// already removed is no lock, and is taken again on the new one.
	for range 5 {
		// Never through a link: one planted at the lock's name would have
		// the lock's record written into whatever it points to.
		f, err := atomicfile.OpenIn(dir, LockFile, os.O_RDWR|os.O_CREATE, 0o644)
		var le *atomicfile.LinkError
		var ke *atomicfile.KindError
		if errors.As(err, &le) || errors.As(err, &ke) {
			return nil, err // it names the path and what is there
		}
		if err != nil {
			return nil, fmt.Errorf("creating the lock %s: %w", path, err)
		}
		ferr := flock(f)
		if errors.Is(ferr, syscall.EWOULDBLOCK) {
			h, beat, _ := readHolder(f)
			f.Close()
			return nil, &BusyError{Path: path, Holder: h, Beat: beat}
		}
		if ferr != nil && !unsupported(ferr) {
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", path, ferr)
		}
		if !atomicfile.SameFile(f, dir, LockFile) {
			f.Close()
			continue
		}
		if h, beat, ok := readHolder(f); ok && beat < staleAfter &&
			(h.Host != me.Host || (ferr != nil && PIDAlive(h.PID))) {
			f.Close()
			return nil, &BusyError{Path: path, Holder: h, Beat: beat, Fresh: ferr == nil}
		}
		l := &Lock{f: f, dir: dir, path: path, stop: make(chan struct{}), done: make(chan struct{})}
		if err := l.write(me); err != nil {
			f.Close()
			return nil, fmt.Errorf("writing the lock %s: %w", path, err)
		}
		if ferr != nil {
			// Without flock, two runs starting at once can both find no
			// record and both write theirs; the last write stands, so
			// after both have written, the one whose record is gone yields.
			time.Sleep(settle)
			if h, beat, ok := readHolder(f); !ok || h != me {
				f.Close()
				return nil, &BusyError{Path: path, Holder: h, Beat: beat}
			}
		}
		go l.beat()
		return l, nil
	}
	return nil, fmt.Errorf("locking %s: it was replaced each time it was locked; is another run starting there?", path)
}

func (l *Lock) write(me Holder) error {
	data, err := json.Marshal(me)
	if err != nil {
		return err
	}
	if _, err := l.f.WriteAt(append(data, '\n'), 0); err != nil {
		return err
	}
	return l.f.Truncate(int64(len(data) + 1))
}

// beat touches the lock every beatEvery until Release.
func (l *Lock) beat() {
	defer close(l.done)
	t := time.NewTicker(beatEvery)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case now := <-t.C:
			_ = touch(l.f, now) // a missed beat only ages the record
		}
	}
}

// Release removes the lock file and releases the lock. Safe on nil and
// twice.
func (l *Lock) Release() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	close(l.stop)
	<-l.done
	var err error
	// Still holding it, so no other run can have replaced it: ours to remove.
	if atomicfile.SameFile(l.f, l.dir, LockFile) {
		err = atomicfile.Remove(l.dir, LockFile)
	}
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	l.f = nil
	return err
}

// readHolder reads the record in f and how long ago it was last touched;
// ok is false for an empty or unreadable record.
func readHolder(f *os.File) (h Holder, beat time.Duration, ok bool) {
	st, err := f.Stat()
	if err != nil || st.Size() == 0 || st.Size() > 4096 {
		return h, 0, false
	}
	data := make([]byte, st.Size())
	if _, err := f.ReadAt(data, 0); err != nil {
		return h, 0, false
	}
	if err := json.Unmarshal(data, &h); err != nil || h.PID == 0 {
		return Holder{}, 0, false
	}
	return h, max(time.Since(st.ModTime()), 0), true
}

// touch sets f's times to now through its descriptor: the file the lock
// holds, never whatever its name points to by now.
func touch(f *os.File, now time.Time) error {
	tv := unix.NsecToTimeval(now.UnixNano())
	return unix.Futimes(int(f.Fd()), []unix.Timeval{tv, tv})
}

// PIDAlive reports whether process pid runs on this host: kill(pid, 0)
// finds it (EPERM: another user's). A process that has ended but not been
// reaped yet counts as alive.
func PIDAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
