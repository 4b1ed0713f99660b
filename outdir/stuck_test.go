package outdir

import (
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"
)

// A rank is named early only on clear evidence, at two looks a beat
// apart: its beat stopped, another rank waits, and /proc says stopped or
// gone (or, where no rank can look, a long silence). A live rank with a
// late beat, or a stopped rank that no one waits for, is never named.
func TestStuckWatch(t *testing.T) {
	waiting := func(r int, host string) Beat {
		return beat(r, host, 1834, "all-reduce", true, 200*time.Millisecond, 5*time.Second)
	}
	behind := func(r int, host string, ago time.Duration) Beat {
		return beat(r, host, 1833, "all-gather", false, ago, ago)
	}
	for _, c := range []struct {
		name   string
		beats  []Beat
		procs  map[int]string
		want   string // the state named, "" for none
		wantIn []string
	}{
		{"stopped", []Beat{waiting(0, "a"), waiting(1, "a"), behind(2, "a", 4*time.Second)}, map[int]string{102: "T"}, "stopped",
			[]string{"rank 2 on a (pid 102) is stopped (state T); its last heartbeat, 5.5 s ago, had it past timing all-gather #1833",
				"ranks 0,1 wait on it in timing all-reduce #1834 (4096 bytes, direct, cycle 7)", "the watchdog ends the job in about 54 s (timeout_s 60)"}},
		{"gone", []Beat{waiting(0, "a"), behind(1, "a", 4*time.Second)}, map[int]string{101: "gone"}, "gone",
			[]string{"rank 1 on a (pid 101) exited without a word (its process is gone)"}},
		{"stopped on another host, seen by its neighbour", func() []Beat {
			b := waiting(3, "b")
			b.Peers = []Peer{{Rank: 2, PID: 102, State: "T"}}
			return []Beat{waiting(0, "a"), waiting(1, "a"), behind(2, "b", 4*time.Second), b}
		}(), nil, "stopped", []string{"rank 2 on b (pid 102) is stopped (state T, seen by rank 3 on b 1.7 s ago)"}},
		{"silent, no one can look, long enough", []Beat{waiting(0, "a"), behind(1, "b", EarlySilentAfter+time.Second)}, nil, "silent",
			[]string{"no rank on b can say why"}},
		{"silent, no one can look, not yet", []Beat{waiting(0, "a"), behind(1, "b", EarlySilentAfter-2*time.Second)}, nil, "", nil},
		{"alive but late: starved, not stuck", []Beat{waiting(0, "a"), behind(1, "a", 30*time.Second)}, map[int]string{101: "R"}, "", nil},
		{"stopped but its beat is fresh", []Beat{waiting(0, "a"), behind(1, "a", time.Second)}, map[int]string{101: "T"}, "", nil},
		{"stopped, no one waits", []Beat{behind(0, "a", 0), behind(1, "a", 4*time.Second)}, map[int]string{101: "T"}, "", nil},
		{"behind, alive, its beat fresh, still past a step", []Beat{waiting(0, "a"), waiting(1, "a"),
			beat(2, "a", 1833, "all-gather", false, 300*time.Millisecond, BehindAfter+time.Second)}, map[int]string{102: "R"}, "behind",
			[]string{"rank 2 on a (pid 102) is behind: it lives (state R) and beats, but has run outside any collective since timing all-gather #1833",
				"ranks 0,1 wait on it in timing all-reduce #1834", "the watchdog ends the job in about"}},
		{"behind, in an earlier collective", []Beat{waiting(0, "a"), waiting(1, "a"),
			beat(2, "a", 1833, "all-gather", true, 300*time.Millisecond, BehindAfter+time.Second)}, nil, "behind",
			[]string{"rank 2 on a (pid 102) is behind: it lives and beats, but has been in timing all-gather #1833"}},
		{"behind, not yet", []Beat{waiting(0, "a"), waiting(1, "a"),
			beat(2, "a", 1833, "all-gather", false, 300*time.Millisecond, BehindAfter-2*time.Second)}, map[int]string{102: "R"}, "", nil},
		{"fresh and in the same step: no one is behind", []Beat{waiting(0, "a"), waiting(1, "a"),
			beat(2, "a", 1834, "all-reduce", true, 300*time.Millisecond, BehindAfter+time.Second)}, map[int]string{102: "R"}, "", nil},
		{"behind in locate, where a rank sits rounds out", func() []Beat {
			b := beat(2, "a", 1833, "barrier", true, 300*time.Millisecond, BehindAfter+time.Second)
			b.Step.Phase = "locate"
			w0, w1 := waiting(0, "a"), waiting(1, "a")
			w0.Step.Phase, w1.Step.Phase = "locate", "locate"
			return []Beat{w0, w1, b}
		}(), map[int]string{102: "S"}, "", nil},
		{"ended with a word", func() []Beat {
			b := behind(1, "a", 4*time.Second)
			b.Ended = "exit 0"
			return []Beat{waiting(0, "a"), b}
		}(), map[int]string{101: "gone"}, "", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := Hang{World: len(c.beats), Beats: map[int]Beat{}, Now: t0, Host: "a", State: states(c.procs), Self: 0}
			for _, b := range c.beats {
				h.Beats[b.Rank] = b
			}
			w := StuckWatch{Timeout: time.Minute}
			if got := w.Look(h, nil); len(got) != 0 {
				t.Fatalf("named at the first look: %+v", got)
			}
			h.Now = h.Now.Add(BeatEvery / 2)
			if got := w.Look(h, nil); len(got) != 0 {
				t.Fatalf("named at a second look within a beat: %+v", got)
			}
			h.Now = h.Now.Add(BeatEvery)
			got := w.Look(h, nil)
			if c.want == "" {
				if len(got) != 0 {
					t.Fatalf("named %+v, want none", got)
				}
				return
			}
			if len(got) != 1 || got[0].State != c.want {
				t.Fatalf("named %+v, want one rank %s", got, c.want)
			}
			for _, w := range c.wantIn {
				if !strings.Contains(got[0].Text, w) {
					t.Errorf("%q\ndoes not say %q", got[0].Text, w)
				}
			}
			if again := w.Look(h, nil); len(again) != 0 {
				t.Errorf("named twice: %+v", again)
			}
		})
	}
}

