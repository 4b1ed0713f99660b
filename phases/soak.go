package phases

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/bits"
	"slices"
	"strings"
	"time"

	"rsag/coll"
)

// SoakSpec is what the soak phase runs: Iterations iterations, or as many
// as fit in Duration on rank 0's clock (exactly one of them is set). Each
// iteration draws a case, a pure function of Seed and the iteration, so
// that every rank draws the same one and a failure can be run again.
type SoakSpec struct {
	Duration   time.Duration
	Iterations int
	// SizesBytes are the sizes drawn from; when empty, a size is drawn from
	// MinBytes..MaxBytes, log-uniform, and rounded down to a whole number
	// of elements per rank (odd counts included).
	SizesBytes         []int64
	MinBytes, MaxBytes int64
	DTypes             []coll.DType
	Ops                []coll.Op
	Placements         []coll.Placement
	Offsets            []int64 // empty: 0
	Seed               uint64
	// FailAfter stops the phase after this many iterations found a wrong
	// element; 0 runs it to the end, counting them (a rate).
	FailAfter int
}

// SoakRun is the soak phase's Case.Run: a soak case is no timing run's.
const SoakRun = "soak"

// soakProgressEvery is how often rank 0 says how far the soak has got.
const soakProgressEvery = 5 * time.Second

// maxSoakFaults bounds the faults a soak keeps (a fault that strikes every
// iteration of a long soak with fail_after = 0); it counts them all.
const maxSoakFaults = 1000

// SoakPair is a dtype and op the soak draws together.
type SoakPair struct {
	DType coll.DType
	Op    coll.Op
}

func (p SoakPair) String() string { return fmt.Sprintf("%s %s", p.DType, p.Op) }

// Pairs are the dtype and op pairs the soak draws on world ranks, in the
// spec's order, and those it cannot: a pair whose reduction of world
// inputs is exact only when every input is 1 (int8 products on 8 ranks or
// more), where no check could tell one rank's chunk from another's. A
// soak, unlike a timing case, skips such a pair and says so: the shipped
// config then runs on any width.
func (s SoakSpec) Pairs(world int) (drawn, skipped []SoakPair) {
	for _, d := range s.DTypes {
		for _, o := range s.Ops {
			if p := (SoakPair{d, o}); soakLimit(world, d, o) >= 2 {
				drawn = append(drawn, p)
			} else {
				skipped = append(skipped, p)
			}
		}
	}
	return drawn, skipped
}

// Draw is the case of iteration iter on world ranks: its size, element
// type and op (one of Pairs), placement and buffer offset, drawn from the
// spec's lists with integer arithmetic only (the same on every machine).
func (s SoakSpec) Draw(iter, world int) coll.Case {
	return s.draw(iter, world, nil)
}

// draw is Draw over pairs, when the caller has them (Pairs), else its own.
func (s SoakSpec) draw(iter, world int, pairs []SoakPair) coll.Case {
	if pairs == nil {
		pairs, _ = s.Pairs(world)
	}
	r := NewRNG(s.Seed, iter)
	pick := func(k, n int) int { return int(r.Uint64(k) % uint64(n)) }
	p := pairs[pick(1, len(pairs))]
	d := p.DType
	c := coll.Case{Run: SoakRun, DType: d, Op: p.Op,
		Placement: s.Placements[pick(3, len(s.Placements))], Method: coll.PerOp, Batch: 1,
		Buffers: coll.PlainBuffers, CTAPolicy: coll.DefaultCTAPolicy}
	if len(s.Offsets) > 0 {
		c.Offset = s.Offsets[pick(4, len(s.Offsets))]
	}
	unit := int64(world * d.Size())
	size := int64(0)
	if len(s.SizesBytes) > 0 {
		size = s.SizesBytes[pick(0, len(s.SizesBytes))]
	} else {
		size = logUniform(r.Uint64(0), r.Uint64(5), s.MinBytes, s.MaxBytes)
	}
	c.SizeBytes = max(size/unit, 1) * unit
	return c
}

