package phases

import (
	"fmt"
	"slices"

	"rsag/coll"
)

// TimingFootprint is the most memory the timing phase holds at once: the
// buffers of every mode of the run at its largest size, for the placement,
// dtype and buffer kind that need the most, each buffer as the backend
// allocates it (symmetric windows round up to the VMM granularity).
func TimingFootprint(be coll.Backend, runs []TimingRun) int64 {
	world := be.WorldSize()
	allocBytes := func(_ coll.BufferKind, n int64) int64 { return n }
	if vs, ok := coll.Find[coll.Variants](be); ok {
		allocBytes = vs.AllocBytes
	}
	var most int64
	for _, r := range runs {
		if len(r.SizesBytes) == 0 {
			continue
		}
		modes, err := runModes(r)
		if err != nil {
			continue
		}
		n := slices.Max(r.SizesBytes)
		for _, v := range RunVariants(r) {
			for _, d := range r.DTypes {
				for _, p := range r.Placements {
					var need int64
					for _, m := range modes {
						for _, b := range m.BufferBytes(n, d.Size(), runLayout(world, r), p) {
							need += allocBytes(v.Buffers, b)
						}
					}
					most = max(most, need)
				}
			}
		}
	}
	return most
}

// runLayout is the world's shape for a run's modes.
func runLayout(world int, r TimingRun) coll.Layout {
	l := coll.Layout{World: world}
	if r.Groups != nil {
		l.Group = r.Groups.Size
	}
	return l
}

// CheckSupport returns an error, naming the run, for the first dtype/op
// pair, method or mode the backend cannot run.
func CheckSupport(be coll.Backend, runs []TimingRun) error {
	for _, r := range runs {
		modes, err := runModes(r)
		if err != nil {
			return err
		}
		for _, m := range modes {
			if m.NeedsGroups() && r.Groups == nil {
				return fmt.Errorf("run %s: mode %s runs within and across groups: set [hierarchy] enabled = true, or drop it", r.Name, m.Name)
			}
			if _, ok := coll.Find[coll.Splitter](be); m.NeedsGroups() && !ok {
				return fmt.Errorf("run %s: mode %s needs sub-communicators, which the %s backend has not", r.Name, m.Name, be.Info().Backend)
			}
		}
		for _, d := range r.DTypes {
			for _, o := range r.Ops {
				if err := be.Supports(d, o); err != nil {
					return fmt.Errorf("run %s: %w", r.Name, err)
				}
			}
		}
		for _, v := range RunVariants(r) {
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
	l := coll.Layout{World: world}
	if run.Groups != nil {
		l.Group = run.Groups.Size
	}
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
