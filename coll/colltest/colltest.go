// Package colltest is the conformance suite of coll.Backend: what every
// backend must do, checked with exact values on the ranks it runs on. The
// in-memory backend, the MPI backend and the NCCL backend over the fake
// libraries all pass it; a new backend passes it before anything else runs
// on it.
//
// Check is called on every rank of the backend's world at once, as any
// collective is, and returns this rank's failures. It never stops at a
// failure: every rank makes the same calls in the same order whatever it
// finds, so that the ranks' collectives stay matched and a wrong result
// cannot turn into a hang.
package colltest

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	"rsag/coll"
)

// Check runs the suite on this rank's be:
//   - identity: rank, world size, the backend's name;
//   - buffers: Alloc, View, Free and the exact accounting of Memory and
//     ResetPeak; Fill, Write and Read round trips in every element type;
//   - offsets: a buffer that starts a whole number of elements after its
//     allocation's start (coll.BufferSpec.OffsetBytes) counts them, holds
//     its data and runs every collective; a partial element is refused;
//   - shapes: a call whose buffers do not fit its collective is refused
//     with a *coll.ShapeError before the library sees it;
//   - every element type and reduction the backend claims (Supports):
//     each collective out of place and in place (the smaller buffer a view
//     at the collective's InPlaceOffset), every output element checked
//     against the host's reference, on inputs that differ by rank and by
//     element so that a misplaced chunk cannot pass;
//   - every pair it does not claim: refused, and the backend still works;
//   - groups, when the backend can split (coll.Splitter): ranks of one
//     color form a group of their own, ordered by key, whose collectives
//     reduce their members alone; a rank that passes coll.NoColor takes
//     part and gets no group while the others' works; a color below
//     NoColor is refused; the backend works after its groups close;
//   - timed samples, when the backend takes them in one call
//     (coll.SampleTimer): each collective out of place, float32 sum, every
//     sample timed and its output checked, the progress at the last; a
//     check that expects one element wrong fails every sample, naming the
//     first by that element and what it held;
//   - abort, when the backend can (coll.Aborter): after it, a collective
//     fails instead of waiting, and Close still releases everything.
//
// Abort, when checked, comes last: be is of no use afterwards but to Close.
func Check(be coll.Backend) error {
	s := &suite{be: be, world: be.WorldSize(), rank: be.Rank()}
	s.identity()
	s.buffers()
	s.offsets()
	s.shapes()
	for _, d := range coll.AllDTypes {
		for _, o := range coll.AllOps {
			s.pair(d, o)
		}
	}
	s.split()
	s.samples()
	s.abort()
	return errors.Join(s.failures...)
}

type suite struct {
	be          coll.Backend
	world, rank int
	failures    []error
}

func (s *suite) fail(format string, args ...any) {
	s.failures = append(s.failures, fmt.Errorf("rank %d: "+format, append([]any{s.rank}, args...)...))
}

// must records err, when there is one, as a failure of what, and says
// whether there was none.
func (s *suite) must(err error, what string) bool {
	if err != nil {
		s.fail("%s: %v", what, err)
	}
	return err == nil
}

func (s *suite) identity() {
	if s.world < 1 || s.rank < 0 || s.rank >= s.world {
		s.fail("rank %d of a world of %d", s.rank, s.world)
	}
	if s.be.Info().Backend == "" {
		s.fail("Info names no backend")
	}
}

// alloc allocates count elements of d, or records why it could not.
func (s *suite) alloc(d coll.DType, count int) coll.Buffer {
	b, err := s.be.Alloc(coll.Elems(d, count))
	if !s.must(err, fmt.Sprintf("Alloc of %d %s", count, d)) {
		return nil
	}
	if b.Count() != count || b.DType() != d {
		s.fail("Alloc of %d %s gave %d %s", count, d, b.Count(), b.DType())
	}
	return b
}

func (s *suite) free(bufs ...coll.Buffer) {
	for _, b := range bufs {
		if b != nil {
			s.must(s.be.Free(b), "Free")
		}
	}
}

func (s *suite) live() int64 {
	m, err := s.be.Memory()
	s.must(err, "Memory")
	return m.LiveBytes
}