// logUniform is a size in lo..hi whose binary length is uniform over the
// range's (so 1K..1G tries small and large sizes alike), the rest uniform
// within it: two random words, integers only.
func logUniform(w1, w2 uint64, lo, hi int64) int64 {
	a, b := bits.Len64(uint64(lo)), bits.Len64(uint64(hi))
	n := a + int(w1%uint64(b-a+1)) // a size of n bits: 2^(n-1) .. 2^n-1
	from, to := max(int64(1)<<(n-1), lo), min(int64(1)<<n-1, hi)
	return from + int64(w2%uint64(to-from+1))
}

// soakModes are what every iteration runs on the same input: AllReduce,
// ReduceScatter + AllGather, and the hierarchical form when there are
// groups.
func soakModes(g *Groups) []coll.TimedMode {
	names := []coll.Mode{coll.Direct, coll.Decomposed}
	if g != nil {
		names = append(names, coll.Hierarchical)
	}
	out := make([]coll.TimedMode, len(names))
	for i, n := range names {
		out[i], _ = coll.ModeOf(n)
	}
	return out
}

// SoakFootprint is the most memory one iteration holds: every mode's
// buffers at the largest size, out of place, each with the largest offset.
func SoakFootprint(world int, spec SoakSpec, g *Groups) int64 {
	largest := spec.MaxBytes
	if len(spec.SizesBytes) > 0 {
		largest = slices.Max(spec.SizesBytes)
	}
	off := int64(0)
	if len(spec.Offsets) > 0 {
		off = slices.Max(spec.Offsets)
	}
	c := coll.Case{SizeBytes: largest, DType: coll.Int8, Placement: coll.OutOfPlace, Offset: off}
	var need int64
	for _, m := range soakModes(g) {
		need += m.Footprint(c, layoutOf(world, g))
	}
	return need
}

// CheckSoak returns an error, before any collective, for a spec this
// backend cannot run on its world: a dtype and op it cannot reduce, or no
// pair at all that can be checked on this many ranks (Pairs).
func CheckSoak(be coll.Backend, spec SoakSpec, g *Groups) error {
	for _, d := range spec.DTypes {
		for _, o := range spec.Ops {
			if err := be.Supports(d, o); err != nil {
				return fmt.Errorf("soak: %w", err)
			}
		}
	}
	if drawn, skipped := spec.Pairs(be.WorldSize()); len(drawn) == 0 {
		return fmt.Errorf("soak: no dtype and op of soak.dtypes and soak.ops can be checked on %d ranks (%s: %s): add a wider dtype (int32, float64) or an op other than prod, or use fewer ranks",
			be.WorldSize(), PairsText(skipped), SkippedWhy(be.WorldSize()))
	}
	if _, ok := coll.Find[coll.Splitter](be); g != nil && !ok {
		return fmt.Errorf("soak: the hierarchical form needs sub-communicators, which the %s backend has not", be.Info().Backend)
	}
	return nil
}

// SoakFault is what one rank found wrong in the output of one step of one
// mode in one iteration: how many elements, in which chunks of the full
// buffer (chunk q is the part rank q holds after ReduceScatter), and the
// first wrong element.
type SoakFault struct {
	Iteration  int       `json:"iteration"`
	Case       coll.Case `json:"case"`
	Rank       int       `json:"rank"`
	Host       string    `json:"host"`
	Mode       coll.Mode `json:"mode"`
	Step       int       `json:"step"`       // the step's index in the mode
	Collective string    `json:"collective"` // its label, "ReduceScatter"
	Elements   int       `json:"elements"`   // of its output on this rank
	Wrong      int       `json:"wrong"`
	Chunks     []int     `json:"chunks"` // ascending
	// Kinds says, for each of Chunks, how this rank came by that chunk in
	// this step: "reduced" (it combined the chunk, which it held before,
	// with other ranks' data), "received" (it did not hold it before), or
	// "kept" (it held it before, as it is: its own copy).
	Kinds []string `json:"kinds"`
	// The first wrong element: its index in the output and its byte offset
	// there (the output starts Case.Offset bytes into its allocation); what
	// it should hold and holds, as values and as bits.
	Index        int     `json:"index"`
	OffsetBytes  int64   `json:"offset_bytes"`
	Expected     float64 `json:"expected"`
	Got          float64 `json:"got"`
	ExpectedBits string  `json:"expected_bits"`
	GotBits      string  `json:"got_bits"`
}