// The guard looks at rank 0 alone, as a reader that is no rank.
func TestStuckWatchOnly(t *testing.T) {
	h := Hang{World: 3, Now: t0, Host: "a", Self: -1, State: states(map[int]string{100: "T", 102: "T"}), Beats: map[int]Beat{
		0: beat(0, "a", 1833, "all-gather", false, 4*time.Second, 4*time.Second),
		1: beat(1, "a", 1834, "all-reduce", true, 0, time.Second),
		2: beat(2, "a", 1833, "all-gather", false, 4*time.Second, 4*time.Second)}}
	w := StuckWatch{}
	w.Look(h, func(r int) bool { return r == 0 })
	h.Now = h.Now.Add(BeatEvery)
	got := w.Look(h, func(r int) bool { return r == 0 })
	if len(got) != 1 || got[0].Rank != 0 || got[0].WatchdogInS != 0 || !got[0].Known() {
		t.Fatalf("named %+v, want rank 0 alone, stopped, with no watchdog time (none given)", got)
	}
	if strings.Contains(got[0].Text, "watchdog") {
		t.Errorf("%q: a time to the watchdog that is not known", got[0].Text)
	}
}

// Rank 0 is never named behind: it writes the combined outputs alone
// while the others wait; nor does a rank behind end the job.
func TestStuckWatchBehind(t *testing.T) {
	h := Hang{World: 3, Now: t0, Host: "a", Self: 1, State: states(map[int]string{100: "R", 102: "R"}), Beats: map[int]Beat{
		0: beat(0, "a", 1833, "all-gather", false, 0, BehindAfter+time.Second),
		1: beat(1, "a", 1834, "all-reduce", true, 0, BehindAfter),
		2: beat(2, "a", 1833, "all-gather", false, 0, BehindAfter+time.Second)}}
	w := StuckWatch{}
	w.Look(h, nil)
	h.Now = h.Now.Add(BeatEvery)
	got := w.Look(h, nil)
	if len(got) != 1 || got[0].Rank != 2 || got[0].State != "behind" || got[0].Proc != "R" || got[0].Known() {
		t.Fatalf("named %+v, want rank 2 alone, behind, not known stuck", got)
	}
}

