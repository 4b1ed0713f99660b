// Package memlimit finds the memory cgroup limit that bounds this process:
// under Slurm's --mem (task/cgroup) or a container's memory limit the OOM
// killer acts at the cgroup's limit, long before the host's MemAvailable
// runs out. It reads cgroup v1's memory controller and cgroup v2 alike,
// and every level from the process's own cgroup up to the mount's root,
// since a job's limit usually sits above the step's or task's.
package memlimit

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Limit is one cgroup's memory limit and what is charged to it now.
type Limit struct {
	Cgroup     string // the cgroup's path under its hierarchy, "/slurm/uid_0/job_7/step_0"
	File       string // the file the limit was read from
	LimitBytes int64
	// UsedBytes is the cgroup's usage less its inactive file pages, which
	// the kernel reclaims before it OOM-kills (the working set).
	UsedBytes int64
}

// Headroom is what the cgroup can still take before its limit.
func (l Limit) Headroom() int64 { return max(l.LimitBytes-l.UsedBytes, 0) }

// unlimited is the smallest value cgroup v1 writes for "no limit" (it
// rounds 2^63-1 down to a page); anything at or above it is no limit.
const unlimited = 1 << 62

// Find returns the limit with the least headroom among this process's
// memory cgroups and their ancestors; ok is false where none is limited
// (or there are no cgroups: not Linux, or /proc not mounted). root is "/"
// but for tests, which lay out a proc and sys tree of their own.
func Find(root string) (tightest Limit, ok bool, err error) {
	mounts, err := cgroupMounts(filepath.Join(root, "proc/self/mountinfo"))
	if err != nil || len(mounts) == 0 {
		return Limit{}, false, err
	}
	paths, err := cgroupPaths(filepath.Join(root, "proc/self/cgroup"))
	if err != nil {
		return Limit{}, false, err
	}
	for _, h := range hierarchies {
		mount, ok1 := mounts[h.name]
		path, ok2 := paths[h.name]
		if !ok1 || !ok2 {
			continue
		}
		dir, cg := resolve(filepath.Join(root, mount), path)
		for {
			l, limited, err := h.read(dir)
			if err != nil {
				return Limit{}, false, err
			}
			if limited {
				l.Cgroup, l.File = cg, underRoot(root, l.File)
				if !ok || l.Headroom() < tightest.Headroom() {
					tightest, ok = l, true
				}
			}
			if cg == "/" {
				break
			}
			dir, cg = filepath.Dir(dir), filepath.Dir(cg)
		}
	}
	return tightest, ok, nil
}

// underRoot is file's path as the process sees it, without the test's root.
func underRoot(root, file string) string {
	rel, err := filepath.Rel(root, file)
	if err != nil {
		return file
	}
	return "/" + rel
}

// resolve finds the directory of cgroup path under a hierarchy's mount. In a
// container the mount's root is the container's own cgroup while
// /proc/self/cgroup may still name the host's path, so leading components
// are dropped until the directory exists; the mount's root is the last try.
func resolve(mount, path string) (dir, cgroup string) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	for i := range parts {
		rest := "/" + strings.Join(parts[i:], "/")
		if rest == "/" {
			break
		}
		if st, err := os.Stat(filepath.Join(mount, rest)); err == nil && st.IsDir() {
			return filepath.Join(mount, rest), rest
		}
	}
	return mount, "/"
}

// hierarchy is how one cgroup version keeps its memory accounting.
type hierarchy struct {
	name                 string // "memory" (v1's controller) or "" (v2's unified tree)
	limitFile, usageFile string
	inactiveKeys         []string // memory.stat's inactive file pages, first found wins
	noLimit              string   // what the limit file says for none, besides a huge number
}

var hierarchies = []hierarchy{
	{name: "memory", limitFile: "memory.limit_in_bytes", usageFile: "memory.usage_in_bytes",
		inactiveKeys: []string{"total_inactive_file", "inactive_file"}},
	{name: "", limitFile: "memory.max", usageFile: "memory.current",
		inactiveKeys: []string{"inactive_file"}, noLimit: "max"},
}