// step names the fault's step as the verdict does: "AllReduce (direct)",
// "ReduceScatter (decomposed, step 1 of 2)".
func (f SoakFault) step(m coll.TimedMode) string {
	if len(m.Steps) == 1 {
		return fmt.Sprintf("%s (%s)", f.Collective, m.Name)
	}
	return fmt.Sprintf("%s (%s, step %d of %d)", f.Collective, m.Name, f.Step+1, len(m.Steps))
}

// SoakIteration is one iteration on every rank.
type SoakIteration struct {
	Iteration  int
	Case       coll.Case // Mode empty: every mode ran
	BytesMoved int64     // by this rank, every mode: each collective's full buffer
	Elapsed    time.Duration
	Wrong      int // elements wrong over every rank, mode and step
	Verdict    string
	First      *SoakFault // the first fault, in mode, step and rank order
}

// SoakResult is the soak phase on every rank (the same on each).
type SoakResult struct {
	Seed       uint64
	Iterations []SoakIteration
	Failed     int         // iterations that found a wrong element
	Faults     []SoakFault // every rank's, in iteration, mode, step and rank order, at most maxSoakFaults
	Verdict    string      // the first failed iteration's
	Suspects   []int       // its suspect ranks
	Elapsed    time.Duration
	BytesMoved int64
	Skipped    []SoakPair // the spec's pairs not drawn on this many ranks (Pairs)
}

// PairsText lists pairs: "int8 prod, uint8 prod".
func PairsText(ps []SoakPair) string {
	var out []string
	for _, p := range ps {
		out = append(out, p.String())
	}
	return strings.Join(out, ", ")
}

// SkippedWhy says why a pair is not drawn on world ranks.
func SkippedWhy(world int) string {
	return fmt.Sprintf("inputs small enough that the reduction and the sum of %d of them stay exact could only all be 1, which could not tell one rank's data from another's", world)
}

// soakNote is what each rank tells the others after every iteration.
type soakNote struct {
	Stop   bool        `json:"stop,omitempty"` // rank 0: the duration is over
	Faults []SoakFault `json:"faults,omitempty"`
}

