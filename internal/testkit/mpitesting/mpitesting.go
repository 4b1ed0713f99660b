// Package mpitesting runs test programs under mpirun, for the tests of the
// packages that use MPI: one process cannot test a collective beyond a
// singleton, so each such package has a small main package that checks
// exact values on several ranks and exits non-zero on any mismatch.
package mpitesting

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// sessionDirVar is Open MPI's orte_tmpdir_base, where a job keeps its
// session directory; other MPIs ignore it. Open MPI 4 creates
// /tmp/ompi.<host>.<uid> for every job with a race: two jobs starting at
// once, as when go test runs packages in parallel, can fail in orte_init
// with "mkdir ... File exists". Each test job gets a directory of its own.
const sessionDirVar = "OMPI_MCA_orte_tmpdir_base"

// IsolateSessionDir gives the MPI job this process is about to start (the
// singleton of a TestMain) a session directory of its own; see
// sessionDirVar. Call it before MPI starts, and the returned function after
// MPI has finalized.
func IsolateSessionDir() (remove func(), err error) {
	dir, err := os.MkdirTemp("", "rsag-ompi-")
	if err != nil {
		return nil, err
	}
	// With cgo, os.Setenv also sets the C environment, which MPI reads.
	if err := os.Setenv(sessionDirVar, dir); err != nil {
		return nil, errors.Join(err, os.RemoveAll(dir))
	}
	return func() { _ = os.RemoveAll(dir) }, nil
}

// yieldVar is Open MPI's mpi_yield_when_idle: a rank that waits for
// another gives up its core (sched_yield) instead of spinning on it.
const yieldVar = "OMPI_MCA_mpi_yield_when_idle"

// YieldWhenIdle makes the MPI jobs this process starts yield their cores
// while they wait (yieldVar), unless the environment already says. Open
// MPI yields by itself only when one job has more ranks than the machine
// has cores; a test machine runs jobs side by side, and there a rank that
// spins while it waits keeps the core from the rank it waits for: four
// 2-rank jobs at once on 2 cores took 23 s spinning and 10 s yielding.
// What tests check is what rsag does, not how fast a collective runs.
func YieldWhenIdle() error {
	if _, ok := os.LookupEnv(yieldVar); ok {
		return nil
	}
	return os.Setenv(yieldVar, "1")
}

// Main is the TestMain of a package whose tests share one MPI world: a
// process started without mpirun is a singleton of size 1, and MPI starts
// once per process. It locks the main goroutine to its thread (MPI's calls
// stay on it), gives the job a session directory of its own
// (IsolateSessionDir), starts MPI with start and stores the world in
// *world, runs the tests, finalizes MPI and exits with the tests' code, or
// 1 when MPI would not start or finalize; pkg names the package in what it
// prints.
func Main[W interface{ Finalize() error }](m *testing.M, pkg string, start func() (W, error), world *W) {
	runtime.LockOSThread()
	removeSessionDir, err := IsolateSessionDir()
	if err != nil {
		fmt.Fprintln(os.Stderr, pkg+" tests:", err)
		os.Exit(1)
	}
	w, err := start()
	if err != nil {
		fmt.Fprintln(os.Stderr, pkg+" tests: Start:", err)
		removeSessionDir()
		os.Exit(1)
	}
	*world = w
	code := m.Run()
	if err := w.Finalize(); err != nil {
		fmt.Fprintln(os.Stderr, pkg+" tests: Finalize:", err)
		code = 1
	}
	removeSessionDir()
	os.Exit(code)
}

// JobSessionDir is the environment entry that gives one MPI job started
// from a test a session directory of its own (see sessionDirVar): inside
// the process's own (IsolateSessionDir's) when it has one, so that its
// jobs can still be told by it, and removed with the test otherwise.
func JobSessionDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if base := os.Getenv(sessionDirVar); base != "" {
		var err error
		if dir, err = os.MkdirTemp(base, "job-"); err != nil {
			t.Fatal(err)
		}
	}
	return sessionDirVar + "=" + dir
}

// Mpirun builds the main package pkg (an import path) and runs it under
// mpirun on np ranks with args. t fails when the build fails, when the
// program exits non-zero, or when it is still running after timeout, so
// that a hang fails the test instead of hanging it. Mpirun skips t when
// mpirun is not on PATH.
func Mpirun(t *testing.T, pkg string, np int, timeout time.Duration, args ...string) {
	t.Helper()
	mpirun, err := exec.LookPath("mpirun")
	if err != nil {
		t.Skipf("mpirun is not on PATH, so %s cannot run on %d ranks: install an MPI (Open MPI: mpirun, mpicc)", pkg, np)
	}
	// go test puts its own go command first on PATH (Go 1.19 on); the build
	// inherits the environment, CGO_CFLAGS and CGO_LDFLAGS included.
	bin := filepath.Join(t.TempDir(), path.Base(pkg))
	if out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", pkg, err, out)
	}

	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	argv := append([]string{"--allow-run-as-root", "--oversubscribe", "-np", strconv.Itoa(np), bin}, args...)
	cmd := exec.CommandContext(ctx, mpirun, argv...)
	cmd.Env = append(os.Environ(), JobSessionDir(t))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	// On a timeout mpirun gets SIGTERM, which it forwards to the ranks before
	// exiting (Open MPI gives each rank a process group of its own, so mpirun
	// is the one to signal); after WaitDelay it is killed. mpirun runs in a
	// process group of its own so that anything else it started goes too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	start := time.Now()
	err = cmd.Run()
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // whatever is left of the group; ESRCH when none
	}
	t.Logf("mpirun -np %d %s (%.1f s):\n%s", np, path.Base(pkg), time.Since(start).Seconds(), out.Bytes())
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("%s on %d ranks was still running after %s (a hang?)", pkg, np, timeout)
	}
	if err != nil {
		t.Fatalf("%s on %d ranks: %v", pkg, np, err)
	}
}
