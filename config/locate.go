package config

import (
	"strings"

	"rsag/coll"
	"rsag/locate"
	"rsag/phases"
)

// Locate is the [locate] table: which node, link or rank makes the
// collectives slow (phases.RunLocate, locate.Solve).
type Locate struct {
	Enabled bool `toml:"enabled"`
	// SizesBytes are the sizes every unit runs: at least a latency-bound
	// one and a bandwidth-bound one (the smallest and the largest).
	SizesBytes  []Size   `toml:"sizes_bytes"`
	Collectives []string `toml:"collectives"`
	// Repeats are the measurements of each unit, interleaved in time; a
	// suspect is slow in every one.
	Repeats int `toml:"repeats"`
	// Iterations are the operations of one measurement, timed back to
	// back; Warmups run untimed on each sub-communicator first.
	Iterations int `toml:"iterations"`
	Warmups    int `toml:"warmups"`
	// Threshold is the fraction of the median below which a unit is slow.
	Threshold float64 `toml:"threshold"`
	// MaxFullNodes is the most nodes the full schedule (every pair) is run
	// for; above it, the sampled one, in which every node meets at least
	// MinPartners others.
	MaxFullNodes int `toml:"max_full_nodes"`
	MinPartners  int `toml:"min_partners"`
	// FailOnSuspect makes a run that names any suspect exit non-zero
	// (ExitSuspects), its run.json complete, for a health check to gate on.
	FailOnSuspect bool `toml:"fail_on_suspect"`
}

// defaultLocate: off; a latency-bound and a bandwidth-bound size, the
// three collectives, three repeats.
func defaultLocate() Locate {
	return Locate{SizesBytes: []Size{8 << 10, 16 << 20}, Repeats: 3, Iterations: 5, Warmups: 2,
		Collectives: collectiveNames(), Threshold: locate.DefaultThreshold, MaxFullNodes: 64, MinPartners: 8}
}

func collectiveNames() []string {
	var names []string
	for _, c := range coll.Collectives {
		names = append(names, c.Name)
	}
	return names
}

func (l Locate) check(bad func(key, format string, args ...any) error) error {
	if len(l.SizesBytes) < 2 {
		return bad("locate.sizes_bytes", "lists %d size: give at least two, a latency-bound one and a bandwidth-bound one, e.g. [\"8K\", \"16M\"]", len(l.SizesBytes))
	}
	if _, err := checkSizeList("locate.sizes_bytes", l.SizesBytes, ": drop some", bad); err != nil {
		return err
	}
	known := collectiveNames()
	if len(l.Collectives) == 0 {
		return bad("locate.collectives", "is empty: list at least one of %s", strings.Join(known, ", "))
	}
	for _, c := range l.Collectives {
		if !contains(known, c) {
			return bad("locate.collectives", "%q is not a collective: use %s", c, strings.Join(known, ", "))
		}
	}
	if d, dup := firstDuplicate(l.Collectives); dup {
		return bad("locate.collectives", "%q is listed twice: list each once", d)
	}
	for _, r := range []intRule{
		{"repeats", int64(l.Repeats), 1, MaxLocateRepeats, "%d: give the measurements of each unit, at least 1 (default 3)", "repeats"},
		{"iterations", int64(l.Iterations), 1, MaxLocateIterations, "%d: give the operations per measurement, at least 1", "operations per measurement"},
		{"warmups", int64(l.Warmups), 0, MaxLocateWarmups, "%d is negative: give the untimed operations on each sub-communicator, 0 or more", "warm-ups"},
		{"max_full_nodes", int64(l.MaxFullNodes), 2, MaxRanks, "%d: give the most nodes to run every pair of, at least 2 (default 64)", "nodes"},
		{"min_partners", int64(l.MinPartners), 2, MaxPartners, "%d: give the partners each node meets in the sampled schedule, at least 2 (default 8)", "partners"},
	} {
		if msg := r.outOfRange(); msg != "" {
			return bad("locate."+r.key, "%s", msg)
		}
	}
	what := "the fraction of the median below which a unit is slow, above 0 and below 1 (default 0.8)"
	if msg := floatOutOfRange(l.Threshold, 0, 1, "", what); msg != "" {
		return bad("locate.threshold", "%s", msg)
	}
	if l.Threshold <= 0 || l.Threshold >= 1 {
		return bad("locate.threshold", "%v: give %s", l.Threshold, what)
	}
	return nil
}

// Spec is the locate phase's spec.
func (l Locate) Spec() phases.LocateSpec {
	s := phases.LocateSpec{SizesBytes: int64s(l.SizesBytes), Repeats: l.Repeats, Iterations: l.Iterations,
		Warmups: l.Warmups, MaxFullNodes: l.MaxFullNodes, MinPartners: l.MinPartners}
	for _, name := range l.Collectives {
		for _, c := range coll.Collectives {
			if c.Name == name {
				s.Collectives = append(s.Collectives, c)
			}
		}
	}
	return s
}
