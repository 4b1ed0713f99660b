package outdir

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"rsag/internal/fold"
	"rsag/internal/rankset"
)

// Early naming: while a collective waits, rank 0 (for the other ranks) and
// its guard (for rank 0) look at every rank's heartbeat once a beat, and
// name a rank that holds the others up as soon as the evidence is clear,
// rather than when the watchdog fires (timeout_s, 180 s by default). The
// evidence, every part of which must hold at two looks at least a beat
// apart:
//   - its heartbeat has stopped (no beat for SilentAfter, three beats) and
//     it has not said how it ended;
//   - another rank waits in a collective meanwhile, with a fresh heartbeat;
//   - /proc, read by a rank on its host, says its process is stopped (T,
//     t) or gone (no process, or Z); or, when no rank on its host can say
//     (its node's file stopped too), its heartbeat has been silent for
//     EarlySilentAfter.
//
// A rank that lives (R, S, D) is never named early for a late heartbeat:
// a loaded machine starves a process as long (issue 33). One whose
// heartbeat is fresh but that is behind is: it has stayed in or past a
// step short of the one the others wait in for BehindAfter (a rank that
// spins in its own code, or waits in another collective), at two looks a
// beat apart, in a phase whose steps every rank takes (not locate). It
// lives, so it does not end the job (end_on_stuck_rank); and rank 0, which
// alone writes the combined outputs while the others wait, is not named
// behind. Nor are ranks that stay together inside a collective the others
// have left (nobehind.go's together: a cut link), which no rank holds up.

// EarlySilentAfter is how long a rank whose process no rank can see (its
// whole node's heartbeat file stopped) must stay silent before it is named
// early: ten beats, far beyond a shared file system's hiccup.
const EarlySilentAfter = 10 * BeatEvery

// BehindAfter is how long a rank with a fresh heartbeat must stay in or
// past one step, short of the step the others wait in, before it is named
// early as behind: ten beats, far beyond the gap between two steps of a
// loaded rank.
const BehindAfter = 10 * BeatEvery

// Stuck is a rank named early: run.json's "stuck" lists them while the run
// still runs.
type Stuck struct {
	Rank int    `json:"rank"`
	Host string `json:"host"`
	PID  int    `json:"pid"`
	// State is "stopped", "gone", "silent" or "behind" (alive, its
	// heartbeat fresh, short of the others' step); Proc, /proc's word for
	// its process (T, t, Z, gone; R, S, D when behind), "" where no rank
	// could look.
	State string `json:"state"`
	Proc  string `json:"proc_state,omitempty"`
	// Step is the step its last heartbeat reported, and how.
	Step string `json:"step"`
	// SilentS is how old its last heartbeat was when it was named.
	SilentS float64 `json:"silent_s"`
	// Waiting are the ranks that wait in a collective meanwhile.
	Waiting string `json:"waiting"`
	Named   string `json:"named"` // RFC 3339, UTC
	// WatchdogInS is how long, when it was named, until the watchdog of
	// the first waiting rank ends the job; absent when not known.
	WatchdogInS float64 `json:"watchdog_in_s,omitempty"`
	// Ending says the job was ended for it (end_on_stuck_rank).
	Ending bool `json:"ending,omitempty"`
	// Text is the line that named it.
	Text string `json:"text"`
}

// Known says whether the rank is known stopped or gone: what
// end_on_stuck_rank ends the job for. A silent rank alone is not.
func (s Stuck) Known() bool { return s.State == "stopped" || s.State == "gone" }

// StuckWatch names stuck ranks from one look at the heartbeats to the
// next. The zero value is ready; Timeout, when set, is the watchdog's.
type StuckWatch struct {
	Timeout time.Duration
	seen    map[int]suspicion // the first look of the current run of looks that found the rank stuck
	named   map[int]bool
}

type suspicion struct {
	at    time.Time
	state string
}