// read returns dir's limit; limited is false where it has none, or no
// memory accounting (a v2 cgroup whose parent does not enable memory).
func (h hierarchy) read(dir string) (l Limit, limited bool, err error) {
	l.File = filepath.Join(dir, h.limitFile)
	text, err := os.ReadFile(l.File)
	if errors.Is(err, fs.ErrNotExist) {
		return l, false, nil
	}
	if err != nil {
		return l, false, fmt.Errorf("memlimit: %w", err)
	}
	s := strings.TrimSpace(string(text))
	if s == h.noLimit {
		return l, false, nil
	}
	if l.LimitBytes, err = parseBytes(l.File, s); err != nil || l.LimitBytes >= unlimited {
		return l, false, err
	}
	usage, err := readBytes(filepath.Join(dir, h.usageFile))
	if err != nil {
		return l, false, err
	}
	inactive, err := statValue(filepath.Join(dir, "memory.stat"), h.inactiveKeys)
	if err != nil {
		return l, false, err
	}
	l.UsedBytes = max(usage-inactive, 0)
	return l, true, nil
}

func readBytes(file string) (int64, error) {
	text, err := os.ReadFile(file)
	if err != nil {
		return 0, fmt.Errorf("memlimit: %w", err)
	}
	return parseBytes(file, strings.TrimSpace(string(text)))
}

func parseBytes(file, s string) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("memlimit: %s: %q is not a number of bytes", file, s)
	}
	return n, nil
}

// statValue is the first of keys in a memory.stat file; 0 where the file
// or the keys are missing, as they are on kernels that do not keep them.
func statValue(file string, keys []string) (int64, error) {
	f, err := os.Open(file)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("memlimit: %w", err)
	}
	defer f.Close()
	found := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), " "); ok {
			found[k] = v
		}
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("memlimit: %s: %w", file, err)
	}
	for _, k := range keys {
		if v, ok := found[k]; ok {
			return parseBytes(file+": "+k, strings.TrimSpace(v))
		}
	}
	return 0, nil
}

// cgroupMounts maps "memory" to cgroup v1's memory controller's mount
// point and "" to cgroup v2's, from /proc/self/mountinfo's lines:
// "id parent dev root mountpoint opts [tags] - fstype source superopts".
func cgroupMounts(mountinfo string) (map[string]string, error) {
	f, err := os.Open(mountinfo)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("memlimit: %w", err)
	}
	defer f.Close()
	mounts := map[string]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		fields, tail := strings.Fields(pre), strings.Fields(post)
		if !ok || len(fields) < 5 || len(tail) < 1 {
			continue
		}
		point := unescape(fields[4])
		switch {
		case tail[0] == "cgroup2":
			if _, seen := mounts[""]; !seen {
				mounts[""] = point
			}
		case tail[0] == "cgroup" && len(tail) >= 3 && hasOption(tail[2], "memory"):
			if _, seen := mounts["memory"]; !seen {
				mounts["memory"] = point
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("memlimit: %s: %w", mountinfo, err)
	}
	return mounts, nil
}

func hasOption(opts, want string) bool { return slices.Contains(strings.Split(opts, ","), want) }

// unescape undoes mountinfo's octal escapes of space, tab, newline and \.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// cgroupPaths maps "memory" (v1) and "" (v2) to this process's cgroup in
// that hierarchy, from /proc/self/cgroup's "id:controllers:path" lines.
func cgroupPaths(file string) (map[string]string, error) {
	text, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("memlimit: %w", err)
	}
	paths := map[string]string{}
	for _, line := range strings.Split(string(text), "\n") {
		id, rest, ok1 := strings.Cut(line, ":")
		controllers, path, ok2 := strings.Cut(rest, ":")
		if !ok1 || !ok2 {
			continue
		}
		switch {
		case id == "0" && controllers == "":
			paths[""] = path
		case hasOption(controllers, "memory"):
			paths["memory"] = path
		}
	}
	return paths, nil
}
