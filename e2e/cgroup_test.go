package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// memoryCgroup makes a child memory cgroup limited to limit bytes, in
// cgroup v1's memory controller or in cgroup v2 where its root delegates
// memory, and removes it when the test ends; it skips where neither can be
// made (not root, no writable cgroup file system).
func memoryCgroup(t *testing.T, limit int64) string {
	t.Helper()
	var parent, limitFile string
	switch v2 := "/sys/fs/cgroup"; {
	case exists("/sys/fs/cgroup/memory/memory.limit_in_bytes"):
		parent, limitFile = "/sys/fs/cgroup/memory", "memory.limit_in_bytes"
	case strings.Contains(readText(filepath.Join(v2, "cgroup.subtree_control")), "memory"):
		parent, limitFile = v2, "memory.max"
	default:
		t.Skip("no memory cgroup hierarchy to make a child in")
	}
	dir := childCgroup(t, parent, "rsag-e2e", "memory")
	if err := os.WriteFile(filepath.Join(dir, limitFile), []byte(fmt.Sprint(limit)), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// childCgroup makes the cgroup name-PID under parent (of controller, for
// the messages), or skips, and removes it when the test ends, once the
// job's processes, which leave it as they exit, are gone.
func childCgroup(t *testing.T, parent, name, controller string) string {
	t.Helper()
	dir := filepath.Join(parent, fmt.Sprintf("%s-%d", name, os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Skipf("cannot make a %s cgroup: %v", controller, err)
	}
	t.Cleanup(func() {
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			err := os.Remove(dir)
			if err == nil || os.IsNotExist(err) {
				return
			}
			if time.Now().After(deadline) {
				t.Errorf("removing the test's cgroup: %v (processes: %q)", err, readText(filepath.Join(dir, "cgroup.procs")))
				return
			}
		}
	})
	return dir
}

func exists(path string) bool { _, err := os.Stat(path); return err == nil }

func readText(path string) string { b, _ := os.ReadFile(path); return string(b) }

// A job whose memory cgroup (what Slurm's --mem sets up) leaves less than
// the host's MemAvailable is refused on the cgroup's limit, naming the
// cgroup and --mem, before the OOM killer could end it half way; the same
// payload is within MemAvailable on this host, so the host check alone
// would have let it run.
func TestMemoryCgroupLimitIsHonoured(t *testing.T) {
	t.Parallel()
	cg := memoryCgroup(t, 512<<20)
	out := filepath.Join(t.TempDir(), "out")
	argv := append([]string{"sh", "-c", `echo $$ > "$0/cgroup.procs" && exec "$@"`, cg,
		"../scripts/mpirun.sh", "2", rsagBin, "-output-dir", out}, smoke...)
	r := launch(t, time.Minute, append(argv, "-set", "memory.payload_bytes=256M")...)
	if r.code != 2 {
		t.Fatalf("exit %d, want 2 (a bad input)\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	name := "/" + filepath.Base(cg)
	saidOnce(t, r.stderr, fmt.Sprintf("(memory cgroup %s: limit 0.50 GiB in ", name))
	saidOnce(t, r.stderr, "raise the job's memory limit (Slurm's --mem or --mem-per-cpu)")
	if entries, _ := os.ReadDir(out); len(entries) > 0 {
		t.Errorf("a refused run left files: %v", entries)
	}
}