// RunSoak runs the soak phase: every iteration draws a case (spec.Draw),
// fills every rank's input with values that differ by rank and element
// and whose reductions are exact, runs each mode of soakModes on that same
// input one step at a time, and checks every element of every step's
// output (the shard after ReduceScatter too) against the reduction of the
// ranks' regenerated inputs. After each iteration the ranks exchange what
// they found (comm must be a coll.Gatherer); a wrong element is diagnosed
// from every rank's findings (diagnose) and counted. The phase stops after
// spec.FailAfter failed iterations (0: never), else after its iterations
// or duration; it returns a *CheckError, the same on every rank, when any
// iteration failed. progress, if not nil, gets rank 0's line every few
// seconds.
func RunSoak(be coll.Backend, comm coll.Comm, spec SoakSpec, groups *Groups, progress func(string)) (res SoakResult, err error) {
	g, ok := comm.(coll.Gatherer)
	if !ok {
		return res, fmt.Errorf("soak: the ranks' comm cannot gather what each found")
	}
	res.Seed = spec.Seed
	world, rank := be.WorldSize(), be.Rank()
	host := be.Info().Host
	all, err := g.AllGather([]byte(host))
	if err != nil {
		return res, err
	}
	hosts := make([]string, len(all))
	for r, h := range all {
		hosts[r] = string(h)
	}
	sc, closeScopes, err := openScopes(be, groups)
	if err != nil {
		return res, fmt.Errorf("soak on rank %d: %w", rank, err)
	}
	defer func() {
		if cerr := closeScopes(); err == nil {
			err = cerr
		}
	}()
	modes := soakModes(groups)
	plans := make([][]stepPlan, len(modes))
	for i, m := range modes {
		plans[i] = planOf(m, groups, world, rank)
	}
	pairs, skipped := spec.Pairs(world)
	res.Skipped = skipped
	if progress != nil && len(skipped) > 0 {
		progress(fmt.Sprintf("soak: not drawn on %d ranks: %s (%s)", world, PairsText(skipped), SkippedWhy(world)))
	}
	start, lastSaid := time.Now(), time.Now()
	scratch := &soakScratch{}
	for iter := 0; spec.Iterations == 0 || iter < spec.Iterations; iter++ {
		c := spec.draw(iter, world, pairs)
		in := newSoakInput(spec.Seed, iter, world, c.DType, c.Op)
		var faults []SoakFault
		var moved int64
		for i, m := range modes {
			f, n, err := soakMode(sc, m, plans[i], c, in, iter, host, scratch)
			if err != nil {
				return res, fmt.Errorf("soak iteration %d (%s) %s on rank %d: %w", iter, soakCaseText(c), m.Name, rank, err)
			}
			faults, moved = append(faults, f...), moved+n
		}
		note := soakNote{Faults: faults, Stop: rank == 0 && spec.Duration > 0 && time.Since(start) >= spec.Duration}
		mine, err := json.Marshal(note)
		if err != nil {
			return res, err
		}
		said, err := g.AllGather(mine)
		if err != nil {
			return res, err
		}
		it := SoakIteration{Iteration: iter, Case: c, BytesMoved: moved, Elapsed: time.Since(start)}
		var every []SoakFault
		stop := false
		for r, b := range said {
			var n soakNote
			if err := json.Unmarshal(b, &n); err != nil {
				return res, fmt.Errorf("soak iteration %d: rank %d's findings: %w", iter, r, err)
			}
			every = append(every, n.Faults...)
			stop = stop || (r == 0 && n.Stop)
		}
		if len(every) > 0 {
			// In mode, then step, then rank order: the first is the first
			// wrong step's.
			slices.SortStableFunc(every, func(a, b SoakFault) int {
				ma := slices.IndexFunc(modes, func(m coll.TimedMode) bool { return m.Name == a.Mode })
				mb := slices.IndexFunc(modes, func(m coll.TimedMode) bool { return m.Name == b.Mode })
				if ma != mb {
					return ma - mb
				}
				if a.Step != b.Step {
					return a.Step - b.Step
				}
				return a.Rank - b.Rank
			})
			verdict, suspects := diagnose(iter, c, modes, every, hosts)
			it.Verdict, it.First = verdict, &every[0]
			for _, f := range every {
				it.Wrong += f.Wrong
			}
			if res.Failed == 0 {
				res.Verdict, res.Suspects = verdict, suspects
				if len(suspects) == 0 { // no one stands out: the ranks that saw it
					for _, f := range every {
						res.Suspects = append(res.Suspects, f.Rank)
					}
					slices.Sort(res.Suspects)
					res.Suspects = slices.Compact(res.Suspects)
				}
			}
			res.Failed++
			res.Faults = append(res.Faults, every[:min(len(every), maxSoakFaults-len(res.Faults))]...)
			if progress != nil && res.Failed <= 3 {
				progress("soak: " + verdict)
			}
		}
		res.Iterations = append(res.Iterations, it)
		res.BytesMoved += moved
		if progress != nil && time.Since(lastSaid) >= soakProgressEvery {
			lastSaid = time.Now()
			progress(soakProgress(res, time.Since(start), spec))
		}
		if stop || (spec.FailAfter > 0 && res.Failed >= spec.FailAfter) {
			break
		}
	}
	res.Elapsed = time.Since(start)
	if progress != nil {
		progress(soakProgress(res, res.Elapsed, spec))
	}
	if res.Failed > 0 {
		what := res.Verdict
		if res.Failed > 1 {
			what += fmt.Sprintf(" (%d of %d iterations found a wrong element)", res.Failed, len(res.Iterations))
		}
		return res, &CheckError{Phase: "soak", What: what, Ranks: res.Suspects}
	}
	return res, nil
}

