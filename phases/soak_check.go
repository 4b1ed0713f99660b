package phases

import (
	"slices"

	"rsag/coll"
)

// stepPlan is, for this rank, what each chunk of a step's output holds:
// which chunk of the full buffer (chunk[p], of the output's chunk p), and
// the reduction of which ranks' inputs there (from[p]).
type stepPlan struct {
	chunk []int
	from  [][]int
	kind  []string // how this rank came by it in the step (SoakFault.Kinds)
}

// planOf works out m's plan on this rank by running its steps' host
// references (coll.Collective.Reference) at the granularity of chunks,
// with each rank's chunks marked: by their index under max, to follow
// where each chunk goes, and one rank at a time by a one under max, to
// follow whose inputs reach it. It costs O(W^3) per mode, once.
func planOf(m coll.TimedMode, g *Groups, world, rank int) []stepPlan {
	run := func(mark func(r, q int) float64) [][]float64 {
		held := make([][]float64, world)
		for r := range held {
			held[r] = make([]float64, world)
			for q := range held[r] {
				held[r][q] = mark(r, q)
			}
		}
		var outs [][]float64
		for _, s := range m.Steps {
			held = stepChunks(s, coll.Max, g, held)
			outs = append(outs, held[rank])
		}
		return outs
	}
	chunks := run(func(r, q int) float64 { return float64(q) })
	plan := make([]stepPlan, len(m.Steps))
	for i, out := range chunks {
		plan[i].chunk = make([]int, len(out))
		plan[i].from = make([][]int, len(out))
		for p, q := range out {
			plan[i].chunk[p] = int(q)
		}
	}
	for r0 := range world {
		for i, out := range run(func(r, q int) float64 { return float64(boolInt(r == r0)) }) {
			for p, v := range out {
				if v == 1 {
					plan[i].from[p] = append(plan[i].from[p], r0)
				}
			}
		}
	}
	// Before the first step this rank holds every chunk of its own input.
	before := stepPlan{chunk: make([]int, world), from: make([][]int, world)}
	for q := range world {
		before.chunk[q], before.from[q] = q, []int{rank}
	}
	for i := range plan {
		plan[i].kind = make([]string, len(plan[i].chunk))
		for p, q := range plan[i].chunk {
			plan[i].kind[p] = "received"
			if at := slices.Index(before.chunk, q); at >= 0 {
				plan[i].kind[p] = "kept"
				if len(plan[i].from[p]) > len(before.from[at]) {
					plan[i].kind[p] = "reduced"
				}
			}
		}
		before = plan[i]
	}
	return plan
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// soakInput is every rank's input of one iteration: element i of rank r
// is 1 + (a random word of (seed, iteration, r, i)) mod limit, where limit
// is the largest that keeps the op's reduction, and the sum, of any world
// of such values exact in the dtype. Every rank can regenerate every
// other's, so each checks its outputs against the reduction of them all.
type soakInput struct {
	streams []RNG
	d       coll.DType
	op      coll.Op
	limit   uint64
}

func newSoakInput(seed uint64, iter, world int, d coll.DType, op coll.Op) soakInput {
	key := NewRNG(seed, iter).Uint64(7)
	in := soakInput{streams: make([]RNG, world), d: d, op: op, limit: 1}
	for r := range in.streams {
		in.streams[r] = NewRNG(key, r)
	}
	in.limit = soakLimit(world, d, op)
	return in
}

// soakLimit is the largest input that keeps op's reduction, and the sum,
// of world inputs of at most it exact in d.
func soakLimit(world int, d coll.DType, op coll.Op) uint64 {
	top := min(d.MaxExact(), 1<<53)
	v := make([]float64, world)
	fits := func(l uint64) bool {
		for i := range v {
			v[i] = float64(l)
		}
		return coll.Reduce(op, v) <= top && coll.Reduce(coll.Sum, v) <= top
	}
	// The largest limit that fits, by bisection (every op's reduction of
	// equal values grows with them).
	lo, hi := uint64(1), uint64(top)
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		if fits(mid) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

func (in soakInput) at(r, i int) float64 { return float64(1 + in.streams[r].Uint64(i)%in.limit) }

// fill writes rank's input into b, checkChunk elements at a time.
func (in soakInput) fill(be coll.Backend, b coll.Buffer, rank int, sc *soakScratch) error {
	es := in.d.Size()
	if n := min(b.Count(), checkChunk) * es; len(sc.host) < n {
		sc.host, sc.want = make([]byte, n), make([]byte, n)
	}
	host := sc.host
	for off := 0; off < b.Count(); off += checkChunk {
		k := min(checkChunk, b.Count()-off)
		for i := range k {
			in.d.Encode(in.at(rank, off+i), host[i*es:])
		}
		view, err := be.View(b, off, k)
		if err != nil {
			return err
		}
		if err := be.Write(view, host[:k*es]); err != nil {
			return err
		}
	}
	return nil
}

// soakScratch is the host memory the soak's checks reuse from one
// iteration to the next.
type soakScratch struct {
	host, want []byte
	vals       []float64
}

// check compares every element of out, a step's output on this rank whose
// chunks of chunk elements plan describes, with the reduction of the
// inputs that reach it, and returns what it found wrong, or nil.
func (in soakInput) check(be coll.Backend, out coll.Buffer, plan stepPlan, chunk int, sc *soakScratch) (*SoakFault, error) {
	es := in.d.Size()
	n := min(chunk, checkChunk) * es
	if len(sc.host) < n {
		sc.host, sc.want = make([]byte, n), make([]byte, n)
	}
	host, want, vals := sc.host, sc.want, sc.vals[:0]
	var f *SoakFault
	wrongChunks := map[int]string{}
	for p, q := range plan.chunk {
		for j0 := 0; j0 < chunk; j0 += checkChunk {
			k := min(checkChunk, chunk-j0)
			view, err := be.View(out, p*chunk+j0, k)
			if err != nil {
				return nil, err
			}
			if err := be.Read(view, host[:k*es]); err != nil {
				return nil, err
			}
			for i := range k {
				vals = vals[:0]
				for _, r := range plan.from[p] {
					vals = append(vals, in.at(r, q*chunk+j0+i))
				}
				in.d.Encode(coll.Reduce(in.op, vals), want[i*es:])
			}
			sc.vals = vals
			if string(host[:k*es]) == string(want[:k*es]) {
				continue
			}
			for i := range k {
				got, exp := host[i*es:(i+1)*es], want[i*es:(i+1)*es]
				if string(got) == string(exp) {
					continue
				}
				if f == nil {
					f = &SoakFault{Elements: out.Count(), Index: p*chunk + j0 + i,
						Expected: in.d.Value(exp), Got: in.d.Value(got), ExpectedBits: bitsText(exp), GotBits: bitsText(got)}
				}
				f.Wrong++
				wrongChunks[q] = plan.kind[p]
			}
		}
	}
	if f != nil {
		for q := range wrongChunks {
			f.Chunks = append(f.Chunks, q)
		}
		slices.Sort(f.Chunks)
		for _, q := range f.Chunks {
			f.Kinds = append(f.Kinds, wrongChunks[q])
		}
	}
	return f, nil
}
