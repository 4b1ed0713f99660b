package memlimit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tree lays out files under a fresh root: path -> contents.
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, s := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

const hybridMounts = `31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`

// Slurm's cgroup v1 layout: the job has --mem=4G, its step and task have
// no limit of their own. The job's limit is found from the task's cgroup,
// its inactive file pages are not counted as used, and the page-rounded
// 2^63-1 of the unlimited levels is no limit.
func TestV1JobLimitAboveTheTask(t *testing.T) {
	job := "sys/fs/cgroup/memory/slurm/uid_0/job_7/"
	none := "9223372036854771712\n"
	root := tree(t, map[string]string{
		"proc/self/mountinfo":                        hybridMounts,
		"proc/self/cgroup":                           "4:memory:/slurm/uid_0/job_7/step_0/task_1\n1:cpu:/\n0::/\n",
		job + "memory.limit_in_bytes":                "4294967296\n",
		job + "memory.usage_in_bytes":                "1073741824\n",
		job + "memory.stat":                          "cache 1\ninactive_file 5\ntotal_inactive_file 268435456\n",
		job + "step_0/memory.limit_in_bytes":         none,
		job + "step_0/task_1/memory.limit_in_bytes":  none,
		"sys/fs/cgroup/memory/memory.limit_in_bytes": none,
	})
	l, ok, err := Find(root)
	if err != nil || !ok {
		t.Fatalf("Find = %+v, %v, %v", l, ok, err)
	}
	want := Limit{Cgroup: "/slurm/uid_0/job_7", File: "/sys/fs/cgroup/memory/slurm/uid_0/job_7/memory.limit_in_bytes",
		LimitBytes: 4 << 30, UsedBytes: 1<<30 - 256<<20}
	if l != want || l.Headroom() != 3<<30+256<<20 {
		t.Errorf("Find = %+v (headroom %d), want %+v", l, l.Headroom(), want)
	}
}

// cgroup v2: the tighter of two limited levels wins by headroom, not by
// limit, and "max" is no limit.
func TestV2TightestHeadroom(t *testing.T) {
	cg := "sys/fs/cgroup/"
	root := tree(t, map[string]string{
		"proc/self/mountinfo":          "25 1 0:22 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
		"proc/self/cgroup":             "0::/job/step\n",
		cg + "job/memory.max":          "8589934592\n", // 8 GiB, 7 GiB used
		cg + "job/memory.current":      "7516192768\n",
		cg + "job/memory.stat":         "anon 1\ninactive_file 0\n",
		cg + "job/step/memory.max":     "4294967296\n", // 4 GiB, 1 GiB used: more headroom
		cg + "job/step/memory.current": "1073741824\n",
		cg + "memory.max":              "max\n",
	})
	l, ok, err := Find(root)
	if err != nil || !ok || l.Cgroup != "/job" || l.Headroom() != 1<<30 || l.File != "/sys/fs/cgroup/job/memory.max" {
		t.Errorf("Find = %+v (headroom %d), %v, %v; want /job with 1 GiB", l, l.Headroom(), ok, err)
	}
}

// In a container the mount's root is the container's cgroup while
// /proc/self/cgroup names the host's path: the path's tail is found.
func TestContainerView(t *testing.T) {
	root := tree(t, map[string]string{
		"proc/self/mountinfo": hybridMounts,
		"proc/self/cgroup":    "4:memory:/process_api/ac21/rsag\n",
		"sys/fs/cgroup/memory/rsag/memory.limit_in_bytes": "536870912\n",
		"sys/fs/cgroup/memory/rsag/memory.usage_in_bytes": "0\n",
	})
	l, ok, err := Find(root)
	if err != nil || !ok || l.Cgroup != "/rsag" || l.Headroom() != 512<<20 {
		t.Errorf("Find = %+v, %v, %v; want /rsag with 512 MiB", l, ok, err)
	}
}

// No cgroups (no /proc, no memory hierarchy, or nothing limited) is no
// limit and no error; a limit that is not a number is an error naming it.
func TestNoLimitAndBadFiles(t *testing.T) {
	for name, files := range map[string]map[string]string{
		"no proc":    {},
		"no memory":  {"proc/self/mountinfo": "32 31 0:29 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n", "proc/self/cgroup": "1:cpu:/\n"},
		"unlimited":  {"proc/self/mountinfo": hybridMounts, "proc/self/cgroup": "4:memory:/\n0::/\n", "sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n"},
		"v2 no ctrl": {"proc/self/mountinfo": hybridMounts, "proc/self/cgroup": "0::/a\n", "sys/fs/cgroup/unified/a/cgroup.procs": ""},
	} {
		if l, ok, err := Find(tree(t, files)); ok || err != nil {
			t.Errorf("%s: Find = %+v, %v, %v; want no limit", name, l, ok, err)
		}
	}
	root := tree(t, map[string]string{
		"proc/self/mountinfo":                        hybridMounts,
		"proc/self/cgroup":                           "4:memory:/\n",
		"sys/fs/cgroup/memory/memory.limit_in_bytes": "lots\n",
	})
	if _, _, err := Find(root); err == nil || !strings.Contains(err.Error(), `memory.limit_in_bytes: "lots" is not a number of bytes`) {
		t.Errorf("a limit of lots: %v", err)
	}
	noUsage := tree(t, map[string]string{
		"proc/self/mountinfo":                        hybridMounts,
		"proc/self/cgroup":                           "4:memory:/\n",
		"sys/fs/cgroup/memory/memory.limit_in_bytes": "1024\n",
	})
	if _, _, err := Find(noUsage); err == nil || !strings.Contains(err.Error(), "memory.usage_in_bytes") {
		t.Errorf("a limit without its usage: %v", err)
	}
}

// Mount points with spaces are escaped in mountinfo.
func TestMountinfoEscapes(t *testing.T) {
	if got := unescape(`/sys/fs/my\040cgroup\134x`); got != `/sys/fs/my cgroup\x` {
		t.Errorf("unescape = %q", got)
	}
	if got := unescape(`/a\04`); got != `/a\04` {
		t.Errorf("a short escape = %q", got)
	}
}

// This machine's own cgroups read without error, and a limit found is a
// positive number with its usage no larger than a plausible machine.
func TestThisMachine(t *testing.T) {
	l, ok, err := Find("/")
	if err != nil {
		t.Fatal(err)
	}
	if ok && (l.LimitBytes <= 0 || l.UsedBytes < 0 || l.File == "") {
		t.Errorf("Find(/) = %+v", l)
	}
	t.Logf("limited %v: %+v", ok, l)
}