// buffers checks the accounting and the data paths: an allocation counts
// its bytes while it lives and raises the peak, a view counts nothing and
// cannot be freed, and what is written or filled reads back.
func (s *suite) buffers() {
	base := s.live()
	s.be.ResetPeak()
	for _, d := range coll.AllDTypes {
		b := s.alloc(d, 10)
		if b == nil {
			continue
		}
		if got := s.live() - base; got != 10*int64(d.Size()) {
			s.fail("%s: %d bytes live after allocating 10 elements, want %d", d, got, 10*d.Size())
		}
		src := make([]byte, 10*d.Size())
		for i := range src {
			src[i] = byte(i*37 + s.rank)
		}
		if s.must(s.be.Write(b, src), "Write") {
			s.expectBytes(fmt.Sprintf("%s: Write then Read", d), b, src)
		}
		v, err := s.be.View(b, 3, 4)
		if s.must(err, "View") {
			if v.Count() != 4 || s.live()-base != 10*int64(d.Size()) {
				s.fail("%s: a view of 4 elements has %d and changed the live bytes", d, v.Count())
			}
			s.expectBytes(fmt.Sprintf("%s: a view at element 3", d), v, src[3*d.Size():7*d.Size()])
			if s.be.Free(v) == nil {
				s.fail("%s: Free of a view succeeded", d)
			}
		}
		elem := d.Elem(3)
		if s.must(s.be.Fill(b, elem), "Fill") {
			s.expectBytes(fmt.Sprintf("%s: Fill", d), b, bytes.Repeat(elem, 10))
		}
		s.free(b)
	}
	m, err := s.be.Memory()
	if s.must(err, "Memory") {
		if m.LiveBytes != base {
			s.fail("%d bytes live after freeing everything, want %d", m.LiveBytes, base)
		}
		if want := base + 10*int64(slices.Max(sizes())); m.PeakBytes != want {
			s.fail("peak %d bytes, want %d (the largest one buffer at a time)", m.PeakBytes, want)
		}
	}
	s.be.ResetPeak()
	if m, err := s.be.Memory(); s.must(err, "Memory") && m.PeakBytes != m.LiveBytes {
		s.fail("after ResetPeak the peak is %d, live %d", m.PeakBytes, m.LiveBytes)
	}
}

// offsets checks buffers off their allocation's start, as the timing
// phase's offsets dimension makes them: the live bytes count the offset,
// the data stays the buffer's, and the collectives run on them exactly.
func (s *suite) offsets() {
	for _, d := range []coll.DType{coll.Int8, coll.Float32, coll.Float64} {
		for _, off := range []int64{int64(d.Size()), 64, 4096} {
			base := s.live()
			b, err := s.be.Alloc(coll.BufferSpec{DType: d, Count: 6, OffsetBytes: off})
			if !s.must(err, fmt.Sprintf("Alloc of 6 %s at +%d B", d, off)) {
				continue
			}
			if got, want := s.live()-base, 6*int64(d.Size())+off; got != want || b.Count() != 6 {
				s.fail("%s at +%d B: %d elements, %d bytes live, want 6 and %d", d, off, b.Count(), got, want)
			}
			src := encode(d, []float64{1, 2, 3, 4, 5, 6})
			if s.must(s.be.Write(b, src), "Write") {
				s.expectBytes(fmt.Sprintf("%s at +%d B: Write then Read", d, off), b, src)
			}
			s.free(b)
		}
		if s.be.Supports(d, coll.Sum) == nil {
			s.collectiveAt(coll.AllReduce, d, coll.Sum, false, 64)
			s.collectiveAt(coll.ReduceScatter, d, coll.Sum, true, 64)
			s.collectiveAt(coll.AllGather, d, coll.Sum, true, 4096)
		}
	}
	if b, err := s.be.Alloc(coll.BufferSpec{DType: coll.Float32, Count: 4, OffsetBytes: 2}); err == nil {
		s.fail("Alloc of float32 at +2 B: allowed, but it splits an element")
		s.free(b)
	}
}

func sizes() []int {
	out := make([]int, len(coll.AllDTypes))
	for i, d := range coll.AllDTypes {
		out[i] = d.Size()
	}
	return out
}

