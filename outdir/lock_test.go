package outdir

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"rsag/internal/exitcode"
)

// holdEnv makes the test binary a process that takes the lock on a
// directory and holds it until killed.
const holdEnv = "OUTDIR_TEST_HOLD"

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == GuardCommand { // StartGuard runs this binary
		code, _ := exitcode.Of(Guard(os.Args[2:]))
		os.Exit(code)
	}
	if dir := os.Getenv(holdEnv); dir != "" {
		if _, err := Acquire(dir, Holder{Host: "here", PID: os.Getpid(), Started: "then"}); err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		fmt.Println("held")
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

var me = Holder{Host: "here", PID: os.Getpid(), Started: "2026-01-01T00:00:00Z"}

func busy(t *testing.T, err error) *BusyError {
	t.Helper()
	var b *BusyError
	if !errors.As(err, &b) {
		t.Fatalf("got %v, want a BusyError", err)
	}
	return b
}

// A second run is refused with the first one's host and pid; once the
// first releases, the lock file is gone and the lock can be taken again.
func TestSecondRunIsRefusedUntilTheFirstReleases(t *testing.T) {
	dir := t.TempDir()
	first, err := Acquire(dir, me)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Acquire(dir, Holder{Host: "there", PID: 7, Started: "later"})
	b := busy(t, err)
	if b.Holder != me || b.Fresh {
		t.Errorf("refused with %+v", b)
	}
	for _, s := range []string{fmt.Sprintf("pid %d on host here", me.PID), LockFile, "wait for it to end, or choose another -output-dir"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("%q lacks %q", err, s)
		}
	}
	if err := first.Release(); err != nil {
		t.Fatal(err)
	}
	if err := first.Release(); err != nil {
		t.Errorf("a second Release: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, LockFile)); !os.IsNotExist(err) {
		t.Errorf("the lock file outlived its release: %v", err)
	}
	again, err := Acquire(dir, me)
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	again.Release()
}

// flock dies with its process: a holder killed with SIGKILL, which cannot
// clean up, leaves its record but not its lock.
func TestALockDiesWithItsHolder(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), holdEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(out)
		s.Scan()
		line <- s.Text()
	}()
	select {
	case l := <-line:
		if l != "held" {
			t.Fatalf("holder: %q", l)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the holder did not take the lock within 30 s")
	}
	_, err = Acquire(dir, me)
	if b := busy(t, err); b.Holder.PID != cmd.Process.Pid {
		t.Errorf("refused naming pid %d, want the holder's %d", b.Holder.PID, cmd.Process.Pid)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if _, err := os.Stat(filepath.Join(dir, LockFile)); err != nil {
		t.Fatalf("the killed holder's record should be left: %v", err)
	}
	l, err := Acquire(dir, me)
	if err != nil {
		t.Fatalf("a lock left by a killed process blocks: %v", err)
	}
	l.Release()
}

// record writes a lock file as a holder that is no longer locking it
// would have left it, touched ago.
func record(t *testing.T, dir string, h Holder, ago time.Duration) {
	t.Helper()
	path := filepath.Join(dir, LockFile)
	if err := os.WriteFile(path, []byte(fmt.Sprintf(`{"host":%q,"pid":%d,"started":%q}`, h.Host, h.PID, h.Started)), 0o644); err != nil {
		t.Fatal(err)
	}
	then := time.Now().Add(-ago)
	if err := os.Chtimes(path, then, then); err != nil {
		t.Fatal(err)
	}
}

// deadPID is the pid of a process that has ended.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// Where flock granted the lock, or cannot lock at all, the record left by
// an earlier holder decides: each case says whether it still counts.
func TestLeftRecords(t *testing.T) {
	live := exec.Command("sleep", "60")
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { live.Process.Kill(); live.Wait() }()
	dead := deadPID(t)
	cases := []struct {
		name    string
		noFlock bool
		left    Holder
		ago     time.Duration
		busy    bool
	}{
		{"flock granted: a dead holder on this host", false, Holder{Host: "here", PID: dead}, 0, false},
		{"flock granted: this host, even a live pid", false, Holder{Host: "here", PID: live.Process.Pid}, 0, false},
		{"flock granted: another host, fresh (node-local flock?)", false, Holder{Host: "node9", PID: 12}, time.Second, true},
		{"flock granted: another host, stale", false, Holder{Host: "node9", PID: 12}, 2 * staleAfter, false},
		{"no flock: a live pid on this host", true, Holder{Host: "here", PID: live.Process.Pid}, time.Second, true},
		{"no flock: a dead pid on this host", true, Holder{Host: "here", PID: dead}, time.Second, false},
		{"no flock: a live pid, but stale (the pid was reused)", true, Holder{Host: "here", PID: live.Process.Pid}, 2 * staleAfter, false},
		{"no flock: another host, fresh", true, Holder{Host: "node9", PID: 12}, time.Second, true},
		{"no flock: another host, stale", true, Holder{Host: "node9", PID: 12}, 2 * staleAfter, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.noFlock {
				saved := flock
				flock = func(*os.File) error { return syscall.ENOLCK }
				defer func() { flock = saved }()
			}
			dir := t.TempDir()
			record(t, dir, c.left, c.ago)
			l, err := Acquire(dir, me)
			if !c.busy {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				data, _ := os.ReadFile(filepath.Join(dir, LockFile))
				if !strings.Contains(string(data), fmt.Sprintf(`"pid":%d`, me.PID)) {
					t.Errorf("the lock does not record its new holder: %s", data)
				}
				l.Release()
				return
			}
			b := busy(t, err)
			if b.Holder.PID != c.left.PID || b.Holder.Host != c.left.Host {
				t.Errorf("refused naming %+v, want %+v", b.Holder, c.left)
			}
			if b.Fresh != !c.noFlock || (b.Fresh && !strings.Contains(err.Error(), "lapses 30s after it last beat")) {
				t.Errorf("%v (fresh %v)", err, b.Fresh)
			}
		})
	}
}

