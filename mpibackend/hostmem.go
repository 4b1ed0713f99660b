package mpibackend

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"rsag/internal/memlimit"
	"rsag/phases"
)

var _ phases.FreeMemoryReporter = (*Backend)(nil)

// meminfo is where the kernel says how much memory the host has.
const meminfo = "/proc/meminfo"

// FreeMemory is this rank's share of the memory it may take now: the
// host's MemAvailable (what the kernel can give without swapping, page
// cache included) or, where a memory cgroup (Slurm's --mem, a container)
// leaves less, that cgroup's headroom, divided among the ranks on this
// node, which all allocate the same buffers at once and share the job's
// cgroup. total is MemTotal or the cgroup's limit. A footprint above it
// would be ended half way by the OOM killer, with nothing said.
func (be *Backend) FreeMemory() (free, total int64, err error) {
	m, err := be.hostMemory()
	if err != nil {
		return 0, 0, err
	}
	return m.avail / int64(max(be.localSize, 1)), m.total, nil
}

// MemoryKind names the memory FreeMemory measures, and how to have more.
func (be *Backend) MemoryKind() phases.MemoryKind {
	ranks := max(be.localSize, 1)
	k := phases.MemoryKind{Memory: "host memory",
		Where: fmt.Sprintf("%s (MemAvailable in %s, shared by its %d ranks)", be.comm.Host(), meminfo, ranks),
		Fix:   "run fewer ranks per node"}
	if m, err := be.hostMemory(); err == nil && m.cgroup != nil {
		l := m.cgroup
		k.Where = fmt.Sprintf("%s (memory cgroup %s: limit %.2f GiB in %s, %.2f GiB in use, shared by its %d ranks)",
			be.comm.Host(), l.Cgroup, gib(l.LimitBytes), l.File, gib(l.UsedBytes), ranks)
		k.Fix = "run fewer ranks per node, or raise the job's memory limit (Slurm's --mem or --mem-per-cpu)"
	}
	return k
}

// hostMemory is what this node can give its ranks now, and the cgroup
// whose limit bounds it where that is tighter than the host.
type hostMemory struct {
	avail, total int64
	cgroup       *memlimit.Limit
}

func (be *Backend) hostMemory() (hostMemory, error) {
	f, err := os.Open(be.meminfo)
	if err != nil {
		return hostMemory{}, fmt.Errorf("mpibackend: reading the host's memory: %w", err)
	}
	defer f.Close()
	avail, total, err := parseMeminfo(f)
	if err != nil {
		return hostMemory{}, fmt.Errorf("mpibackend: %s: %w", be.meminfo, err)
	}
	m := hostMemory{avail: avail, total: total}
	l, limited, err := memlimit.Find(be.cgroupRoot)
	if err != nil {
		return hostMemory{}, fmt.Errorf("mpibackend: reading this process's memory cgroup: %w", err)
	}
	if limited && l.Headroom() < avail {
		m.avail, m.total, m.cgroup = l.Headroom(), min(l.LimitBytes, total), &l
	}
	return m, nil
}

func gib(b int64) float64 { return float64(b) / (1 << 30) }

// parseMeminfo reads MemAvailable and MemTotal, in bytes, from
// /proc/meminfo's "Key:   value kB" lines.
func parseMeminfo(r io.Reader) (avail, total int64, err error) {
	found := map[string]int64{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		key, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || (key != "MemAvailable" && key != "MemTotal") {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, 0, fmt.Errorf("%s: %q is not \"N kB\"", key, strings.TrimSpace(rest))
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || kb < 0 || kb > (1<<63-1)/1024 {
			return 0, 0, fmt.Errorf("%s: %q is not a size in kB", key, f[0])
		}
		found[key] = kb * 1024
	}
	if err := sc.Err(); err != nil {
		return 0, 0, err
	}
	for _, k := range []string{"MemAvailable", "MemTotal"} {
		if _, ok := found[k]; !ok {
			return 0, 0, fmt.Errorf("no %s (a kernel older than 3.14?)", k)
		}
	}
	return found["MemAvailable"], found["MemTotal"], nil
}