func (s *suite) expectBytes(what string, b coll.Buffer, want []byte) {
	got := make([]byte, coll.Bytes(b))
	if !s.must(s.be.Synchronize(), what+": Synchronize") || !s.must(s.be.Read(b, got), what+": Read") {
		return
	}
	if !bytes.Equal(got, want) {
		s.fail("%s: read % x, want % x", what, head(got), head(want))
	}
}

func head(b []byte) []byte { return b[:min(len(b), 32)] }

// shapes checks that every collective refuses buffers that do not fit it
// with coll's own *ShapeError, which says why before the library is called.
func (s *suite) shapes() {
	n := 4 * s.world
	for _, c := range coll.Collectives {
		send := s.alloc(coll.Int64, c.SendCount(n, s.world))
		wrong := s.alloc(coll.Int64, n+1) // no collective's output for any input
		other := s.alloc(coll.Float64, n)
		if send == nil || wrong == nil || other == nil {
			s.free(send, wrong, other)
			continue
		}
		for _, recv := range []coll.Buffer{wrong, other} {
			err := s.be.Run(c, send, recv, coll.Sum)
			var shape *coll.ShapeError
			if !errors.As(err, &shape) {
				s.fail("%s of %d %s into %d %s: %v, want a *coll.ShapeError", c.Name, send.Count(), send.DType(), recv.Count(), recv.DType(), err)
			}
		}
		s.free(send, wrong, other)
	}
}

// pair checks every collective on d with o, or its refusal.
func (s *suite) pair(d coll.DType, o coll.Op) {
	claimed := s.be.Supports(d, o) == nil
	if !claimed {
		s.refused(d, o)
		return
	}
	if coll.CheckExact(d, o, s.world) != nil {
		return // claimed, but no check of it can be exact on this many ranks
	}
	for _, c := range coll.Collectives {
		if c.Name == coll.AllGather.Name && o != coll.Sum {
			continue // AllGather takes no reduction: once per element type
		}
		for _, inPlace := range []bool{false, true} {
			s.collective(c, d, o, inPlace)
		}
	}
}

// refused checks that a pair the backend does not claim is refused by
// every collective that reduces, and that the backend works afterwards.
func (s *suite) refused(d coll.DType, o coll.Op) {
	for _, c := range coll.Collectives {
		if c.Name == coll.AllGather.Name && s.be.Supports(d, coll.Sum) == nil {
			continue // the type is claimed; AllGather has no op to refuse
		}
		sendN := c.SendCount(2*s.world, s.world)
		recvN, _ := c.RecvCount(sendN, s.world)
		send, recv := s.alloc(d, sendN), s.alloc(d, recvN)
		if send != nil && recv != nil && s.be.Run(c, send, recv, o) == nil {
			s.fail("%s on %s with %s: ran, but Supports refuses the pair", c.Name, d, o)
		}
		s.free(send, recv)
	}
	s.collective(coll.AllReduce, coll.Int32, coll.Sum, false) // still usable
}

// inputs are every rank's input of n elements to c with o: small integers
// that differ by rank and by element (so that a misplaced chunk cannot
// pass) and stay exact in every element type summed over the world; for
// the reductions other than sum, the value each rank contributes to a
// check (coll.Input), which they combine exactly.
func inputs(c coll.Collective, o coll.Op, world, n int) [][]float64 {
	in := make([][]float64, world)
	for r := range in {
		in[r] = make([]float64, n)
		for i := range in[r] {
			switch {
			case c.Name == coll.AllGather.Name:
				in[r][i] = float64((r*5 + i) % 7)
			case o == coll.Sum:
				in[r][i] = float64((i*7 + r*3) % 5)
			default:
				in[r][i] = coll.Input(o, r)
			}
		}
	}
	return in
}

func encode(d coll.DType, v []float64) []byte {
	out := make([]byte, 0, len(v)*d.Size())
	for _, x := range v {
		out = append(out, d.Elem(x)...)
	}
	return out
}

// collective runs c on d with o, out of place or in place, and checks
// every element of the output.
func (s *suite) collective(c coll.Collective, d coll.DType, o coll.Op, inPlace bool) {
	s.collectiveAt(c, d, o, inPlace, 0)
}

