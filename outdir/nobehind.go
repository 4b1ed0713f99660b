package outdir

import (
	"fmt"
	"time"

	"rsag/internal/rankset"
)

// straddling is the hang in which every rank is inside a collective but
// not all in the same one: some still wait in step lo, the rest, having
// left it, in the next. Seen when a host's link is cut mid-collective
// (e2e's TestACutLinkBlamesNoRank): the last messages of step lo reached
// some ranks, which went on, and not others. Every rank reached lo, and
// every rank is inside the library, so none is behind; the ranks still in
// lo are not to blame for what was not delivered to them, nor the ranks
// ahead for waiting in lo+1. A cut loses the messages both ways, so that
// two ranks or more stay in lo together (together), and those are never
// behind. A rank alone in lo for BehindAfter is behind by the early
// naming's rule (a rank that spins inside the call looks the same from
// its heartbeat: e2e/testdata/spin.c), and the hang then names it as any
// other. "" when the hang is not of that shape.
func (h Hang) straddling() string {
	if h.World < 2 || len(h.Unread) > 0 {
		return ""
	}
	var lo uint64
	var phase string
	for r := range h.World {
		b, ok := h.Beats[r]
		if !ok || !h.inside(r, b) {
			return ""
		}
		if r == 0 || b.Step.Seq < lo {
			lo = b.Step.Seq
		}
		if r == 0 {
			phase = b.Step.Phase
		} else if b.Step.Phase != phase {
			return ""
		}
	}
	if behindMeansNothing[phase] {
		return ""
	}
	var in, next []int
	var began time.Time // when the last of the ranks still in lo entered it
	for r := range h.World {
		b := h.Beats[r]
		switch b.Step.Seq {
		case lo:
			in = append(in, r)
			if h.Now.Sub(b.Step.At) >= BehindAfter && !h.together(r, b) {
				return "" // behind, by the early naming's rule
			}
			if b.Step.At.After(began) {
				began = b.Step.At
			}
		case lo + 1:
			next = append(next, r)
		default:
			return ""
		}
	}
	if len(next) == 0 {
		return "" // all in one step: Text says so
	}
	all := seq(h.World)
	return fmt.Sprintf("no rank is behind: the collective itself is stuck (a link, the fabric or the library): all %d ranks reached %s; "+
		"%s in it for %.1f s, and %s, having left it, in the next (%s #%d)",
		h.World, stepText(h.Beats[in[0]].Step, true), waitText(in), h.Now.Sub(began).Seconds(),
		rankset.Ranks(next), h.Beats[next[0]].Step.Op, lo+1) + h.asyncText(all)
}

// inside says whether rank r, whose beat is b, waits inside a collective
// as one that holds no one up: fresh, in the step, not ended otherwise
// than by its own watchdog in that step, and not stopped or frozen.
func (h Hang) inside(r int, b Beat) bool {
	if h.Silent(r) || !b.Step.In || (b.Ended != "" && !b.TimedOut) {
		return false
	}
	frozen := time.Duration(b.Frozen * float64(time.Second))
	if r == h.Self {
		frozen = max(frozen, h.Frozen)
	}
	return frozen <= SilentAfter
}

// together says whether rank r, inside the collective of its beat b,
// shares it with another rank inside it too (inside): ranks that stay
// together in a collective the others have left wait inside the library
// on what was not delivered between them (a link cut as its last messages
// flew: on 4 emulated hosts, node4's cut left ranks 1 and 3 in it, 2 runs
// of 2 at timeout_s 20), and none of them is behind. A rank alone there
// may be (it spins inside the call: spin.c).
func (h Hang) together(r int, b Beat) bool {
	if !b.Step.In {
		return false
	}
	for q := range h.World {
		if o, ok := h.Beats[q]; ok && q != r && o.Step.Seq == b.Step.Seq && o.Step.Phase == b.Step.Phase && h.inside(q, o) {
			return true
		}
	}
	return false
}