// soakProgress is rank 0's line: iterations, bytes moved, failures.
func soakProgress(res SoakResult, took time.Duration, spec SoakSpec) string {
	of := fmt.Sprintf("of %d", spec.Iterations)
	if spec.Duration > 0 {
		of = fmt.Sprintf("in %.1f s of %.0f s", took.Seconds(), spec.Duration.Seconds())
	}
	return fmt.Sprintf("soak: %d iterations %s, %s moved by rank 0, %d failed (seed %d)",
		len(res.Iterations), of, bytesText(res.BytesMoved), res.Failed, spec.Seed)
}

// bytesText is a byte count in decimal units: "512 B", "3.4 MB".
func bytesText(n int64) string {
	switch {
	case n < 1e3:
		return fmt.Sprintf("%d B", n)
	case n < 1e6:
		return fmt.Sprintf("%.1f kB", float64(n)/1e3)
	case n < 1e9:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	}
	return fmt.Sprintf("%.2f GB", float64(n)/1e9)
}

// soakCaseText names a drawn case: "1.2M int32 sum in-place +64 B".
func soakCaseText(c coll.Case) string {
	return fmt.Sprintf("%s %s %s %s +%d B", coll.SizeText(c.SizeBytes), c.DType, c.Op, c.Placement, c.Offset)
}

// soakMode runs mode m of case c on input in, one step at a time, and
// checks each step's output on this rank; it returns what it found wrong
// and the bytes its collectives moved.
func soakMode(sc *scopes, m coll.TimedMode, plan []stepPlan, c coll.Case, in soakInput, iter int, host string, scratch *soakScratch) (faults []SoakFault, moved int64, err error) {
	be := sc.be[coll.World]
	a := &arena{be: be}
	defer a.release(&err)
	mc, err := newModeCase(a, sc, m, c)
	if err != nil {
		return nil, 0, err
	}
	if err := in.fill(be, mc.input(), be.Rank(), scratch); err != nil {
		return nil, 0, err
	}
	context := string(m.Name) + ", iteration"
	for i, s := range m.Steps {
		send, recv := mc.bufs[i], mc.bufs[i+1]
		armSample(be, &mc.stepOps[i], coll.Payload(send, recv), &context, iter)
		err := mc.steps[i]()
		leaveStep(be)
		if err != nil {
			return faults, moved, fmt.Errorf("%s: %w", s.Name, err)
		}
		moved += coll.Payload(send, recv)
		if err := be.Synchronize(); err != nil {
			return faults, moved, err
		}
		f, err := in.check(be, recv, plan[i], mc.chunk, scratch)
		if err != nil {
			return faults, moved, err
		}
		if f != nil {
			f.Iteration, f.Case, f.Rank, f.Host, f.Mode, f.Step, f.Collective = iter, c, be.Rank(), host, m.Name, i, s.Label
			f.OffsetBytes = int64(f.Index) * int64(c.DType.Size())
			faults = append(faults, *f)
		}
	}
	return faults, moved, nil
}

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

// bitsText is an element's bits as a hexadecimal number (its bytes are
// little-endian): 0x40400000 for float32 3.
func bitsText(b []byte) string {
	var v [8]byte
	copy(v[:], b)
	return fmt.Sprintf("0x%0*x", 2*len(b), binary.LittleEndian.Uint64(v[:]))
}

