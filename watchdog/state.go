package watchdog

import (
	"runtime"
	"sync/atomic"
	"time"
)

// State is one rank's place in the run, kept in memory for a hang's
// diagnosis: the blocking step it is in or last left (its phase, what it
// waits for, its size, which mode and cycle), the step's sequence number
// and when it entered or left it. Every rank arms the same steps in the
// same order, so the same sequence number on two ranks is the same
// collective. The main goroutine writes it around every step with atomic
// stores alone (a sequence lock: no system call, lock or allocation, so
// that it costs nothing in the timed loop); any goroutine reads a
// consistent Snapshot (the heartbeat, the watchdog's, a signal's).
type State struct {
	ver     atomic.Uint64 // odd while a write is under way
	seq     atomic.Uint64
	phase   atomic.Pointer[string]
	op      atomic.Pointer[string]
	context atomic.Pointer[string]
	bytes   atomic.Int64
	round   atomic.Int64
	in      atomic.Bool
	at      atomic.Int64 // Unix nanoseconds of the last enter or leave
	// parts, for a step of many parts (EnterParts), says which part runs
	// and since when: a snapshot counts each part as a step of its own.
	parts atomic.Pointer[Parts]
}

// Parts says which part of a step of many runs (from 0) and when it began
// (Unix nanoseconds; 0 before the first): a run of timed samples taken in
// one C call, which says so as it goes.
type Parts = func() (part, began int64)

// Snapshot is a State read at one moment.
type Snapshot struct {
	Seq     uint64
	Phase   string
	Op      string // what the step waits for: "all-reduce", "barrier"
	Bytes   int64  // its payload; -1 when it has none
	Context string // "direct, cycle": the mode and what Round counts; "" for a step outside a sample
	Round   int    // the cycle or iteration, when Context names one
	In      bool   // entered and not left
	At      time.Time
}

// SetPhase names the phase of the steps to come. The string is kept, not
// copied.
func (s *State) SetPhase(p *string) { s.phase.Store(p) }

// Enter records that step seq+1 starts: it waits for *op, moving bytes,
// in *context at round (context nil: none). The strings are kept, not
// copied: they must stay as they are.
func (s *State) Enter(op *string, bytes int64, context *string, round int, now time.Time) {
	s.ver.Add(1)
	s.seq.Add(1)
	s.op.Store(op)
	s.context.Store(context)
	s.bytes.Store(bytes)
	s.round.Store(int64(round))
	s.in.Store(true)
	s.at.Store(now.UnixNano())
	s.parts.Store(nil)
	s.ver.Add(1)
}

// EnterParts is Enter for a step of many parts, each as one step would
// be: part k is step seq+1+k, in round+k, entered when parts says it
// began. parts is read by any goroutine while the step runs.
func (s *State) EnterParts(op *string, bytes int64, context *string, round int, parts Parts, now time.Time) {
	s.Enter(op, bytes, context, round, now)
	s.parts.Store(&parts)
}

// Leave records that the step entered last has ended (after a step of
// parts, its last part).
func (s *State) Leave(now time.Time) {
	s.ver.Add(1)
	if p := s.parts.Load(); p != nil {
		part, _ := (*p)()
		s.seq.Add(uint64(part))
		s.parts.Store(nil)
	}
	s.in.Store(false)
	s.at.Store(now.UnixNano())
	s.ver.Add(1)
}

// Snapshot reads the state consistently: it retries while a write is
// under way, which takes nanoseconds.
func (s *State) Snapshot() Snapshot {
	for {
		v := s.ver.Load()
		if v%2 == 1 {
			runtime.Gosched()
			continue
		}
		snap := Snapshot{Seq: s.seq.Load(), Bytes: s.bytes.Load(), Round: int(s.round.Load()), In: s.in.Load(),
			At: time.Unix(0, s.at.Load())}
		snap.Phase, snap.Op, snap.Context = text(s.phase.Load()), text(s.op.Load()), text(s.context.Load())
		p := s.parts.Load()
		if s.ver.Load() != v {
			continue
		}
		if p != nil {
			part, began := (*p)()
			snap.Seq += uint64(part)
			snap.Round += int(part)
			if began > snap.At.UnixNano() {
				snap.At = time.Unix(0, began)
			}
		}
		return snap
	}
}

func text(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// Steps is a Tracker that also keeps this rank's State: every step armed
// is entered there, and the phases say when a sample ends (Leave) and
// which mode and cycle it is (ArmSample).
type Steps struct {
	*Tracker
	State State
}

// NewSteps keeps t's steps in a State.
func NewSteps(t *Tracker) *Steps { return &Steps{Tracker: t} }

// SetPhase names the phase of the steps to come.
func (s *Steps) SetPhase(name string) {
	s.State.SetPhase(&name)
	s.Tracker.SetPhase(name)
}

// Arm enters a step outside a timed sample: a collective of a phase other
// than timing, a barrier, an agreement. (Its name is copied: one small
// allocation, never in the timed loop.)
func (s *Steps) Arm(op string, bytes int64) {
	s.State.Enter(&op, bytes, nil, 0, time.Now())
	s.Tracker.Arm(op, bytes)
}

// ArmSample enters one timed sample (or soak step): it waits for *op,
// moving bytes, in *context at round (context "direct, cycle", round 7).
// The strings are kept, not copied, so that nothing is allocated.
func (s *Steps) ArmSample(op *string, bytes int64, context *string, round int) {
	s.State.Enter(op, bytes, context, round, time.Now())
	s.Tracker.Arm(*op, bytes)
}

// ArmSamples enters a run of timed samples taken in one call (a step of
// parts: see State.EnterParts), starting at round; the watchdog gives
// each sample the whole timeout.
func (s *Steps) ArmSamples(op *string, bytes int64, context *string, round int, parts Parts) {
	s.State.EnterParts(op, bytes, context, round, parts, time.Now())
	s.Tracker.ArmProgress(*op, bytes, func() int64 { part, _ := parts(); return part })
}

// Leave records that the step entered last has ended.
func (s *Steps) Leave() { s.State.Leave(time.Now()) }