// Every rank in the same collective, none behind, every beat fresh: the
// collective is stuck, and no rank is blamed.
func TestHangNoRankBehind(t *testing.T) {
	h := Hang{World: 4, Now: t0, Host: "a", Self: 0, State: states(nil), Beats: map[int]Beat{}}
	for r := range 4 {
		h.Beats[r] = beat(r, "a", 1834, "all-reduce", true, 200*time.Millisecond, 5*time.Second)
	}
	got := h.Text()
	want := "no rank is behind: the collective itself is stuck (a link, the fabric or the library): all 4 ranks wait in timing all-reduce #1834 (4096 bytes, direct, cycle 7) for 5.0 s"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	// One rank a step short for BehindAfter: it is behind, and it is named.
	h.Beats[3] = beat(3, "a", 1833, "all-gather", true, 200*time.Millisecond, BehindAfter)
	if got := h.Text(); strings.Contains(got, "no rank is behind") || !strings.Contains(got, "rank 3 on a (pid 103) waits in timing all-gather #1833") {
		t.Errorf("a rank behind: %q", got)
	}
}

// Every rank inside a collective, some still in one step and the rest,
// having left it, in the next, for less than BehindAfter (a link cut as
// the step's last messages flew: TestACutLinkBlamesNoRank): no rank is
// behind, and none is blamed, neither those still in it nor those ahead,
// whichever group is the larger. A rank whose own watchdog ended it in its
// step is still inside it; a stopped, ended or silent one is not, and the
// hang names it as before.
func TestHangStraddlingTwoStepsBlamesNoRank(t *testing.T) {
	h := Hang{World: 4, Now: t0, Host: "a", Self: 0, State: states(nil), Beats: map[int]Beat{}}
	for r := range 4 {
		if r%2 == 1 {
			h.Beats[r] = beat(r, "a", 771, "all-reduce", true, 200*time.Millisecond, 1600*time.Millisecond)
		} else {
			h.Beats[r] = beat(r, "a", 772, "all-reduce", true, 200*time.Millisecond, 1500*time.Millisecond)
		}
	}
	b := h.Beats[2]
	b.Ended, b.TimedOut = "watchdog: timing all-reduce at 4096 bytes did not finish within 1.5s", true
	h.Beats[2] = b
	want := "no rank is behind: the collective itself is stuck (a link, the fabric or the library): all 4 ranks reached timing all-reduce #771 " +
		"(4096 bytes, direct, cycle 7); ranks 1,3 wait in it for 1.6 s, and ranks 0,2, having left it, in the next (all-reduce #772)"
	if got := h.Text(); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	// Two still in it together past BehindAfter (the real cadence's
	// timeout_s 20, on 4 emulated hosts): still none behind, in the line
	// and in the early naming, which names no one.
	long := h
	long.Beats = maps.Clone(h.Beats)
	for _, r := range []int{1, 3} {
		long.Beats[r] = beat(r, "a", 771, "all-reduce", true, 200*time.Millisecond, BehindAfter+2*time.Second)
	}
	long.Beats[2] = beat(2, "a", 772, "all-reduce", true, 200*time.Millisecond, 1500*time.Millisecond)
	if got := long.Text(); !strings.Contains(got, "no rank is behind") || !strings.Contains(got, "ranks 1,3 wait in it for") {
		t.Errorf("two in it past BehindAfter: %q", got)
	}
	w := StuckWatch{}
	w.Look(long, nil)
	long.Now = long.Now.Add(BeatEvery)
	if named := w.Look(long, nil); len(named) != 0 {
		t.Errorf("two together in a collective the others left, named early: %+v", named)
	}
	// One alone in it past BehindAfter (a rank spinning inside the call,
	// spin.c) is behind: the hang names it, and no line says none is.
	alone := h
	alone.Beats = maps.Clone(h.Beats)
	alone.Beats[1] = beat(1, "a", 772, "all-reduce", true, 200*time.Millisecond, 1500*time.Millisecond)
	alone.Beats[3] = beat(3, "a", 771, "all-reduce", true, 200*time.Millisecond, BehindAfter+2*time.Second)
	if got := alone.Text(); strings.Contains(got, "no rank is behind") || !strings.Contains(got, "rank 3 on a (pid 103) waits in timing all-reduce #771") {
		t.Errorf("one alone in it past BehindAfter: %q", got)
	}
	// Three still in it, one ahead.
	h.Beats[0] = beat(0, "a", 771, "all-reduce", true, 200*time.Millisecond, 1600*time.Millisecond)
	if got := h.Text(); !strings.Contains(got, "ranks 0,1,3 wait in it for 1.6 s, and rank 2, having left it, in the next") {
		t.Errorf("three in it, one ahead: %q", got)
	}
	for name, change := range map[string]func(b *Beat){
		"ended otherwise":   func(b *Beat) { b.TimedOut = false },
		"two steps ahead":   func(b *Beat) { b.Step.Seq = 773 },
		"outside any step":  func(b *Beat) { b.Step.In = false },
		"another phase":     func(b *Beat) { b.Step.Phase = "soak" },
		"silent":            func(b *Beat) { b.Ended, b.Written = "", t0.Add(-SilentAfter-time.Second) },
		"did not run for 5": func(b *Beat) { b.Frozen = 5 },
	} {
		hh := h
		hh.Beats = maps.Clone(h.Beats)
		b := hh.Beats[2]
		change(&b)
		hh.Beats[2] = b
		if got := hh.Text(); strings.Contains(got, "no rank is behind") {
			t.Errorf("%s: %q; want the hang told rank by rank", name, got)
		}
	}
}

