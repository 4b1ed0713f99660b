package phases_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"rsag/coll"
	"rsag/internal/testkit/inmem"
	"rsag/phases"
)

func locateSpec() phases.LocateSpec {
	return phases.LocateSpec{SizesBytes: []int64{1024, 65536}, Collectives: coll.Collectives, Repeats: 3,
		Iterations: 2, Warmups: 1, MaxFullNodes: 64, MinPartners: 8}
}

// hostsOf is a job of nodes x per ranks, placed block by block.
func hostsOf(nodes, per int) []string {
	var h []string
	for n := range nodes {
		for range per {
			h = append(h, fmt.Sprintf("node%d", n+1))
		}
	}
	return h
}

func stepOf(t *testing.T, p phases.LocatePlan, name string) phases.PlannedStep {
	t.Helper()
	for _, s := range p.Steps {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no step %s", name)
	return phases.PlannedStep{}
}

// What each step runs, or plainly why not, for the shapes a job takes.
func TestPlanLocate(t *testing.T) {
	for _, c := range []struct {
		name  string
		hosts []string
		// rounds and units per step; -1: not run, with the skip's words
		inside, pairs, ranks [2]int
		skip                 map[string]string
		note                 map[string]string
	}{
		{name: "4 nodes of 2", hosts: hostsOf(4, 2), inside: [2]int{1, 4}, pairs: [2]int{3, 6}, ranks: [2]int{-1},
			skip: map[string]string{"ranks": "every node has at most two ranks: a node's one pair of ranks is its inside step"}},
		{name: "4 nodes of 1", hosts: hostsOf(4, 1), inside: [2]int{-1}, pairs: [2]int{3, 6}, ranks: [2]int{-1},
			skip: map[string]string{"inside": "every node has one rank: nothing runs inside a node", "ranks": "at most two ranks"}},
		{name: "5 nodes of 1", hosts: hostsOf(5, 1), inside: [2]int{-1}, pairs: [2]int{5, 10}, ranks: [2]int{-1}},
		{name: "1 node of 4", hosts: hostsOf(1, 4), inside: [2]int{1, 1}, pairs: [2]int{-1}, ranks: [2]int{3, 6},
			skip: map[string]string{"pairs": "one node: there are no pairs of nodes"}},
		{name: "2 nodes of 3", hosts: hostsOf(2, 3), inside: [2]int{1, 2}, pairs: [2]int{1, 1}, ranks: [2]int{3, 6},
			note: map[string]string{"pairs": "two nodes make one pair, which cannot tell a slow node from a slow link"}},
		{name: "uneven 3+1", hosts: []string{"a", "a", "a", "b"}, inside: [2]int{1, 1}, pairs: [2]int{1, 1}, ranks: [2]int{3, 3},
			note: map[string]string{"inside": "1 node(s) with one rank are not measured inside"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := phases.PlanLocate(c.hosts, locateSpec())
			if err != nil {
				t.Fatal(err)
			}
			for name, want := range map[string][2]int{"inside": c.inside, "pairs": c.pairs, "ranks": c.ranks} {
				s := stepOf(t, p, name)
				units := 0
				busy := map[int]int{}
				for r, round := range s.Rounds {
					units += len(round)
					for _, u := range round {
						for _, m := range u.Members {
							if busy[m] == r+1 {
								t.Errorf("%s round %d: rank %d is in two units", name, r, m)
							}
							busy[m] = r + 1
						}
					}
				}
				if want[0] < 0 {
					if s.Skip == "" || len(s.Rounds) != 0 {
						t.Errorf("%s: ran %d rounds, want it skipped", name, len(s.Rounds))
					}
				} else if len(s.Rounds) != want[0] || units != want[1] || s.Skip != "" {
					t.Errorf("%s: %d rounds of %d units (skip %q), want %d of %d", name, len(s.Rounds), units, s.Skip, want[0], want[1])
				}
				if w := c.skip[name]; w != "" && !strings.Contains(s.Skip, w) {
					t.Errorf("%s: skip %q, want %q", name, s.Skip, w)
				}
				if w := c.note[name]; w != "" && !strings.Contains(s.Note, w) {
					t.Errorf("%s: note %q, want %q", name, s.Note, w)
				}
			}
		})
	}
	// A size smaller than a float32 per rank of the largest
	// sub-communicator (a pair of nodes of 4: 8 ranks) is refused, named.
	spec := locateSpec()
	spec.SizesBytes = []int64{16, 1024}
	if _, err := phases.PlanLocate(hostsOf(2, 4), spec); err == nil ||
		!strings.Contains(err.Error(), "locate.sizes_bytes: 16 bytes is less than one float32 for each of the 8 ranks of the largest sub-communicator: use at least 32") {
		t.Errorf("16 bytes on pairs of 8 ranks: %v", err)
	}
}

// The phase on goroutine ranks: every rank takes part in every split, gets
// a communicator for exactly the rounds its unit runs in (none for a round
// it sits out), measures every probe in every repeat there, and leaves no
// buffer or communicator behind.
func TestRunLocateOnInmem(t *testing.T) {
	for _, c := range []struct {
		name      string
		nodes     int
		per       int
		rounds    int // every round of every step that ran
		sitOut    int // rounds each rank sits out
		member    int // ranks in each unit of the pairs step
		measuring int // rounds each rank measures in
	}{
		{"4 nodes of 2", 4, 2, 1 + 3, 0, 4, 4},
		{"5 nodes of 1", 5, 1, 5, 1, 2, 4},
		{"1 node of 3", 1, 3, 1 + 3, 1, 0, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			hosts := hostsOf(c.nodes, c.per)
			plan, err := phases.PlanLocate(hosts, locateSpec())
			if err != nil {
				t.Fatal(err)
			}
			results := make([]phases.LocateResult, len(hosts))
			noErrors(t, inmem.Launch(len(hosts), inmem.Faults{}, func(be coll.Backend, comm coll.Comm) error {
				res, err := phases.RunLocate(be, comm, plan)
				results[be.Rank()] = res
				return err
			}))
			probes := len(locateSpec().Probes())
			for r, res := range results {
				if len(res.Comms) != c.rounds {
					t.Errorf("rank %d: took part in %d splits, want %d", r, len(res.Comms), c.rounds)
				}
				out := 0
				for _, cm := range res.Comms {
					if !cm.Member {
						out++
					}
				}
				if out != c.sitOut {
					t.Errorf("rank %d: sat out %d rounds, want %d", r, out, c.sitOut)
				}
				if want := c.measuring * 3 * probes; len(res.Samples) != want {
					t.Errorf("rank %d: %d samples, want %d", r, len(res.Samples), want)
				}
				for _, s := range res.Samples {
					if s.Step == "pairs" && s.Ranks != c.member || s.DurationUS <= 0 || s.Bytes <= 0 || s.Bytes > s.SizeBytes {
						t.Errorf("rank %d: sample %+v", r, s)
						break
					}
				}
			}
		})
	}
}