// diagnose reasons from what every rank found wrong in one iteration: for
// each mode, the first step whose output was wrong anywhere is where the
// fault arose (its inputs, the outputs of the step before, were right on
// every rank); the ranks and chunks it was wrong in tell who: one rank
// wrong in its own chunk (its ReduceScatter shard) is a reduction fault on
// that rank; one rank wrong in others' chunks received them wrong; every
// rank wrong in the same chunks got them wrong from the rank that holds
// them. Comparing the modes on the same input says which path it is in.
// It returns the verdict and the suspect ranks; nothing in it names a
// collective: the records say what each step is.
func diagnose(iter int, c coll.Case, modes []coll.TimedMode, faults []SoakFault, hosts []string) (string, []int) {
	world := len(hosts)
	on := func(r int) string { return fmt.Sprintf("rank %d on %s", r, hosts[r]) }
	var wrong, right []string
	var suspects []int
	var findings, evidence []string
	for _, m := range modes {
		var mine []SoakFault
		for _, f := range faults {
			if f.Mode == m.Name {
				mine = append(mine, f)
			}
		}
		if len(mine) == 0 {
			right = append(right, m.Title)
			continue
		}
		wrong = append(wrong, m.Title)
		first := slices.MinFunc(mine, func(a, b SoakFault) int { return a.Step - b.Step }).Step
		var at []SoakFault
		for _, f := range mine {
			if f.Step == first {
				at = append(at, f)
			}
		}
		step := at[0].step(m)
		finding, who := blame(step, at, world, on)
		suspects = append(suspects, who...)
		// What the later steps of the mode then carried.
		for s := first + 1; s < len(m.Steps); s++ {
			var ranks []int
			chunks := map[int]string{}
			var label string
			for _, f := range mine {
				if f.Step == s {
					ranks, label = append(ranks, f.Rank), f.step(m)
					for _, q := range f.Chunks {
						chunks[q] = ""
					}
				}
			}
			if len(ranks) > 0 {
				finding += fmt.Sprintf("; %s then was wrong on %s, in %s", label, ranksText(ranks, world), chunksText(keys(chunks)))
			}
		}
		findings = append(findings, finding)
		for _, same := range sameEvidence(at) {
			evidence = append(evidence, faultText(same, m, world))
		}
	}
	paths := strings.Join(wrong, " and ") + " wrong"
	if len(right) > 0 {
		paths += ", " + strings.Join(right, " and ") + " right, on the same input"
	}
	slices.Sort(suspects)
	suspects = slices.Compact(suspects)
	suspect := "no single rank stands out"
	if len(suspects) > 0 {
		var names []string
		for _, r := range suspects {
			names = append(names, on(r))
		}
		suspect = "suspect " + strings.Join(names, ", ")
	}
	const most = 4 // ranks' evidence quoted; the rest are in soak.csv and summary.json
	more := ""
	if len(evidence) > most {
		more = fmt.Sprintf("; and %d more", len(evidence)-most)
		evidence = evidence[:most]
	}
	return fmt.Sprintf("iteration %d (%s): %s. %s: %s. Evidence: %s%s", iter, soakCaseText(c), paths, suspect,
		strings.Join(findings, "; "), strings.Join(evidence, "; "), more), suspects
}