// collectiveAt is collective on buffers offset bytes after their
// allocations' start.
func (s *suite) collectiveAt(c coll.Collective, d coll.DType, o coll.Op, inPlace bool, offset int64) {
	full := 3 * s.world // a full buffer of 3 elements per rank
	sendN := c.SendCount(full, s.world)
	recvN, _ := c.RecvCount(sendN, s.world)
	in := inputs(c, o, s.world, sendN)
	input, want := in[s.rank], c.Reference(in, o)[s.rank] // the host's, element by element
	what := fmt.Sprintf("%s of %s with %s, %s", c.Name, d, o, map[bool]string{false: "out of place", true: "in place"}[inPlace])
	if offset != 0 {
		what += fmt.Sprintf(" at +%d B", offset)
	}
	alloc := func(n int) coll.Buffer {
		b, err := s.be.Alloc(coll.BufferSpec{DType: d, Count: n, OffsetBytes: offset})
		if !s.must(err, fmt.Sprintf("%s: Alloc of %d", what, n)) {
			return nil
		}
		return b
	}

	var send, recv, owned coll.Buffer
	var err error
	if !inPlace {
		send, recv = alloc(sendN), alloc(recvN)
		owned = send
		defer s.free(recv)
	} else if c.SendInside { // the input is a view inside the output
		owned = alloc(recvN)
		recv = owned
		if owned != nil {
			send, err = s.be.View(owned, c.InPlaceOffset(s.rank, sendN, recvN), sendN)
			s.must(err, what+": View")
		}
	} else { // the output is a view inside the input
		owned = alloc(sendN)
		send = owned
		if owned != nil {
			recv, err = s.be.View(owned, c.InPlaceOffset(s.rank, sendN, recvN), recvN)
			s.must(err, what+": View")
		}
	}
	defer s.free(owned)
	if send == nil || recv == nil {
		// Still take part, so that the other ranks' call is matched.
		s.fail("%s: no buffers", what)
		return
	}
	if !s.must(s.be.Write(send, encode(d, input)), what+": Write") {
		return
	}
	if !s.must(s.be.Run(c, send, recv, o), what) {
		return
	}
	s.expectBytes(what, recv, encode(d, want))
}

// samples checks a SampleTimer's runs of samples, collective by
// collective: right, then against a pattern with one element wrong.
func (s *suite) samples() {
	st, ok := coll.Find[coll.SampleTimer](s.be)
	if !ok {
		return
	}
	const d, o, n, batch = coll.Float32, coll.Sum, 3, 2
	for _, c := range coll.Collectives {
		what := c.Name + " samples in one call"
		full := 3 * s.world
		sendN := c.SendCount(full, s.world)
		recvN, _ := c.RecvCount(sendN, s.world)
		in := inputs(c, o, s.world, sendN)
		right := encode(d, c.Reference(in, o)[s.rank])
		send, recv := s.alloc(d, sendN), s.alloc(d, recvN)
		if send == nil || recv == nil || !s.must(s.be.Write(send, encode(d, in[s.rank])), what+": Write") {
			s.free(send, recv)
			continue
		}
		sampler, err := st.PrepareSamples(c, send, recv, o)
		if !s.must(err, what+": PrepareSamples") {
			s.free(send, recv)
			continue
		}
		size := d.Size()
		check := coll.OutputCheck{Want: right, Spans: []coll.OutputSpan{{Offset: 0, Len: size, WantAt: 0},
			{Offset: size, Len: len(right) - size, WantAt: size}}}
		us, held := make([]float64, n), make([]bool, n)
		for _, barrier := range []bool{false, true} {
			f, err := sampler.Samples(batch, barrier, us, held, check)
			if s.must(err, what) {
				if at, began := sampler.Progress(); f.Sample != -1 || slices.Contains(held, false) || at != n-1 || began.IsZero() {
					s.fail("%s (barrier %v): fault %+v, held %v, progress at %d (%v); want none, all, %d", what, barrier, f, held, at, began, n-1)
				}
				if slices.ContainsFunc(us, func(t float64) bool { return !(t > 0) }) {
					s.fail("%s (barrier %v): sample times %v", what, barrier, us)
				}
			}
		}
		bad := recvN - 1 // the last element: a check that stops early misses it
		wrong := bytes.Clone(right)
		copy(wrong[bad*size:], d.Elem(1234))
		f, err := sampler.Samples(batch, true, us, held, coll.OutputCheck{Want: wrong, Spans: check.Spans})
		if s.must(err, what+" against a wrong pattern") &&
			(f.Sample != 0 || f.Element != bad || !bytes.Equal(f.Got, right[bad*size:][:size]) || slices.Contains(held, true)) {
			s.fail("%s against a pattern wrong at element %d: fault %+v, held %v", what, bad, f, held)
		}
		s.expectBytes(what+": the output after", recv, right)
		s.free(send, recv)
	}
}