// slowSplitter is a backend whose sub-communicators, on world rank slow,
// take late longer over every collective of more than a kilobyte: a node
// too slow to finish, planted from outside the phase.
type slowSplitter struct {
	coll.Backend
	sp   coll.Splitter
	slow int
	late time.Duration
}

func (s slowSplitter) Split(color, key int) (coll.Backend, error) {
	sub, err := s.sp.Split(color, key)
	if sub == nil || err != nil || s.Backend.Rank() != s.slow {
		return sub, err
	}
	return slowRun{Backend: sub, late: s.late}, nil
}

type slowRun struct {
	coll.Backend
	late time.Duration
}

func (s slowRun) Run(c coll.Collective, send, recv coll.Buffer, op coll.Op) error {
	if coll.Bytes(send) > 1024 {
		time.Sleep(s.late)
	}
	return s.Backend.Run(c, send, recv, op)
}

// A probe whose first operation on a unit overruns the deadline is
// abandoned there, on every rank of the unit alike: one sample of that
// operation at LocateAbandoned, none in any repeat after, while the other
// probes and units are measured in every repeat, and the phase ends.
func TestRunLocateAbandonsAProbeTooSlowToFinish(t *testing.T) {
	hosts := hostsOf(4, 1)
	spec := locateSpec()
	spec.Collectives = coll.Collectives[:1]
	spec.OpDeadline = 300 * time.Millisecond
	plan, err := phases.PlanLocate(hosts, spec)
	if err != nil {
		t.Fatal(err)
	}
	results := make([]phases.LocateResult, len(hosts))
	noErrors(t, inmem.Launch(len(hosts), inmem.Faults{}, func(be coll.Backend, comm coll.Comm) error {
		sp, _ := coll.Find[coll.Splitter](be)
		res, err := phases.RunLocate(slowSplitter{Backend: be, sp: sp, slow: 2, late: time.Second}, comm, plan)
		results[be.Rank()] = res
		return err
	}))
	// Each probe of each unit on each rank is either abandoned (one sample
	// at LocateAbandoned, past the deadline, none after) or measured in
	// every repeat; with the slow rank at the large size, abandoned. (A
	// healthy unit may be too, on a machine loaded enough to hold a
	// goroutine past the deadline: either way holds.)
	type key struct{ round, probe int }
	for r, res := range results {
		got := map[key][]phases.LocateSample{}
		for _, s := range res.Samples {
			got[key{s.Round, s.Probe}] = append(got[key{s.Round, s.Probe}], s)
		}
		for k, ss := range got {
			withSlow := r == 2 || ss[0].A == 2 || ss[0].B == 2
			abandoned := len(ss) == 1 && ss[0].Repeat == phases.LocateAbandoned && ss[0].DurationUS >= 300e3
			measured := len(ss) == 3
			for i, s := range ss {
				measured = measured && s.Repeat == i
			}
			switch {
			case !abandoned && !measured:
				t.Errorf("rank %d, round %d, probe %d: samples %+v", r, k.round, k.probe, ss)
			case withSlow && ss[0].SizeBytes == 65536 && !abandoned:
				t.Errorf("rank %d, round %d: the slow rank's large probe was not abandoned: %+v", r, k.round, ss)
			}
		}
		if len(got) != 3*2 {
			t.Errorf("rank %d: %d probes of rounds, want 6", r, len(got))
		}
	}
}

// A sampled schedule says which pairs it never tried, and the chance one
// bad link is among them; a full one says nothing of the kind.
func TestASampledStepSaysWhatItDidNotSee(t *testing.T) {
	spec := locateSpec()
	spec.MaxFullNodes, spec.MinPartners = 8, 4
	plan, err := phases.PlanLocate(hostsOf(16, 1), spec)
	if err != nil {
		t.Fatal(err)
	}
	want := "80 of 120 pairs never tried, their links neither healthy nor suspect (node1-node3, node1-node4, node1-node6, " +
		"node1-node7, node1-node8, node1-node10 and 74 more): one bad link is missed with chance 67%, in every run alike"
	if got := stepOf(t, plan, "pairs").Note; got != want {
		t.Errorf("note %q\nwant %q", got, want)
	}
	full, err := phases.PlanLocate(hostsOf(16, 1), locateSpec())
	if err != nil {
		t.Fatal(err)
	}
	if got := stepOf(t, full, "pairs").Note; got != "" {
		t.Errorf("every pair tried, note %q", got)
	}
}
