package locate

import (
	"fmt"
	"math"
	"testing"
)

// checkRounds fails t when a member is in two pairs of one round, a pair
// runs twice, or a pair is not two distinct members in order.
func checkRounds(t *testing.T, s Schedule) map[Pair]bool {
	t.Helper()
	seen := map[Pair]bool{}
	for r, round := range s.Rounds {
		busy := map[int]bool{}
		for _, p := range round {
			if p.A >= p.B || p.A < 0 || p.B >= s.Members {
				t.Fatalf("round %d: pair %v of %d members", r, p, s.Members)
			}
			if busy[p.A] || busy[p.B] {
				t.Fatalf("round %d: %v meets a member already busy in this round", r, p)
			}
			busy[p.A], busy[p.B] = true, true
			if seen[p] {
				t.Fatalf("pair %v runs twice", p)
			}
			seen[p] = true
		}
	}
	return seen
}

// The circle method: every pair exactly once, n-1 rounds for even n and n
// for odd, each member sitting out exactly one round when n is odd.
func TestCircleMeetsEveryPairOnce(t *testing.T) {
	for n := 1; n <= 33; n++ {
		s := Circle(n)
		seen := checkRounds(t, s)
		if want := n * (n - 1) / 2; len(seen) != want {
			t.Errorf("n=%d: %d pairs, want %d", n, len(seen), want)
		}
		wantRounds := n - 1 + n%2
		if n < 2 {
			wantRounds = 0
		}
		if len(s.Rounds) != wantRounds {
			t.Errorf("n=%d: %d rounds, want %d", n, len(s.Rounds), wantRounds)
		}
		if n%2 == 1 && n > 1 {
			out := make([]int, n)
			for _, round := range s.Rounds {
				if len(round) != (n-1)/2 {
					t.Errorf("n=%d: a round of %d pairs, want %d", n, len(round), (n-1)/2)
				}
				in := map[int]bool{}
				for _, p := range round {
					in[p.A], in[p.B] = true, true
				}
				for m := range n {
					if !in[m] {
						out[m]++
					}
				}
			}
			for m, k := range out {
				if k != 1 {
					t.Errorf("n=%d: member %d sits out %d rounds, want 1", n, m, k)
				}
			}
		}
	}
}

// The sampled schedule: every member meets at least min partners in a few
// rounds (two or three a stride), each round a matching.
func TestStridedMeetsEnoughPartnersInFewRounds(t *testing.T) {
	for _, n := range []int{3, 4, 5, 16, 65, 100, 128, 129, 1000, 1024, 4097} {
		for _, want := range []int{2, 4, 8, 16} {
			t.Run(fmt.Sprintf("n%d-min%d", n, want), func(t *testing.T) {
				s := Strided(n, want)
				checkRounds(t, s)
				for m, p := range s.Partners() {
					if p < min(want, n-1) {
						t.Fatalf("member %d meets %d partners, want at least %d (strides %v)", m, p, min(want, n-1), s.Strides)
					}
				}
				if len(s.Rounds) > 3*len(s.Strides) || len(s.Strides) > want/2+1 {
					t.Errorf("%d rounds over strides %v for %d partners", len(s.Rounds), s.Strides, want)
				}
			})
		}
	}
}

func TestChoose(t *testing.T) {
	if s := Choose(64, 64, 8); s.Kind != Full || len(s.Rounds) != 63 {
		t.Errorf("64 nodes, max 64: %s", s.Describe())
	}
	if s := Choose(65, 64, 8); s.Kind != Sampled {
		t.Errorf("65 nodes, max 64: %s", s.Describe())
	}
	s := Choose(1024, 64, 8)
	t.Logf("1024 nodes: %s; full would be %s", s.Describe(), Circle(1024).Describe())
	if len(s.Rounds) > 12 {
		t.Errorf("1024 nodes sampled in %d rounds", len(s.Rounds))
	}
}

// What a sampled schedule does not see, computed (docs/locate.md's table
// of the chance of missing one bad link): at 16 nodes with max_full_nodes 8
// and min_partners 4 (issue 57's run), and with the defaults (64, 8) at
// 16, 256 and 1,024 nodes.
func TestWhatASampledScheduleMisses(t *testing.T) {
	for _, c := range []struct {
		n, maxFull, minPartners int
		tried, all              int
	}{
		{16, 8, 4, 40, 120},
		{16, 64, 8, 120, 120},
		{256, 64, 8, 1152, 32640},
		{1024, 64, 8, 4608, 523776},
	} {
		s := Choose(c.n, c.maxFull, c.minPartners)
		tried, all := s.Coverage()
		if tried != c.tried || all != c.all {
			t.Errorf("%d nodes (%d, %d): %d of %d pairs tried, want %d of %d", c.n, c.maxFull, c.minPartners, tried, all, c.tried, c.all)
		}
		if want := 1 - float64(c.tried)/float64(c.all); math.Abs(s.MissChance()-want) > 1e-12 {
			t.Errorf("%d nodes: miss chance %v, want %v", c.n, s.MissChance(), want)
		}
		untried := s.Untried(all)
		if len(untried) != all-tried {
			t.Errorf("%d nodes: %d untried listed, want %d", c.n, len(untried), all-tried)
		}
		in := map[Pair]bool{}
		for _, p := range s.Pairs() {
			in[p] = true
		}
		for _, p := range untried {
			if in[p] || p.A >= p.B {
				t.Errorf("%d nodes: %v listed untried", c.n, p)
			}
		}
	}
	if got := Choose(16, 8, 4).Untried(3); len(got) != 3 || got[0] != (Pair{0, 2}) {
		t.Errorf("the first 3 untried of 16: %v", got)
	}
}