// split checks groups: by parity with the keys reversed, then everyone
// but the last rank (which passes coll.NoColor). Each group sums its own
// members' rank+1, so a group with a member too many or too few, or the
// world's sum, cannot pass.
func (s *suite) split() {
	sp, ok := coll.Find[coll.Splitter](s.be)
	if !ok {
		return
	}
	var parity []int
	for q := s.world - 1; q >= 0; q-- { // key -q: the highest rank first
		if q%2 == s.rank%2 {
			parity = append(parity, q)
		}
	}
	s.group(sp, s.rank%2, -s.rank, parity, "split by parity, keys reversed")
	var rest []int
	for q := 0; q < s.world-1; q++ {
		rest = append(rest, q)
	}
	color := 0
	if s.rank == s.world-1 {
		color = coll.NoColor
	}
	s.group(sp, color, s.rank, rest, "split with the last rank at NoColor")
	if g, err := sp.Split(coll.NoColor-1, 0); err == nil {
		s.fail("Split with color %d: no error, want a refusal (only NoColor is a negative color)", coll.NoColor-1)
		if g != nil {
			s.must(g.Close(), "Close of a group that should not be")
		}
	}
	s.collective(coll.AllReduce, coll.Int32, coll.Sum, false) // the parent still works
}

// group splits with color and key, and checks the group: members are the
// world ranks of this rank's group in their order there (this rank not
// among them: it must get none), and its AllReduce sums theirs alone.
func (s *suite) group(sp coll.Splitter, color, key int, members []int, what string) {
	g, err := sp.Split(color, key)
	if !s.must(err, what) {
		return
	}
	me := slices.Index(members, s.rank)
	if me < 0 {
		if g != nil {
			s.fail("%s: color %d gave a group of %d, want none", what, color, g.WorldSize())
			s.must(g.Close(), what+": Close")
		}
		return
	}
	if g == nil {
		s.fail("%s: no group, want rank %d of %d", what, me, len(members))
		return
	}
	defer func() { s.must(g.Close(), what+": Close") }()
	if g.Rank() != me || g.WorldSize() != len(members) {
		// Still run the AllReduce below: the group's other members do.
		s.fail("%s: rank %d of %d, want %d of %d (members %v)", what, g.Rank(), g.WorldSize(), me, len(members), members)
	}
	buf := s.alloc(coll.Int32, 2)
	if buf == nil {
		return
	}
	defer s.free(buf)
	var sum float64
	for _, q := range members {
		sum += float64(q + 1)
	}
	what += ": AllReduce in the group"
	if s.must(s.be.Write(buf, encode(coll.Int32, []float64{float64(s.rank + 1), float64(s.rank + 1)})), what+": Write") &&
		s.must(g.Run(coll.AllReduce, buf, buf, coll.Sum), what) {
		s.expectBytes(what, buf, encode(coll.Int32, []float64{sum, sum}))
	}
}

// abort checks, on a backend that can abort its communication, that a
// collective after Abort returns an error rather than waiting for peers
// that will never come, and that Close then releases everything.
func (s *suite) abort() {
	a, ok := coll.Find[coll.Aborter](s.be)
	if !ok {
		return
	}
	b := s.alloc(coll.Int32, s.world)
	a.Abort()
	if b == nil {
		return
	}
	if err := s.be.Run(coll.AllReduce, b, b, coll.Sum); err == nil {
		if err := s.be.Synchronize(); err == nil {
			s.fail("AllReduce after Abort: no error")
		}
	}
	s.free(b)
}
