package phases

import (
	"fmt"
	"slices"
	"strings"

	"rsag/coll"
)

// TimingFootprint is the most memory the timing phase holds at once: the
// buffers of every mode of a case, for the case at a sweep's largest size
// that needs the most, each buffer as the backend allocates it (symmetric
// windows round up to the VMM granularity).
func TimingFootprint(be coll.Backend, sweeps []coll.Sweep, groups *Groups) int64 {
	l := layoutOf(be.WorldSize(), groups)
	allocBytes := func(_ coll.BufferKind, n int64) int64 { return n }
	if vs, ok := coll.Find[coll.Variants](be); ok {
		allocBytes = vs.AllocBytes
	}
	var most int64
	for _, sw := range sweeps {
		if len(sw.SizesBytes) == 0 {
			continue
		}
		modes, err := sw.TimedModes()
		if err != nil {
			continue
		}
		largest := slices.Max(sw.SizesBytes)
		for _, c := range sw.Cases() {
			if c.SizeBytes != largest {
				continue
			}
			var need int64
			for _, m := range modes {
				for _, b := range m.Allocations(c, l) {
					need += allocBytes(c.Buffers, b.Bytes())
				}
			}
			most = max(most, need)
		}
	}
	return most
}

// layoutOf is the world's shape for the modes, in groups or not.
func layoutOf(world int, g *Groups) coll.Layout {
	l := coll.Layout{World: world}
	if g != nil {
		l.Group = g.Size
	}
	return l
}

// CheckSupport returns an error, naming the sweep, for the first dtype/op
// pair, method, variant or mode the backend cannot run.
func CheckSupport(be coll.Backend, sweeps []coll.Sweep, groups *Groups) error {
	for _, r := range sweeps {
		modes, err := r.TimedModes()
		if err != nil {
			return err
		}
		for _, m := range modes {
			if m.NeedsGroups() && groups == nil {
				return fmt.Errorf("run %s: mode %s runs within and across groups: set [hierarchy] enabled = true, or drop it", r.Name, m.Name)
			}
			if _, ok := coll.Find[coll.Splitter](be); m.NeedsGroups() && !ok {
				return fmt.Errorf("run %s: mode %s needs sub-communicators, which the %s backend has not", r.Name, m.Name, be.Info().Backend)
			}
		}
		// Every dtype and op the backend lacks, each once: a sweep that
		// lacks three is fixed in one go, not three.
		var lacks []string
		for _, d := range r.DTypes {
			for _, o := range r.Ops {
				if err := be.Supports(d, o); err != nil && !slices.Contains(lacks, err.Error()) {
					lacks = append(lacks, err.Error())
				}
			}
		}
		if len(lacks) > 0 {
			return fmt.Errorf("run %s: %s", r.Name, strings.Join(lacks, "; "))
		}
		for _, v := range r.Variants() {
			if v == coll.Baseline {
				continue
			}
			if _, err := variantsFor(be, v); err != nil {
				return fmt.Errorf("run %s: %w", r.Name, err)
			}
		}
		for _, name := range r.Methods {
			m, ok := methodOf(name)
			if !ok {
				return fmt.Errorf("run %s: timing method %q is unknown", r.Name, name)
			}
			if err := m.missing(be); err != nil {
				return fmt.Errorf("run %s: %w", r.Name, err)
			}
		}
	}
	return nil
}

// MemoryFootprint is the largest analytic peak among the run's modes.
func MemoryFootprint(world int, run MemoryRun) int64 {
	l := layoutOf(world, run.Groups)
	var peak int64
	for _, name := range run.Modes {
		if m, ok := findMode(name); ok {
			peak = max(peak, m.peak(run.PayloadBytes, m.shardOf(run.PayloadBytes, l)))
		}
	}
	return peak
}

// CheckFits returns an error when need bytes do not fit in the free memory
// the backend reports; nil when they do or the backend cannot tell.
func CheckFits(be coll.Backend, need int64, what string) error {
	fm, ok := be.(coll.FreeMemoryReporter)
	if !ok || need == 0 {
		return nil
	}
	m, err := fm.FreeMemory()
	if err != nil {
		return err
	}
	if need > m.Free {
		return fmt.Errorf("%s needs %d bytes (%.2f GiB) of %s at once on each rank, but %s has %d bytes (%.2f GiB) free for this rank, of %d (%.2f GiB): lower the sizes or the payload in the config, or %s",
			what, need, coll.GiB(need), m.Memory, m.Where, m.Free, coll.GiB(m.Free), m.Total, coll.GiB(m.Total), m.Fix)
	}
	return nil
}
