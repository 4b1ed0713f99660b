package phases_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"rsag/coll"
	"rsag/internal/testkit/inmem"
	"rsag/phases"
)

// Layouts of four ranks the hierarchy must handle: two nodes of two ranks
// placed by block and by cycle, and one node split into groups of two.
var layouts = []struct {
	name  string
	hosts []string
	size  int
}{
	{"2x2 block", []string{"a", "a", "b", "b"}, 0},
	{"2x2 cyclic", []string{"a", "b", "a", "b"}, 0},
	{"one node, groups of 2", []string{"a", "a", "a", "a"}, 2},
}

func TestNewGroups(t *testing.T) {
	g, err := phases.NewGroups([]string{"a", "b", "a", "b"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Node a holds ranks 0 and 2 (local ranks 0, 1): group 0; node b group 1.
	if g.Size != 2 || g.Count != 2 || !slices.Equal(g.Group, []int{0, 1, 0, 1}) || !slices.Equal(g.Pos, []int{0, 0, 1, 1}) {
		t.Errorf("cyclic 2x2: %+v", g)
	}
	g, err = phases.NewGroups([]string{"a", "a", "a", "a", "b", "b", "b", "b"}, 2)
	if err != nil || !slices.Equal(g.Group, []int{0, 0, 1, 1, 2, 2, 3, 3}) || !slices.Equal(g.Pos, []int{0, 1, 0, 1, 0, 1, 0, 1}) {
		t.Errorf("2 nodes of 4 in groups of 2: %+v, %v", g, err)
	}
	for _, c := range []struct {
		hosts []string
		size  int
		want  string
	}{
		{[]string{"a", "a", "a", "b"}, 0, "the nodes hold different numbers of ranks (a 3, b 1)"},
		{[]string{"a", "a", "a", "a"}, 3, "group_size 3 does not divide the world size 4: use a divisor of 4 (2, 4)"},
		{[]string{"a", "a", "a", "b", "b", "b"}, 2, "group_size 2 does not divide the 3 ranks of each node"},
	} {
		if _, err := phases.NewGroups(c.hosts, c.size); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v size %d: %v, want %q", c.hosts, c.size, err, c.want)
		}
	}
}

func groupsOf(t *testing.T, hosts []string, size int) *phases.Groups {
	t.Helper()
	g, err := phases.NewGroups(hosts, size)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestHierarchyContractsHold(t *testing.T) {
	for _, l := range layouts {
		g := groupsOf(t, l.hosts, l.size)
		results := make([][]phases.ContractResult, len(l.hosts))
		errs := inmem.Launch(len(l.hosts), inmem.Faults{}, func(be coll.Backend, comm coll.Comm) error {
			r, err := phases.RunHierarchyContracts(be, g, l.hosts)
			results[be.Rank()] = r
			return err
		})
		noErrors(t, errs)
		for rank, rs := range results {
			if len(rs) != 3 {
				t.Fatalf("%s: rank %d: %+v", l.name, rank, rs)
			}
			for _, r := range rs {
				if !r.Correct {
					t.Errorf("%s: rank %d: %s does not hold: %s", l.name, rank, r.Name, r.Detail)
				}
			}
			if d := rs[2].Detail; !strings.Contains(d, "does not divide") && !strings.Contains(d, "different numbers of ranks") {
				t.Errorf("%s: the refusal's message is not recorded: %q", l.name, d)
			}
		}
	}
}

// A reduction that leaves a rank out breaks the equivalence, and only it.
func TestHierarchyContractsCatchADroppedRank(t *testing.T) {
	l := layouts[0]
	g := groupsOf(t, l.hosts, l.size)
	results := make([][]phases.ContractResult, 4)
	noErrors(t, inmem.Launch(4, inmem.Faults{DropLastRank: true}, func(be coll.Backend, comm coll.Comm) error {
		r, err := phases.RunHierarchyContracts(be, g, l.hosts)
		results[be.Rank()] = r
		return err
	}))
	for rank, rs := range results {
		if rs[0].Correct || !rs[1].Correct || !rs[2].Correct {
			t.Errorf("rank %d: %+v, want only %s to fail", rank, rs, phases.HierarchicalSumEquivalence)
		}
	}
}

var hierarchicalModes = []coll.Mode{coll.Direct, coll.Hierarchical, "hierarchical-reduce-scatter",
	"hierarchical-all-reduce", "hierarchical-all-gather"}

// Every hierarchical mode runs and is checked in every layout, both
// placements; a dropped rank fails the hierarchical output's check.
func TestHierarchicalTiming(t *testing.T) {
	for _, l := range layouts {
		runs := everyMode(hierarchicalModes...)
		groups := groupsOf(t, l.hosts, l.size)
		samples := make([][]phases.TimingSample, 4)
		noErrors(t, inmem.Launch(4, inmem.Faults{}, func(be coll.Backend, comm coll.Comm) error {
			if err := phases.CheckSupport(be, runs, groups); err != nil {
				return err
			}
			s, err := phases.RunTiming(be, comm, runs, groups, nil)
			samples[be.Rank()] = s
			return err
		}))
		for rank, s := range samples {
			if len(s) != 12*len(hierarchicalModes) || slices.ContainsFunc(s, func(x phases.TimingSample) bool { return !x.Correct }) {
				t.Errorf("%s: rank %d: %d samples %+v", l.name, rank, len(s), s)
			}
		}
	}
	runs := everyMode(coll.Hierarchical)
	groups := groupsOf(t, layouts[0].hosts, 0)
	for rank, err := range inmem.Launch(4, inmem.Faults{DropLastRank: true}, func(be coll.Backend, comm coll.Comm) error {
		_, err := phases.RunTiming(be, comm, runs, groups, nil)
		return err
	}) {
		var ce *phases.CheckError
		if !errors.As(err, &ce) || !strings.Contains(ce.What, "hierarchical output") {
			t.Errorf("rank %d: %v, want the hierarchical output's check to fail", rank, err)
		}
	}
	// Without groups the modes are refused before any collective.
	for _, err := range inmem.Launch(2, inmem.Faults{}, func(be coll.Backend, comm coll.Comm) error {
		return phases.CheckSupport(be, everyMode(coll.Hierarchical), nil)
	}) {
		if err == nil || !strings.Contains(err.Error(), "set [hierarchy] enabled = true") {
			t.Errorf("hierarchical without groups: %v", err)
		}
	}
}

// The hierarchical modes' facts: the whole uses the flat AllReduce's bus
// factor; each step alone its own on its ranks and share of the buffer.
func TestHierarchicalModeFacts(t *testing.T) {
	l := coll.Layout{World: 8, Group: 4} // 2 groups of 4
	for _, c := range []struct {
		mode    coll.Mode
		bus     float64
		out, in int64
	}{
		{coll.Hierarchical, 2 * 7.0 / 8, 4096 + 1024 + 1024 + 4096, 4096},
		{"hierarchical-reduce-scatter", 3.0 / 4, 4096 + 1024, 4096},
		{"hierarchical-all-reduce", 2 * (1.0 / 2) / 4, 1024 + 1024, 1024},
		{"hierarchical-all-gather", 3.0 / 4, 1024 + 4096, 4096},
	} {
		m, _ := coll.ModeOf(c.mode)
		if got := m.BusFactor(l); got != c.bus {
			t.Errorf("%s: bus factor %v, want %v", c.mode, got, c.bus)
		}
		if got := m.Footprint(coll.Case{SizeBytes: 4096, DType: coll.Float32, Placement: coll.OutOfPlace}, l); got != c.out {
			t.Errorf("%s: out of place %d, want %d", c.mode, got, c.out)
		}
		if got := m.Footprint(coll.Case{SizeBytes: 4096, DType: coll.Float32, Placement: coll.InPlace}, l); got != c.in {
			t.Errorf("%s: in place %d, want %d", c.mode, got, c.in)
		}
		if got := m.BusFactor(coll.Layout{World: 8}); got != 0 {
			t.Errorf("%s without groups: bus factor %v, want 0", c.mode, got)
		}
	}
}

// hierarchical-lifetime's deltas are N and N + N/g exactly.
func TestHierarchicalLifetime(t *testing.T) {
	const payload = 4 * 4 * 64
	for _, l := range layouts {
		g := groupsOf(t, l.hosts, l.size)
		results := make([][]phases.MemoryResult, 4)
		noErrors(t, inmem.Launch(4, inmem.Faults{}, func(be coll.Backend, comm coll.Comm) error {
			r, err := phases.RunMemory(be, comm, phases.MemoryRun{PayloadBytes: payload,
				Modes: []string{"rs-ag-optimized-lifetime", "hierarchical-lifetime"}, Groups: g}, nil)
			results[be.Rank()] = r
			return err
		}))
		for rank, rs := range results {
			h := rs[1]
			if !h.Correct || h.SteadyDeltaBytes != payload || h.PeakDeltaBytes != payload+payload/2 ||
				h.AnalyticSteady != payload || h.AnalyticPeak != payload+payload/2 {
				t.Errorf("%s: rank %d: %+v", l.name, rank, h)
			}
		}
	}
	for _, err := range inmem.Launch(2, inmem.Faults{}, func(be coll.Backend, comm coll.Comm) error {
		_, err := phases.RunMemory(be, comm, phases.MemoryRun{PayloadBytes: 1024, Modes: []string{"hierarchical-lifetime"}}, nil)
		return err
	}) {
		if err == nil || !strings.Contains(err.Error(), "set [hierarchy] enabled = true") {
			t.Errorf("hierarchical-lifetime without groups: %v", err)
		}
	}
}
