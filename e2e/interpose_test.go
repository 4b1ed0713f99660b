package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

// Faults come from outside rsag (STYLE.md): PMPI interposers, small C
// files in testdata that the tests build with mpicc and load into the ranks
// with mpirun -x LD_PRELOAD. Each is built once per run of the tests.
var interposers = struct {
	mu    sync.Mutex
	dir   string
	built map[string]string
}{built: map[string]string{}}

// interposer builds testdata/<name>.c into a shared library, once, and
// returns its path.
func interposer(t *testing.T, name string) string {
	t.Helper()
	interposers.mu.Lock()
	defer interposers.mu.Unlock()
	if lib, ok := interposers.built[name]; ok {
		return lib
	}
	mpicc, err := exec.LookPath("mpicc")
	if err != nil {
		t.Fatalf("mpicc not found, to build testdata/%s.c: install Open MPI's development files (make deps)", name)
	}
	if interposers.dir == "" {
		if interposers.dir, err = os.MkdirTemp("", "rsag-e2e-interposers-"); err != nil {
			t.Fatal(err)
		}
	}
	lib := filepath.Join(interposers.dir, "lib"+name+".so")
	if out, err := exec.Command(mpicc, "-shared", "-fPIC", "-Wall", "-Werror", "-o", lib, filepath.Join("testdata", name+".c")).CombinedOutput(); err != nil {
		t.Fatalf("building testdata/%s.c: %v\n%s", name, err, out)
	}
	interposers.built[name] = lib
	return lib
}

// removeInterposers removes what interposer built (TestMain, at the end).
func removeInterposers() {
	if interposers.dir != "" {
		os.RemoveAll(interposers.dir)
	}
}

// stall is mpirun's arguments that make rank stall in MPI_<call> (at the
// calls moving bytes bytes, when bytes >= 0) through testdata/stall.c.
func stall(t *testing.T, rank int, call string, bytes int64) []string {
	t.Helper()
	args := []string{"-x", "LD_PRELOAD=" + interposer(t, "stall"), "-x", "STALL_RANK=" + strconv.Itoa(rank), "-x", "STALL_CALL=" + call}
	if bytes >= 0 {
		args = append(args, "-x", "STALL_BYTES="+strconv.FormatInt(bytes, 10))
	}
	return args
}

// startStalled starts rsag on np ranks under mpirun with extra mpirun
// arguments (an interposer's: stall's, slow's) before the binary.
func startStalled(t *testing.T, np int, mpirunArgs []string, args ...string) *job {
	t.Helper()
	argv := append(append(append([]string{strconv.Itoa(np)}, mpirunArgs...), rsagBin), args...)
	return startCmd(t, exec.Command("../scripts/mpirun.sh", argv...))
}

// stalledEnd is how a job with a stall injected ended.
type stalledEnd struct {
	code           int
	stdout, stderr string // stderr unfolded, as job.output gives it
	rawStderr      string // as printed, folded at the terminal's width
	took           time.Duration
}

// runStalled runs start's job to its end, within limit, once: the jobs
// give MPI's start-up a deadline of its own (startup_timeout_s), so that a
// loaded machine's slow MPI_Init is not taken for the stall.
func runStalled(t *testing.T, limit time.Duration, start func() *job) stalledEnd {
	t.Helper()
	began := time.Now()
	j := start()
	var e stalledEnd
	e.code = j.wait(t, limit)
	e.took = time.Since(began)
	e.stdout, e.stderr = j.output()
	e.rawStderr = j.rawStderr()
	return e
}

// copyFile copies an interposer where every emulated host sees it (each
// host has its own /tmp, where interposer builds).
func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o755)
}
