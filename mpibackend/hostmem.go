package mpibackend

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"rsag/coll"
	"rsag/internal/memlimit"
)

var _ coll.FreeMemoryReporter = (*Backend)(nil)

// meminfo is where the kernel says how much memory the host has.
const meminfo = "/proc/meminfo"

// FreeMemory is this rank's share of the memory it may take now: the
// host's MemAvailable (what the kernel can give without swapping, page
// cache included) or, where a memory cgroup (Slurm's --mem, a container)
// leaves less, that cgroup's headroom, divided among the ranks on this
// node, which all allocate the same buffers at once and share the job's
// cgroup. Total is MemTotal or the cgroup's limit. A footprint above it
// would be ended half way by the OOM killer, with nothing said.
func (be *Backend) FreeMemory() (coll.MemoryReading, error) {
	f, err := os.Open(be.meminfo)
	if err != nil {
		return coll.MemoryReading{}, fmt.Errorf("mpibackend: reading the host's memory: %w", err)
	}
	defer f.Close()
	avail, total, err := parseMeminfo(f)
	if err != nil {
		return coll.MemoryReading{}, fmt.Errorf("mpibackend: %s: %w", be.meminfo, err)
	}
	l, limited, err := memlimit.Find(be.cgroupRoot)
	if err != nil {
		return coll.MemoryReading{}, fmt.Errorf("mpibackend: reading this process's memory cgroup: %w", err)
	}
	ranks := max(be.localSize, 1)
	k := coll.MemoryKind{Memory: "host memory",
		Where: fmt.Sprintf("%s (MemAvailable in %s, shared by its %d ranks)", be.comm.Host(), meminfo, ranks),
		Fix:   "run fewer ranks per node"}
	if limited && l.Headroom() < avail {
		avail, total = l.Headroom(), min(l.LimitBytes, total)
		k.Where = fmt.Sprintf("%s (memory cgroup %s: limit %.2f GiB in %s, %.2f GiB in use, shared by its %d ranks)",
			be.comm.Host(), l.Cgroup, coll.GiB(l.LimitBytes), l.File, coll.GiB(l.UsedBytes), ranks)
		k.Fix = "run fewer ranks per node, or raise the job's memory limit (Slurm's --mem or --mem-per-cpu)"
	}
	return coll.MemoryReading{Free: avail / int64(ranks), Total: total, MemoryKind: k}, nil
}

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
