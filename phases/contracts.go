package phases

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"rsag/coll"
)

// ContractResult is one proof on one rank: the seed's name, whether it held,
// and the seed's detail text.
type ContractResult struct {
	Name    string
	Correct bool
	Detail  string
}

// The seed's contract names, in its order; users' notebooks key on them.
const (
	ExactSumEquivalence     = "exact-sum-equivalence"
	WrongShardOrderRejected = "wrong-shard-order-rejected"
	WrongOpRejected         = "wrong-reduction-op-rejected"
	PaddingAndTrim          = "padding-and-trim-equivalence"
	NondivisibleRejected    = "nondivisible-without-padding-rejected"
)

// ExactCount is the seed's 20 int64 elements, rounded up to a multiple of
// the world size so that the decomposition is defined for any W.
func ExactCount(world int) int { return (20 + world - 1) / world * world }

// LogicalCount is the seed's 1003 elements, or the next count that does not
// divide by W when W divides 1003 (W = 17, 59, 1003), so that padding is
// always needed.
func LogicalCount(world int) int {
	n := 1003
	for n%world == 0 {
		n++
	}
	return n
}

// RunContracts runs the seed's five contracts on this rank. A contract that
// does not hold is a result with Correct false, not an error; errors are
// failures of the backend itself.
func RunContracts(be coll.Backend) (results []ContractResult, err error) {
	a := &arena{be: be}
	defer a.release(&err)
	world, rank := be.WorldSize(), be.Rank()
	record := func(name string, ok bool, detail string) {
		results = append(results, ContractResult{Name: name, Correct: ok, Detail: detail})
	}

	// Exact, nonuniform integer input proves rank-major shard placement.
	base, expected := exactInput(world, rank)
	n := len(base)
	in, err := a.int64s(base)
	if err != nil {
		return nil, err
	}
	direct, err := a.int64s(base)
	if err != nil {
		return nil, err
	}
	gathered, err := reduceScatterAllGather(a, in, coll.Sum)
	if err != nil {
		return nil, err
	}
	if err := be.Run(coll.AllReduce, direct, direct, coll.Sum); err != nil {
		return nil, err
	}
	got, err := readAll(be, direct, gathered)
	if err != nil {
		return nil, err
	}
	directV, gatheredV := got[0], got[1]
	record(ExactSumEquivalence, slices.Equal(directV, gatheredV) && slices.Equal(gatheredV, expected),
		"int64 full tensor direct==RS+AG==CPU formula")

	// AllGather is rank-major; rotating its chunks by one rank is a
	// non-equivalent transform that the comparison must catch.
	shard := n / world
	rotated := append(append([]int64(nil), gatheredV[n-shard:]...), gatheredV[:n-shard]...)
	record(WrongShardOrderRejected, !slices.Equal(directV, rotated), "rank-major chunks rotated by one rank")

	maxGathered, err := reduceScatterAllGather(a, in, coll.Max)
	if err != nil {
		return nil, err
	}
	got, err = readAll(be, maxGathered)
	if err != nil {
		return nil, err
	}
	record(WrongOpRejected, !slices.Equal(directV, got[0]), "direct SUM compared with ReduceScatter MAX plus AllGather")

	// Equal-size ReduceScatter needs divisibility; padding with SUM's
	// identity (0) and trimming restores equivalence.
	logical := LogicalCount(world)
	padded := (logical + world - 1) / world * world
	logicalV := make([]int64, logical)
	for i := range logicalV {
		logicalV[i] = int64(i + rank*10000)
	}
	directUneven, err := a.int64s(logicalV)
	if err != nil {
		return nil, err
	}
	if err := be.Run(coll.AllReduce, directUneven, directUneven, coll.Sum); err != nil {
		return nil, err
	}
	paddedIn, err := a.int64s(append(slices.Clone(logicalV), make([]int64, padded-logical)...))
	if err != nil {
		return nil, err
	}
	paddedOut, err := reduceScatterAllGather(a, paddedIn, coll.Sum)
	if err != nil {
		return nil, err
	}
	got, err = readAll(be, directUneven, paddedOut)
	if err != nil {
		return nil, err
	}
	unevenV, paddedV := got[0], got[1]
	record(PaddingAndTrim, slices.Equal(unevenV, paddedV[:logical]),
		fmt.Sprintf("logical=%d;padded=%d;identity=0", logical, padded))

	// Without padding the collective must refuse: our wrapper checks the
	// shapes because NCCL cannot see buffer sizes.
	logicalIn, err := a.int64s(logicalV)
	if err != nil {
		return nil, err
	}
	tooShort, err := a.alloc(coll.Elems(coll.Int64, logical/world))
	if err != nil {
		return nil, err
	}
	rsErr := be.Run(coll.ReduceScatter, logicalIn, tooShort, coll.Sum)
	var shapeErr *coll.ShapeError
	if rsErr != nil && !errors.As(rsErr, &shapeErr) {
		return nil, fmt.Errorf("non-divisible reduce-scatter failed in the library instead of our shape check: %w", rsErr)
	}
	detail := ""
	if rsErr != nil {
		detail = strings.ReplaceAll(rsErr.Error(), "\n", " ")
		if len(detail) > 400 {
			detail = detail[:400]
		}
	}
	record(NondivisibleRejected, rsErr != nil, detail)
	return results, be.Synchronize()
}

// exactInput is the seed's exact, nonuniform int64 input of rank (element
// i holds i + 100 rank) and its sum over world ranks, for ExactCount(world)
// elements.
func exactInput(world, rank int) (base, expected []int64) {
	n := ExactCount(world)
	base, expected = make([]int64, n), make([]int64, n)
	for i := range base {
		base[i] = int64(i + rank*100)
		expected[i] = int64(world*i + 100*world*(world-1)/2)
	}
	return base, expected
}

// readAll waits for the device and reads every buffer back as int64s.
func readAll(be coll.Backend, bufs ...coll.Buffer) ([][]int64, error) {
	if err := be.Synchronize(); err != nil {
		return nil, err
	}
	out := make([][]int64, len(bufs))
	for i, b := range bufs {
		v, err := readInt64s(be, b)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// reduceScatterAllGather is the decomposition: ReduceScatter into a new
// shard, then AllGather of that shard into a new full buffer.
func reduceScatterAllGather(a *arena, in coll.Buffer, op coll.Op) (coll.Buffer, error) {
	world := a.be.WorldSize()
	shard, err := a.alloc(coll.Elems(in.DType(), in.Count()/world))
	if err != nil {
		return nil, err
	}
	out, err := a.alloc(coll.Elems(in.DType(), in.Count()))
	if err != nil {
		return nil, err
	}
	if err := a.be.Run(coll.ReduceScatter, in, shard, op); err != nil {
		return nil, err
	}
	return out, a.be.Run(coll.AllGather, shard, out, coll.Sum)
}
