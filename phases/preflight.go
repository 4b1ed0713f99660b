package phases

import (
	"fmt"
	"slices"
)

// FreeMemoryReporter is a backend that can say how much memory its buffers
// may take (cuMemGetInfo on a GPU, MemAvailable on a host), so that a
// payload too large is refused before any collective runs rather than
// failing half way (or, in host memory, ended by the OOM killer).
type FreeMemoryReporter interface {
	// FreeMemory is the bytes this rank's buffers may take now, of a total.
	FreeMemory() (free, total int64, err error)
	// MemoryKind says which memory that is, for CheckFits' message.
	MemoryKind() MemoryKind
}

// MemoryKind names the memory a FreeMemoryReporter measures.
type MemoryKind struct {
	Memory string // "device memory", "host memory"
	Where  string // "NVIDIA H200 (GPU 0 of node7)", "node7 (MemAvailable, shared by its 4 ranks)"
	Fix    string // how to have more: "free the GPU of other processes"
}

// TimingFootprint is the most memory the timing phase holds at once: the
// buffers of every mode of the run at its largest size, for the placement
// and dtype that need the most (see TimedMode.Footprint).
func TimingFootprint(world int, runs []TimingRun) int64 {
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
		for _, d := range r.DTypes {
			for _, p := range r.Placements {
				var need int64
				for _, m := range modes {
					need += m.Footprint(n, d.Size(), world, p)
				}
				most = max(most, need)
			}
		}
	}
	return most
}

// CheckSupport returns an error, naming the run, for the first dtype/op
// pair, method or mode the backend cannot run.
func CheckSupport(be Backend, runs []TimingRun) error {
	for _, r := range runs {
		if _, err := runModes(r); err != nil {
			return err
		}
		for _, d := range r.DTypes {
			for _, o := range r.Ops {
				if err := be.Supports(d, o); err != nil {
					return fmt.Errorf("run %s: %w", r.Name, err)
				}
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

// MemoryFootprint is the largest analytic peak among the named modes.
func MemoryFootprint(world int, payload int64, modes []string) int64 {
	var peak int64
	for _, name := range modes {
		if m, ok := findMode(name); ok {
			peak = max(peak, m.peak(payload, payload/int64(world)))
		}
	}
	return peak
}

// CheckFits returns an error when need bytes do not fit in the free memory
// the backend reports; nil when they do or the backend cannot tell.
func CheckFits(be Backend, need int64, what string) error {
	fm, ok := be.(FreeMemoryReporter)
	if !ok || need == 0 {
		return nil
	}
	free, total, err := fm.FreeMemory()
	if err != nil {
		return err
	}
	if need > free {
		k := fm.MemoryKind()
		return fmt.Errorf("%s needs %d bytes (%.2f GiB) of %s at once on each rank, but %s has %d bytes (%.2f GiB) free for this rank, of %d (%.2f GiB): lower the sizes or the payload in the config, or %s",
			what, need, gib(need), k.Memory, k.Where, free, gib(free), total, gib(total), k.Fix)
	}
	return nil
}

func gib(b int64) float64 { return float64(b) / (1 << 30) }
