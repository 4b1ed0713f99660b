// Package locate finds the node, the link or the rank that makes a
// collective slow, from measurements that the locate phase takes: the
// schedules that say which pairs run together (Circle, Strided), and the
// solver that attributes each slowness (Solve). It imports nothing of
// rsag's but its quantiles, so that both the phase that measures (package phases) and the
// reports that judge (package report) stand on it, and it is tested on
// synthetic matrices of any size without a cluster.
//
// The method, in short: every figure is a bus bandwidth compared with the
// median of the same measurement (collective and size) in the same repeat
// of the same run, so that it holds on any fabric. A member (a node, or a
// rank within a node) is slow with a partner when their pair is; it is a
// suspect when it is slow with most of its partners (and all of up to
// three), or when its own inside
// measurement is slow. A pair that is slow while neither of its members is
// a suspect is a suspect link. Slow means below Threshold times the median
// in every repeat (the repeats are taken interleaved in time, so that a
// passing disturbance touches one of them, not all), with a margin beyond
// the spread of the healthy units: noise makes no suspect. Whether the
// problem is latency or bandwidth is the size at which the suspect is
// furthest below the median: a small (latency-bound) size or a large
// (bandwidth-bound) one.
package locate

import "fmt"

// Pair is two members that run together, A < B.
type Pair struct{ A, B int }

// The schedules' names.
const (
	Full    = "full"    // every pair: the circle method
	Sampled = "sampled" // ring neighbours and a few strides
)

// Schedule is which pairs run in which round: in a round, no member is in
// two pairs, so that every pair of a round runs at the same time.
type Schedule struct {
	Kind    string
	Members int
	Rounds  [][]Pair
	// Strides are the sampled schedule's: member i meets i±s (mod
	// Members) for each; nil for the full one.
	Strides []int
}

// Choose is the full schedule for up to maxFull members, else the sampled
// one in which every member meets at least minPartners others.
func Choose(n, maxFull, minPartners int) Schedule {
	if n <= maxFull {
		return Circle(n)
	}
	return Strided(n, minPartners)
}

// Circle is the round-robin of the circle method: n-1 rounds for even n,
// n rounds for odd n with one member sitting out of each. Member 0 stays
// put while the others turn one place a round; in each round the first
// sits opposite the last, the second the second-to-last, and so on.
func Circle(n int) Schedule {
	s := Schedule{Kind: Full, Members: n}
	if n < 2 {
		return s
	}
	m := n + n%2 // an odd n gets a phantom member n: its partner sits out
	ring := make([]int, m-1)
	for i := range ring {
		ring[i] = i + 1
	}
	seat := make([]int, m)
	for r := 0; r < m-1; r++ {
		seat[0] = 0
		for i := range ring {
			seat[i+1] = ring[(i+r)%len(ring)]
		}
		var round []Pair
		for i := 0; i < m/2; i++ {
			a, b := seat[i], seat[m-1-i]
			if a == n || b == n {
				continue
			}
			round = append(round, ordered(a, b))
		}
		s.Rounds = append(s.Rounds, round)
	}
	return s
}

func ordered(a, b int) Pair {
	if a > b {
		a, b = b, a
	}
	return Pair{a, b}
}

// Strided is the sampled schedule for n members: ring neighbours (stride
// 1) and as many more strides, spread evenly up to n/2, as make every
// member meet at least minPartners others (each stride below n/2 gives two
// partners, n/2 itself one). The pairs of a stride form cycles (i, i+s,
// i+2s, ...); alternate edges of each cycle run together, so a stride
// takes two rounds, three when its cycles are odd, one at n/2.
func Strided(n, minPartners int) Schedule {
	s := Schedule{Kind: Sampled, Members: n}
	if n < 2 {
		return s
	}
	half := n / 2
	partners := func(strides []int) int {
		p := 0
		for _, st := range strides {
			if 2*st == n {
				p++
			} else {
				p += 2
			}
		}
		return p
	}
	want := min(minPartners, n-1)
	for k := 1; k <= half; k++ {
		var strides []int
		seen := map[int]bool{}
		for j := 0; j < k; j++ {
			// j = 0 is the ring; the others spread evenly over (1, n/2].
			st := 1 + j*(half-1)/max(k-1, 1)
			for seen[st] && st < half {
				st++
			}
			if !seen[st] {
				seen[st] = true
				strides = append(strides, st)
			}
		}
		if partners(strides) >= want || k == half {
			s.Strides = strides
			break
		}
	}
	for _, st := range s.Strides {
		s.Rounds = append(s.Rounds, strideRounds(n, st)...)
	}
	return s
}

