package phases_test

import (
	"slices"
	"testing"

	"rsag/coll"
	"rsag/internal/testkit/inmem"
	"rsag/phases"
)

var contractNames = []string{phases.ExactSumEquivalence, phases.WrongShardOrderRejected, phases.WrongOpRejected,
	phases.PaddingAndTrim, phases.NondivisibleRejected}

// runContracts runs the seed's contracts on world ranks and returns, per
// rank, the contracts that did not hold.
func runContracts(t *testing.T, world int, faults inmem.Faults) [][]string {
	t.Helper()
	results := make([][]phases.ContractResult, world)
	errs := inmem.Launch(world, faults, func(be coll.Backend, comm coll.Comm) error {
		r, err := phases.RunContracts(be)
		results[be.Rank()] = r
		return err
	})
	noErrors(t, errs)
	failed := make([][]string, world)
	for rank, rs := range results {
		var names []string
		for _, r := range rs {
			names = append(names, r.Name)
			if !r.Correct {
				failed[rank] = append(failed[rank], r.Name)
			}
		}
		if !slices.Equal(names, contractNames) {
			t.Fatalf("%d ranks, rank %d: contracts %v, want %v", world, rank, names, contractNames)
		}
	}
	return failed
}

// wantFailed checks that exactly the contracts want failed, on every rank.
func wantFailed(t *testing.T, world int, faults inmem.Faults, want []string) {
	t.Helper()
	for rank, failed := range runContracts(t, world, faults) {
		if !slices.Equal(failed, want) {
			t.Errorf("%d ranks, %+v: rank %d: failed %v, want %v", world, faults, rank, failed, want)
		}
	}
}

func TestContractsHold(t *testing.T) {
	for _, world := range []int{2, 3, 4} {
		wantFailed(t, world, inmem.Faults{}, nil)
	}
}

// TestContractsRotatedGather: an AllGather that puts every shard one rank
// late breaks every comparison that goes through the decomposition:
// exact-sum-equivalence and padding-and-trim (its padded RS+AG).
// wrong-shard-order-rejected is no check of the backend: it rotates the
// gathered result once more and asks that this differ from direct. Under
// this fault that is a rotation by two ranks, which on 3 and 4 ranks still
// differs (the contract holds), and on 2 ranks is the identity: the
// twice-rotated result equals direct, and the contract reports false.
func TestContractsRotatedGather(t *testing.T) {
	faults := inmem.Faults{RotatedGather: true}
	wantFailed(t, 2, faults, []string{phases.ExactSumEquivalence, phases.WrongShardOrderRejected, phases.PaddingAndTrim})
	wantFailed(t, 3, faults, []string{phases.ExactSumEquivalence, phases.PaddingAndTrim})
	wantFailed(t, 4, faults, []string{phases.ExactSumEquivalence, phases.PaddingAndTrim})
}

// TestContractsSumAsMax: both paths agree with each other but not with the
// host's formula, and the direct "sum" can no longer be told from a max,
// which is what wrong-reduction-op-rejected asks.
func TestContractsSumAsMax(t *testing.T) {
	for _, world := range []int{2, 3, 4} {
		wantFailed(t, world, inmem.Faults{SumAsMax: true}, []string{phases.ExactSumEquivalence, phases.WrongOpRejected})
	}
}

// TestContractsDropLastRank: both paths agree, wrongly: only the
// comparison with the host's formula sees it. On 2 ranks one contribution
// is left, whose sum is its max, so wrong-reduction-op-rejected fails too.
func TestContractsDropLastRank(t *testing.T) {
	faults := inmem.Faults{DropLastRank: true}
	wantFailed(t, 2, faults, []string{phases.ExactSumEquivalence, phases.WrongOpRejected})
	for _, world := range []int{3, 4} {
		wantFailed(t, world, faults, []string{phases.ExactSumEquivalence})
	}
}

// TestContractsReversedReduceScatter: the contracts sum exact integers, so
// the order of a sum cannot show in them.
func TestContractsReversedReduceScatter(t *testing.T) {
	for _, world := range []int{3, 4} {
		wantFailed(t, world, inmem.Faults{ReversedReduceScatter: true}, nil)
	}
}