// Look looks at h once, at the ranks that only admits (nil: all but the
// reader), and returns those newly known stuck, each once in a run.
func (w *StuckWatch) Look(h Hang, only func(r int) bool) []Stuck {
	if w.seen == nil {
		w.seen, w.named = map[int]suspicion{}, map[int]bool{}
	}
	var out []Stuck
	for r := range h.World {
		if r == h.Self || w.named[r] || (only != nil && !only(r)) {
			continue
		}
		s, ok := h.stuck(r, w.Timeout)
		if !ok {
			delete(w.seen, r)
			continue
		}
		prev, was := w.seen[r]
		if !was || prev.state != s.State {
			w.seen[r] = suspicion{h.Now, s.State}
			continue
		}
		if h.Now.Sub(prev.at) < BeatEvery {
			continue
		}
		w.named[r] = true
		out = append(out, s)
	}
	return out
}

// stuck is rank r as one look sees it, when it holds others up.
func (h Hang) stuck(r int, timeout time.Duration) (Stuck, bool) {
	b, ok := h.Beats[r]
	if !ok || b.Ended != "" {
		return Stuck{}, false
	}
	if !h.beatSilent(b) {
		return h.behind(r, b, timeout)
	}
	age := h.Now.Sub(b.Written)
	state, seen := h.procState(r, b)
	var kind, what string
	switch state {
	case "T", "t":
		kind, what = "stopped", fmt.Sprintf("is stopped (state %s%s)", state, seen)
	case "gone":
		kind, what = "gone", fmt.Sprintf("exited without a word (its process is gone%s)", seen)
	case "Z":
		kind, what = "gone", fmt.Sprintf("exited without a word (state Z%s)", seen)
	case "":
		if age < EarlySilentAfter {
			return Stuck{}, false
		}
		kind, what = "silent", fmt.Sprintf("is silent, and no rank on %s can say why (stopped, killed, or its node gone)", b.Host)
	default:
		return Stuck{}, false // it lives: slow or starved, not stuck
	}
	waiting, step, deadline := h.waiters(r, timeout)
	if len(waiting) == 0 {
		return Stuck{}, false
	}
	s := Stuck{Rank: r, Host: b.Host, PID: b.PID, State: kind, Step: whereText(b), SilentS: round1(age.Seconds()),
		Waiting: rankset.Text(waiting), Named: h.Now.UTC().Format(time.RFC3339)}
	if kind == "stopped" || kind == "gone" {
		s.Proc = state
	}
	s.Text = fmt.Sprintf("rank %d on %s (pid %d) %s; its last heartbeat, %.1f s ago, had it %s; %s on it in %s",
		r, b.Host, b.PID, what, age.Seconds(), s.Step, waitText(waiting), stepText(step, true))
	s.watchdog(h.Now, deadline, timeout)
	return s, true
}

// behind is rank r, whose beat b is fresh, when it holds the others up
// alive: it has stayed in or past a step short of theirs for BehindAfter.
func (h Hang) behind(r int, b Beat, timeout time.Duration) (Stuck, bool) {
	still := h.Now.Sub(b.Step.At)
	if r == 0 || behindMeansNothing[b.Step.Phase] || still < BehindAfter || h.together(r, b) {
		return Stuck{}, false
	}
	waiting, step, deadline := h.waiters(r, timeout)
	if len(waiting) == 0 || step.Seq <= b.Step.Seq || step.Phase != b.Step.Phase {
		return Stuck{}, false
	}
	state, seen := h.procState(r, b)
	alive := "it lives"
	if state != "" {
		alive = fmt.Sprintf("it lives (state %s%s)", state, seen)
	}
	verb := "been in"
	if !b.Step.In {
		verb = "run outside any collective since"
	}
	s := Stuck{Rank: r, Host: b.Host, PID: b.PID, State: "behind", Proc: state, Step: whereText(b),
		SilentS: round1(h.Now.Sub(b.Written).Seconds()), Waiting: rankset.Text(waiting), Named: h.Now.UTC().Format(time.RFC3339)}
	s.Text = fmt.Sprintf("rank %d on %s (pid %d) is behind: %s and beats, but has %s %s for %.1f s; %s on it in %s",
		r, b.Host, b.PID, alive, verb, stepText(b.Step, true), still.Seconds(), waitText(waiting), stepText(step, true))
	s.watchdog(h.Now, deadline, timeout)
	return s, true
}