// On NCCL, the line adds what ncclCommGetAsyncError said on each rank,
// from its heartbeat, ranks as ranges: one answer for all, or each answer
// with its ranks; an answer asked before the rank entered the collective
// is not quoted as one about it. MPI's beats carry none, and add nothing.
func TestHangNoRankBehindQuotesNCCL(t *testing.T) {
	const base = "no rank is behind: the collective itself is stuck (a link, the fabric or the library): all 4 ranks wait in timing all-reduce #1834 (4096 bytes, direct, cycle 7) for 5.0 s"
	said := func(s string, ago time.Duration) *AsyncSaid {
		return &AsyncSaid{Call: "ncclCommGetAsyncError", Said: s, At: t0.Add(-ago)}
	}
	const ok = "ncclSuccess (no error yet)"
	for _, c := range []struct {
		name  string
		async map[int]*AsyncSaid
		want  string
	}{
		{"MPI: none", nil, base},
		{"every rank ncclSuccess", map[int]*AsyncSaid{0: said(ok, 0), 1: said(ok, time.Second), 2: said(ok, 0), 3: said(ok, 0)},
			base + "; ncclCommGetAsyncError, asked by each rank in this collective, says: ncclSuccess (no error yet) on all 4 ranks"},
		{"an error on one rank", map[int]*AsyncSaid{0: said(ok, 0), 1: said(ok, 0), 2: said("ncclRemoteError (6): remote process exited or there was a network error", 0), 3: said(ok, 0)},
			base + "; ncclCommGetAsyncError, asked by each rank in this collective, says: ncclSuccess (no error yet) on ranks 0,1,3, " +
				"and ncclRemoteError (6): remote process exited or there was a network error on rank 2"},
		{"one not asked since it entered", map[int]*AsyncSaid{0: said(ok, 0), 1: said(ok, 0), 2: said(ok, 0), 3: said(ok, 6*time.Second)},
			base + "; ncclCommGetAsyncError, asked by each rank in this collective, says: ncclSuccess (no error yet) on ranks 0-2, " +
				"and not asked since it entered it (no polling device wait since: RSAG_WAIT=block, or a wait on the host) on rank 3"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := Hang{World: 4, Now: t0, Host: "a", Self: 0, State: states(nil), Beats: map[int]Beat{}}
			for r := range 4 {
				b := beat(r, "a", 1834, "all-reduce", true, 200*time.Millisecond, 5*time.Second)
				b.Async = c.async[r]
				h.Beats[r] = b
			}
			if got := h.Text(); got != c.want {
				t.Errorf("got  %q\nwant %q", got, c.want)
			}
		})
	}
	// Many different answers are counted past a few, ranks as ranges.
	h := Hang{World: 8, Now: t0, Host: "a", Self: 0, State: states(nil), Beats: map[int]Beat{}}
	for r := range 8 {
		b := beat(r, "a", 1834, "all-reduce", true, 200*time.Millisecond, 5*time.Second)
		b.Async = said(fmt.Sprintf("ncclSystemError (2): rank %d's own words", r), 0)
		h.Beats[r] = b
	}
	if got := h.Text(); !strings.HasSuffix(got, "on rank 3, and 4 other answers on ranks 4-7") {
		t.Errorf("8 answers: %q", got)
	}
}
