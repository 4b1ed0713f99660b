package cadence

import (
	"testing"
	"time"
)

// The rules rest on ratios, which hold in either build: a rank is silent
// after three beats, a run stale after six heartbeats, a guard looks once a
// beat, a lock waits half a beat.
func TestRatiosHoldInEitherBuild(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want time.Duration
	}{
		{"SilentAfter", SilentAfter, 3 * BeatEvery},
		{"StaleAfter", StaleAfter, 6 * HeartbeatEvery},
		{"StopLookEvery", StopLookEvery, BeatEvery},
		{"BeatEvery", BeatEvery, RealBeatEvery / speedup},
		{"HeartbeatEvery", HeartbeatEvery, RealHeartbeatEvery / speedup},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	// A signal's linger and settle fit within Open MPI's grace (1 s)
	// between its SIGTERM and its SIGKILL.
	if SignalLinger >= time.Second || SettleFor >= time.Second {
		t.Errorf("SignalLinger %v, SettleFor %v: each must be under Open MPI's 1 s grace", SignalLinger, SettleFor)
	}
	// A process is said not to have run only when late by more than a
	// beat could be: never for an ordinary beat's lateness.
	if FrozenAfter <= BeatEvery {
		t.Errorf("FrozenAfter %v is not above a beat, %v", FrozenAfter, BeatEvery)
	}
}

// A product build runs the real cadences; only -tags rsag_fastcadence
// shortens them.
func TestTheBuildSaysWhichCadence(t *testing.T) {
	if Fast != (BeatEvery != RealBeatEvery) || (Fast && BeatEvery != RealBeatEvery/FastBy) {
		t.Errorf("Fast %v with BeatEvery %v (real %v, FastBy %d)", Fast, BeatEvery, RealBeatEvery, FastBy)
	}
}
