package phases

import (
	"fmt"
	"sort"
	"strings"

	"rsag/coll"
)

// Groups splits the world into equal groups for the hierarchical
// decomposition: rank r is in group Group[r] at position Pos[r]. A group is
// a node's ranks, or an equal part of them (group_size), in node-local
// order, so that ReduceScatter and AllGather stay inside a node and only
// AllReduce crosses between nodes.
type Groups struct {
	Size  int // ranks per group
	Count int // groups
	Group []int
	Pos   []int
}

// NewGroups makes the groups of a world whose rank r runs on hosts[r], of
// size ranks each (0: the ranks per node). It refuses what has no equal
// two-level split: nodes with different numbers of ranks, or a group size
// that does not divide the ranks of a node.
func NewGroups(hosts []string, size int) (*Groups, error) {
	world := len(hosts)
	var nodes []string
	perNode := map[string][]int{}
	for r, h := range hosts {
		if _, ok := perNode[h]; !ok {
			nodes = append(nodes, h)
		}
		perNode[h] = append(perNode[h], r)
	}
	counts := map[int][]string{}
	for _, h := range nodes {
		counts[len(perNode[h])] = append(counts[len(perNode[h])], h)
	}
	if len(counts) > 1 {
		var parts []string
		for _, h := range nodes {
			parts = append(parts, fmt.Sprintf("%s %d", h, len(perNode[h])))
		}
		return nil, fmt.Errorf("the nodes hold different numbers of ranks (%s): the hierarchical decomposition needs the same number on every node; start as many ranks on each (e.g. mpirun --map-by ppr:N:node, srun --ntasks-per-node=N)",
			strings.Join(parts, ", "))
	}
	local := len(perNode[nodes[0]])
	if size == 0 {
		size = local
	}
	switch {
	case size < 1 || world%size != 0:
		return nil, fmt.Errorf("hierarchy.group_size %d does not divide the world size %d: use a divisor of %d (%s)", size, world, world, divisorsText(world))
	case local%size != 0:
		return nil, fmt.Errorf("hierarchy.group_size %d does not divide the %d ranks of each node: a group must not span nodes; use a divisor of %d (%s)", size, local, local, divisorsText(local))
	}
	g := &Groups{Size: size, Count: world / size, Group: make([]int, world), Pos: make([]int, world)}
	for n, h := range nodes {
		for l, r := range perNode[h] {
			g.Group[r] = n*(local/size) + l/size
			g.Pos[r] = l % size
		}
	}
	return g, nil
}

func divisorsText(n int) string {
	var d []string
	for i := 2; i <= n; i++ {
		if n%i == 0 {
			d = append(d, fmt.Sprint(i))
		}
	}
	return strings.Join(d, ", ")
}

// members returns the world ranks of rank's scope, in their order there,
// and rank's index among them.
func (g *Groups) members(s coll.Scope, rank, world int) ([]int, int) {
	if s == coll.World || g == nil {
		all := make([]int, world)
		for r := range all {
			all[r] = r
		}
		return all, rank
	}
	var out []int
	for r := 0; r < world; r++ {
		if (s == coll.InGroup && g.Group[r] == g.Group[rank]) || (s == coll.AcrossGroups && g.Pos[r] == g.Pos[rank]) {
			out = append(out, r)
		}
	}
	order := func(r int) int {
		if s == coll.InGroup {
			return g.Pos[r]
		}
		return g.Group[r]
	}
	sort.Slice(out, func(i, j int) bool { return order(out[i]) < order(out[j]) })
	return out, order(rank)
}

// split returns rank's color and key for its scope's sub-communicator.
func (g *Groups) split(s coll.Scope, rank int) (color, key int) {
	if s == coll.InGroup {
		return g.Group[rank], g.Pos[rank]
	}
	return g.Pos[rank], g.Group[rank]
}

// scopes are a rank's backends for every scope of the hierarchy.
type scopes struct {
	groups *Groups
	be     map[coll.Scope]coll.Backend
}

// size is how many ranks the scope has.
func (sc *scopes) size(s coll.Scope) int {
	switch {
	case s == coll.World || sc.groups == nil:
		return sc.be[coll.World].WorldSize()
	case s == coll.InGroup:
		return sc.groups.Size
	}
	return sc.groups.Count
}

// openScopes splits be into this rank's group and across-groups
// communicators (collective: every rank calls it in the same order), under
// the same watch as be; with no groups there is only the world.
func openScopes(be coll.Backend, g *Groups) (*scopes, func() error, error) {
	sc := &scopes{groups: g, be: map[coll.Scope]coll.Backend{coll.World: be}}
	if g == nil {
		return sc, noRelease, nil
	}
	sp, ok := coll.Find[coll.Splitter](be)
	if !ok {
		return nil, nil, fmt.Errorf("the hierarchical decomposition needs sub-communicators, which the %s backend has not", be.Info().Backend)
	}
	var opened []coll.Backend
	release := func() error {
		var first error
		for _, b := range opened {
			if err := b.Close(); err != nil && first == nil {
				first = err
			}
		}
		return first
	}
	for _, s := range []coll.Scope{coll.InGroup, coll.AcrossGroups} {
		color, key := g.split(s, be.Rank())
		sub, err := sp.Split(color, key)
		if err != nil {
			release()
			return nil, nil, fmt.Errorf("splitting the world into %s communicators: %w", s, err)
		}
		opened = append(opened, sub)
		sc.be[s] = rewatch(be, sub)
	}
	return sc, release, nil
}

// layout is the world's shape as the modes see it.
func (sc *scopes) layout() coll.Layout { return layoutOf(sc.be[coll.World].WorldSize(), sc.groups) }

// Of is every rank's group, by rank; nil for no groups (g nil).
func (g *Groups) Of() []int {
	if g == nil {
		return nil
	}
	return g.Group
}
