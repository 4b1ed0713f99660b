package inmem_test

import (
	"errors"
	"strings"
	"testing"

	"rsag/coll"
	"rsag/coll/colltest"
	"rsag/internal/testkit/inmem"
)

// The in-memory backend passes coll's conformance suite at every world
// size the experiments use.
func TestConformance(t *testing.T) {
	for _, world := range []int{1, 2, 3, 4} {
		for rank, err := range inmem.Launch(world, inmem.Faults{}, func(be coll.Backend, _ coll.Comm) error {
			return colltest.Check(be)
		}) {
			if err != nil {
				t.Errorf("%d ranks: rank %d: %v", world, rank, err)
			}
		}
	}
}

// The suite is no formality: a backend wrong in one way fails it, naming
// the collective that is wrong, on every rank whose output it spoils.
func TestConformanceCatchesFaults(t *testing.T) {
	for _, c := range []struct {
		name   string
		faults inmem.Faults
		want   string
	}{
		{"a rotated AllGather", inmem.Faults{RotatedGather: true}, "all-gather of"},
		{"sum computed as max", inmem.Faults{SumAsMax: true}, "all-reduce of int8 with sum"},
		{"the last rank dropped", inmem.Faults{DropLastRank: true}, "reduce-scatter of"},
	} {
		errs := inmem.Launch(3, c.faults, func(be coll.Backend, _ coll.Comm) error { return colltest.Check(be) })
		for rank, err := range errs {
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: rank %d: %v, want a failure naming %q", c.name, rank, err, c.want)
			}
			var shape *coll.ShapeError
			if errors.As(err, &shape) {
				t.Errorf("%s: rank %d: a shape error leaked: %v", c.name, rank, err)
			}
		}
	}
}