// Without flock, of two runs that start at once (both past the flock call
// before either reads the record), exactly one holds the lock and the
// other is refused naming it, every time.
func TestTwoStartsAtOnceWithoutFlock(t *testing.T) {
	saved := flock
	defer func() { flock = saved }()
	for round := range 10 {
		dir := t.TempDir()
		var arrived sync.WaitGroup
		arrived.Add(2)
		flock = func(*os.File) error { arrived.Done(); arrived.Wait(); return syscall.ENOLCK }
		type got struct {
			l   *Lock
			err error
		}
		results := make(chan got, 2)
		for pid := range 2 {
			go func() {
				l, err := Acquire(dir, Holder{Host: "here", PID: 100 + pid, Started: "now"})
				results <- got{l, err}
			}()
		}
		a, b := <-results, <-results
		held := 0
		for _, r := range []got{a, b} {
			if r.err == nil {
				held++
				defer r.l.Release()
				continue
			}
			if bz := busy(t, r.err); bz.Holder.PID != 100 && bz.Holder.PID != 101 {
				t.Errorf("round %d: refused naming %+v", round, bz.Holder)
			}
		}
		if held != 1 {
			t.Fatalf("round %d: %d of 2 simultaneous starts hold the lock (%v, %v)", round, held, a.err, b.err)
		}
	}
}

// A file system that refuses flock for another reason is an error, said.
func TestFlockErrorIsSaid(t *testing.T) {
	saved := flock
	flock = func(*os.File) error { return syscall.EIO }
	defer func() { flock = saved }()
	if _, err := Acquire(t.TempDir(), me); err == nil || !strings.Contains(err.Error(), "locking") {
		t.Errorf("got %v", err)
	}
}

// The holder's heartbeat is the lock file's modification time.
func TestHolderBeats(t *testing.T) {
	saved := beatEvery
	beatEvery = 20 * time.Millisecond
	defer func() { beatEvery = saved }()
	dir := t.TempDir()
	l, err := Acquire(dir, me)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	path := filepath.Join(dir, LockFile)
	old := time.Now().Add(-time.Hour)
	os.Chtimes(path, old, old)
	deadline := time.Now().Add(5 * time.Second)
	for {
		st, err := os.Stat(path)
		if err == nil && time.Since(st.ModTime()) < time.Minute {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not touched within 5 s of beats every %v: %v, %v", beatEvery, st.ModTime(), err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
