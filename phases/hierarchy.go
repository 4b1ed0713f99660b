package phases

import (
	"fmt"
	"slices"
	"strings"

	"rsag/coll"
)

// The hierarchical contracts' names.
const (
	HierarchicalSumEquivalence = "hierarchical-sum-equivalence"
	HierarchicalWrongGroup     = "hierarchical-wrong-group-rejected"
	UnevenGroupsRejected       = "uneven-groups-rejected"
)

// RunHierarchyContracts proves the two-level decomposition on this rank's
// groups (hosts[r] is rank r's host, as the groups were made from): on the
// seed's exact, nonuniform int64 input, flat AllReduce equals ReduceScatter
// in the group + AllReduce across the groups + AllGather in the group
// equals the formula; gathering across the groups instead of within them
// must differ; and rsag's own check refuses a world that does not divide
// into equal groups, its message recorded as the detail.
func RunHierarchyContracts(be coll.Backend, g *Groups, hosts []string) (results []ContractResult, err error) {
	sc, closeScopes, err := openScopes(be, g)
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := closeScopes(); err == nil {
			err = cerr
		}
	}()
	a := &arena{be: be}
	defer a.release(&err)
	in, across := sc.be[coll.InGroup], sc.be[coll.AcrossGroups]
	world, rank := be.WorldSize(), be.Rank()
	record := func(name string, ok bool, detail string) {
		results = append(results, ContractResult{Name: name, Correct: ok, Detail: detail})
	}

	base, expected := exactInput(world, rank)
	n := len(base)
	flat, err := a.int64s(base)
	if err != nil {
		return nil, err
	}
	if err := be.Run(coll.AllReduce, flat, flat, coll.Sum); err != nil {
		return nil, err
	}
	full, err := a.int64s(base)
	if err != nil {
		return nil, err
	}
	shard, err := a.alloc(coll.Elems(coll.Int64, n/g.Size))
	if err != nil {
		return nil, err
	}
	if err := in.Run(coll.ReduceScatter, full, shard, coll.Sum); err != nil {
		return nil, err
	}
	if err := across.Run(coll.AllReduce, shard, shard, coll.Sum); err != nil {
		return nil, err
	}
	gathered, err := a.alloc(coll.Elems(coll.Int64, n))
	if err != nil {
		return nil, err
	}
	if err := in.Run(coll.AllGather, shard, gathered, coll.Sum); err != nil {
		return nil, err
	}
	// The negative control gathers the same shards among the wrong ranks:
	// across the groups, where every rank holds the same part of the sum.
	wrong, err := a.alloc(coll.Elems(coll.Int64, n/g.Size*g.Count))
	if err != nil {
		return nil, err
	}
	if err := across.Run(coll.AllGather, shard, wrong, coll.Sum); err != nil {
		return nil, err
	}
	got, err := readAll(be, flat, gathered, wrong)
	if err != nil {
		return nil, err
	}
	flatV, hierV, wrongV := got[0], got[1], got[2]
	record(HierarchicalSumEquivalence, slices.Equal(flatV, hierV) && slices.Equal(hierV, expected),
		fmt.Sprintf("int64 full tensor direct==RS(in group of %d)+AR(across %d groups)+AG(in group)==CPU formula", g.Size, g.Count))
	record(HierarchicalWrongGroup, !slices.Equal(flatV, wrongV), "AllGather across the groups instead of within one")

	// A world with one rank more on the first node cannot split evenly.
	uneven := append(slices.Clone(hosts), hosts[0])
	_, gerr := NewGroups(uneven, g.Size)
	detail := ""
	if gerr != nil {
		detail = strings.ReplaceAll(gerr.Error(), "\n", " ")
	}
	record(UnevenGroupsRejected, gerr != nil, detail)
	return results, nil
}