// strideRounds are the rounds of the pairs (i, i+st mod n): alternate edges
// of each cycle, and the closing edge of an odd cycle alone.
func strideRounds(n, st int) [][]Pair {
	rounds := make([][]Pair, 3)
	done := make([]bool, n)
	for start := 0; start < n; start++ {
		if done[start] {
			continue
		}
		var cycle []int
		for v := start; !done[v]; v = (v + st) % n {
			done[v] = true
			cycle = append(cycle, v)
		}
		l := len(cycle)
		if l == 2 { // st == n/2: one edge, not two
			rounds[0] = append(rounds[0], ordered(cycle[0], cycle[1]))
			continue
		}
		for t := 0; t < l; t++ {
			e := ordered(cycle[t], cycle[(t+1)%l])
			switch {
			case l%2 == 1 && t == l-1:
				rounds[2] = append(rounds[2], e)
			default:
				rounds[t%2] = append(rounds[t%2], e)
			}
		}
	}
	var out [][]Pair
	for _, r := range rounds {
		if len(r) > 0 {
			out = append(out, r)
		}
	}
	return out
}

// Pairs is every pair of the schedule, round by round.
func (s Schedule) Pairs() []Pair {
	var out []Pair
	for _, r := range s.Rounds {
		out = append(out, r...)
	}
	return out
}

// Partners is how many distinct others each member meets.
func (s Schedule) Partners() []int {
	seen := map[Pair]bool{}
	n := make([]int, s.Members)
	for _, p := range s.Pairs() {
		if !seen[p] {
			seen[p] = true
			n[p.A]++
			n[p.B]++
		}
	}
	return n
}

// Describe says which schedule it is in words, for tables and logs.
func (s Schedule) Describe() string {
	pairs := len(s.Pairs())
	if s.Kind == Sampled {
		return fmt.Sprintf("sampled: strides %v, %d rounds, %d of %d pairs", s.Strides, len(s.Rounds), pairs, s.Members*(s.Members-1)/2)
	}
	return fmt.Sprintf("full (circle method): %d rounds, all %d pairs", len(s.Rounds), pairs)
}

// Coverage is how many distinct pairs of members the schedule tries, of
// all n(n-1)/2.
func (s Schedule) Coverage() (tried, all int) {
	seen := map[Pair]bool{}
	for _, p := range s.Pairs() {
		seen[p] = true
	}
	return len(seen), s.Members * (s.Members - 1) / 2
}

// MissChance is the chance that the schedule never tries one bad link,
// any pair of members alike: the share of pairs it leaves out.
func (s Schedule) MissChance() float64 {
	tried, all := s.Coverage()
	if all == 0 {
		return 0
	}
	return 1 - float64(tried)/float64(all)
}

// Untried lists the first limit pairs the schedule never tries, in order
// of their first member, then their second.
func (s Schedule) Untried(limit int) []Pair {
	seen := map[Pair]bool{}
	for _, p := range s.Pairs() {
		seen[p] = true
	}
	var out []Pair
	for a := 0; a < s.Members && len(out) < limit; a++ {
		for b := a + 1; b < s.Members && len(out) < limit; b++ {
			if !seen[Pair{A: a, B: b}] {
				out = append(out, Pair{A: a, B: b})
			}
		}
	}
	return out
}