// behindMeansNothing are the phases in which a smaller step number is not
// a step short of the others': in every other phase every rank arms every
// step. In locate a rank sits out the rounds it is no member of, arming
// none of their steps; in startup and results each rank, and rank 0 most,
// does work of its own between steps.
var behindMeansNothing = map[string]bool{"startup": true, "results": true, "locate": true}

// watchdog adds when the watchdog ends the job, when known.
func (s *Stuck) watchdog(now, deadline time.Time, timeout time.Duration) {
	if deadline.IsZero() {
		return
	}
	s.WatchdogInS = round1(max(deadline.Sub(now), 0).Seconds())
	s.Text += fmt.Sprintf("; the watchdog ends the job in about %.0f s (timeout_s %.0f)", s.WatchdogInS, timeout.Seconds())
}

// waiters are the ranks other than r that wait in a collective with a
// fresh heartbeat, the step most of them wait in, and when the first of
// their watchdogs fires (zero: timeout unknown).
func (h Hang) waiters(r int, timeout time.Duration) (ranks []int, step BeatStep, deadline time.Time) {
	count := map[uint64]int{}
	for q := range h.World {
		b, ok := h.Beats[q]
		if q == r || !ok || b.Ended != "" || !b.Step.In || h.Silent(q) {
			continue
		}
		ranks = append(ranks, q)
		count[b.Step.Seq]++
		if c := count[b.Step.Seq]; c > count[step.Seq] || (c == count[step.Seq] && b.Step.Seq < step.Seq) || len(ranks) == 1 {
			step = b.Step
		}
		if timeout > 0 {
			if d := b.Step.At.Add(timeout); deadline.IsZero() || d.Before(deadline) {
				deadline = d
			}
		}
	}
	return ranks, step, deadline
}

// beatSilent says whether beat b has stopped: it was SilentAfter old when
// its node's file was written, or that file has stopped, or (read from
// node-local memory) it is SilentAfter old now.
func (h Hang) beatSilent(b Beat) bool {
	if !b.Relayed.IsZero() {
		return b.Relayed.Sub(b.Written) > SilentAfter || h.Now.Sub(b.Relayed) > SilentAfter+BeatEvery
	}
	return h.Now.Sub(b.Written) > SilentAfter
}

// whereText is where a beat had its rank: "in timing all-reduce #7 (...)"
// or "past ..., which it left 0.2 s before".
func whereText(b Beat) string {
	if !b.Step.In {
		return fmt.Sprintf("past %s, which it left %.1f s before", stepText(b.Step, true), b.Written.Sub(b.Step.At).Seconds())
	}
	return "in " + stepText(b.Step, true)
}

// StuckText is the one line that names the ranks of one look.
func StuckText(list []Stuck) string {
	var parts []string
	for _, s := range list {
		parts = append(parts, s.Text)
	}
	return "stuck rank, named early: " + strings.Join(parts, "; and ")
}

// MergeStuck adds to have each of more it does not hold (by rank and pid):
// rank 0 and its guard both add to run.json's list.
func MergeStuck(have, more []Stuck) []Stuck {
	for _, s := range more {
		if !slices.ContainsFunc(have, func(o Stuck) bool { return o.Rank == s.Rank && o.PID == s.PID }) {
			have = append(have, s)
		}
	}
	return have
}

func round1(x float64) float64 { return float64(int64(x*10+0.5)) / 10 }

// StuckWidth is the widest line the early naming prints: a person's
// terminal (fold.Width). Its lines are folded by the writer rank 0 and
// its guard print through (fold.NewWriter); run.json keeps them whole.
const StuckWidth = fold.Width