// blame says who the faults at one step, the first wrong one of its mode,
// point to.
func blame(step string, at []SoakFault, world int, on func(int) string) (string, []int) {
	var ranks []int
	common := map[int]int{}
	for _, f := range at {
		ranks = append(ranks, f.Rank)
		for _, q := range f.Chunks {
			common[q]++
		}
	}
	if len(at) == world {
		var shared []int
		for q, n := range common {
			if n == world {
				shared = append(shared, q)
			}
		}
		slices.Sort(shared)
		if len(shared) > 0 && len(shared) < world {
			var who []string
			for _, q := range shared {
				who = append(who, on(q))
			}
			return fmt.Sprintf("in %s every rank's output was wrong in %s, the part %s holds: it was wrong before it left there, "+
				"or on its way from there to every rank (a transfer from that chunk's owner)", step, chunksText(shared), strings.Join(who, ", ")), shared
		}
		return fmt.Sprintf("in %s every rank's output was wrong, in every chunk or each in others: no one rank or transfer explains it "+
			"(a reduction wrong everywhere, such as a rank's input missing from it)", step), nil
	}
	var parts []string
	for _, f := range at {
		what := fmt.Sprintf("%s's %s output was wrong in %s while every other rank's was right", on(f.Rank), step, chunksText(f.Chunks))
		switch allKinds(f.Kinds) {
		case "reduced":
			what += fmt.Sprintf(": a reduction fault on %s (it combined %s from every rank's data there)", on(f.Rank), itOrThem(f.Chunks))
		case "kept":
			what += fmt.Sprintf(": %s held %s right before this step and not after it (a fault in its own copy)", on(f.Rank), itOrThem(f.Chunks))
		default:
			what += fmt.Sprintf(": %s received %s wrong, or corrupted %s after", on(f.Rank), itOrThem(f.Chunks), itOrThem(f.Chunks))
		}
		parts = append(parts, what)
	}
	return strings.Join(parts, "; "), ranks
}

// allKinds is the kind every chunk has, or "" when they differ.
func allKinds(kinds []string) string {
	for _, k := range kinds {
		if k != kinds[0] {
			return ""
		}
	}
	return kinds[0]
}

func itOrThem(chunks []int) string {
	if len(chunks) == 1 {
		return "it"
	}
	return "them"
}

// faultText is ranks' evidence, the same on each of them: how many
// elements, in which chunks, and the first, with its value and bits.
func faultText(fs []SoakFault, m coll.TimedMode, world int) string {
	f := fs[0]
	var ranks []int
	var hosts []string
	for _, g := range fs {
		ranks = append(ranks, g.Rank)
		if !slices.Contains(hosts, g.Host) {
			hosts = append(hosts, g.Host)
		}
	}
	return fmt.Sprintf("%s (%s) %s: %d of %d elements wrong, in %s; the first is element %d (byte %d of the output, which starts %d B into its allocation): expected %s (%s), got %s (%s)",
		ranksText(ranks, world), strings.Join(hosts, ", "), f.step(m), f.Wrong, f.Elements, chunksText(f.Chunks), f.Index, f.OffsetBytes, f.Case.Offset,
		valueText(f.Expected), f.ExpectedBits, valueText(f.Got), f.GotBits)
}

// valueText writes a whole number as one, anything else as Go does.
func valueText(v float64) string {
	if v == float64(int64(v)) {
		return fmt.Sprint(int64(v))
	}
	return fmt.Sprint(v)
}

// sameEvidence groups faults whose evidence reads the same but for the rank.
func sameEvidence(fs []SoakFault) [][]SoakFault {
	var out [][]SoakFault
	key := func(f SoakFault) string {
		return fmt.Sprint(f.Wrong, f.Elements, f.Chunks, f.Index, f.Expected, f.Got)
	}
	for _, f := range fs {
		i := slices.IndexFunc(out, func(g []SoakFault) bool { return key(g[0]) == key(f) })
		if i < 0 {
			out = append(out, nil)
			i = len(out) - 1
		}
		out[i] = append(out[i], f)
	}
	return out
}

func chunksText(q []int) string {
	if len(q) == 1 {
		return fmt.Sprintf("chunk %d", q[0])
	}
	return fmt.Sprintf("chunks %s", intsText(q))
}

func ranksText(r []int, world int) string {
	if len(r) == world {
		return "every rank"
	}
	if len(r) == 1 {
		return fmt.Sprintf("rank %d", r[0])
	}
	return "ranks " + intsText(r)
}

func intsText(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ",")
}

func keys(m map[int]string) []int {
	var out []int
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
