package outdir

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// beat is rank r's heartbeat on host, written ago before t0, in step seq
// (entered, or left when in is false) since at before t0.
func beat(r int, host string, seq uint64, op string, in bool, ago, since time.Duration) Beat {
	return Beat{Run: "run", Rank: r, Host: host, PID: 100 + r, Written: t0.Add(-ago),
		Step: BeatStep{Seq: seq, Phase: "timing", Op: op, Bytes: 4096, Context: "direct, cycle", Round: 7, In: in, At: t0.Add(-since)}}
}

// states is ProcState on a made-up host: pid -> state.
func states(m map[int]string) func(int) string { return func(pid int) string { return m[pid] } }

// The hang names the ranks that wait in the same collective and, apart,
// each rank that does not: stopped (seen from this host, or by a rank on
// its own), exited without a word, silent with no one to say why,
// elsewhere, or ended with a last heartbeat.
func TestHangText(t *testing.T) {
	waiting := func(r int, host string) Beat {
		return beat(r, host, 1834, "all-reduce", true, 200*time.Millisecond, 5*time.Second)
	}
	for _, c := range []struct {
		name  string
		beats []Beat
		procs map[int]string
		want  []string
	}{
		{"a stopped rank on this host", []Beat{waiting(0, "a"), waiting(1, "a"), beat(2, "a", 1833, "all-gather", false, 6*time.Second, 6*time.Second), waiting(3, "a")},
			map[int]string{102: "T"},
			[]string{"ranks 0,1,3 wait in timing all-reduce #1834 (4096 bytes, direct, cycle 7) for 5.0 s",
				"rank 2 on a (pid 102) is stopped (state T); its last heartbeat, 6.0 s ago, written 1.0 s before ranks 0,1,3 began to wait, had it past timing all-gather #1833 (4096 bytes, direct, cycle 7), which it left 0.0 s before"}},
		{"a stopped rank on another host, seen by its neighbour", func() []Beat {
			b := waiting(3, "b")
			b.Peers = []Peer{{Rank: 2, PID: 102, State: "T"}}
			return []Beat{waiting(0, "a"), waiting(1, "a"), beat(2, "b", 1834, "all-reduce", true, 4*time.Second, 5*time.Second), b}
		}(), nil,
			[]string{"ranks 0,1,3 wait in timing all-reduce #1834", "rank 2 on b (pid 102) is stopped (state T, seen by rank 3 on b 0.2 s ago); its last heartbeat, 4.0 s ago, had it in that one too"}},
		{"a rank gone without a word, its beat still fresh", []Beat{waiting(0, "a"), beat(1, "a", 1830, "barrier", false, 500*time.Millisecond, time.Second)},
			map[int]string{101: "gone"},
			[]string{"rank 0 waits in timing all-reduce #1834", "rank 1 on a (pid 101) exited without a word: its process is gone and it wrote no last heartbeat; its last heartbeat, 0.5 s ago, had it short of that one: past timing barrier #1830"}},
		{"a silent rank no one can see", []Beat{waiting(0, "a"), beat(1, "b", 1834, "all-reduce", true, 10*time.Second, 10*time.Second)}, nil,
			[]string{"rank 1 on b (pid 101) has written no heartbeat for 10.0 s, and no rank on b can say why (stopped, killed, or its node gone)"}},
		{"a rank elsewhere and one ended", func() []Beat {
			e := waiting(2, "a")
			e.Ended = "watchdog: timing all-reduce at 4096 bytes did not finish within 5s"
			return []Beat{waiting(0, "a"), beat(1, "a", 1700, "barrier", true, 100*time.Millisecond, 3*time.Second), e}
		}(), nil,
			[]string{"ranks 0,2 wait in timing all-reduce #1834", "rank 1 on a (pid 101) waits in timing barrier #1700 (4096 bytes, direct, cycle 7) instead"}},
		{"a rank that never beat", []Beat{waiting(0, "a")}, nil, []string{"rank 0 waits in", "rank 1 wrote no heartbeat in this run"}},
		// A launcher that wakes a stopped rank to end the job lets the others
		// move on: the step ranks timed out in is the one, and the woken
		// rank says it did not run.
		{"a stopped rank the launcher woke", func() []Beat {
			woken, timedOut := waiting(2, "b"), waiting(3, "b")
			woken.Frozen, woken.Ended, woken.TimedOut = 5.2, "watchdog: ...", true
			timedOut.Ended, timedOut.TimedOut = "watchdog: ...", true
			return []Beat{beat(0, "a", 1835, "all-reduce", true, 0, 100*time.Millisecond), beat(1, "a", 1835, "all-reduce", true, 0, 100*time.Millisecond), woken, timedOut}
		}(), nil,
			[]string{"ranks 2,3 wait in timing all-reduce #1834", "rank 2 on b (pid 102) did not run for 5.2 s (stopped, e.g. by SIGSTOP, or frozen) until it was woken: the others waited for it",
				"rank 0 on a (pid 100) waits in timing all-reduce #1835"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := Hang{World: len(c.beats), Beats: map[int]Beat{}, Now: t0, Host: "a", State: states(c.procs), Self: 0}
			if c.name == "a rank that never beat" {
				h.World = 2
			}
			for _, b := range c.beats {
				h.Beats[b.Rank] = b
			}
			got := h.Text()
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("%q\ndoes not say %q", got, w)
				}
			}
		})
	}
	// Every rank running, none silent: nothing to say.
	h := Hang{World: 2, Now: t0, Host: "a", State: states(nil), Beats: map[int]Beat{
		0: beat(0, "a", 10, "all-reduce", false, 0, 0), 1: beat(1, "a", 10, "all-reduce", false, 0, 0)}}
	if got := h.Text(); got != "" {
		t.Errorf("a run with no hang: %q", got)
	}
	// The reader itself did not run: it says so.
	h.Beats[0] = beat(0, "a", 10, "all-reduce", true, 0, 9*time.Second)
	h.Frozen = 9 * time.Second
	h.Beats[1] = beat(1, "a", 11, "all-reduce", true, 0, 8*time.Second)
	if got := h.Text(); !strings.Contains(got, "rank 0 on a (pid 100) did not run for 9.0 s (stopped, e.g. by SIGSTOP, or frozen) until it was woken: the others waited for it") {
		t.Errorf("a frozen reader: %q", got)
	}
}

// Beats are read back by rank from the nodes' files, only this run's: a
// stale file of another run, a node's file under another's name, a beat
// of another host's, or a broken file is left out; a link planted at a
// node's file is said, not followed.
func TestReadBeats(t *testing.T) {
	dir := t.TempDir()
	at := t0.Add(-time.Second)
	for _, n := range []NodeBeats{
		{Run: "this", Host: "a", Node: 0, Written: t0, Beats: []Beat{{Run: "this", Rank: 0, Host: "a", Written: at}, {Run: "this", Rank: 1, Host: "a", Written: at}, {Run: "this", Rank: 9, Host: "b"}}},
		{Run: "this", Host: "b", Node: 1, Written: t0, Beats: []Beat{{Run: "this", Rank: 2, Host: "b", Written: at}}},
		{Run: "earlier", Host: "c", Node: 2, Beats: []Beat{{Run: "earlier", Rank: 3, Host: "c"}}},
	} {
		if err := WriteNodeBeats(dir, n); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(dir, NodeBeatName(3)), []byte("{"), 0o644)
	os.WriteFile(filepath.Join(dir, NodeBeatName(4)), []byte(`{"run":"this","node":1,"host":"b","beats":[{"run":"this","rank":5,"host":"b"}]}`), 0o644)
	os.Symlink("/etc/passwd", filepath.Join(dir, NodeBeatName(5)))
	got, unread := ReadBeats(dir, "this")
	if len(got) != 3 || got[0].Rank != 0 || got[1].Rank != 1 || got[2].Rank != 2 || !got[2].Relayed.Equal(t0) {
		t.Errorf("%+v, want ranks 0, 1 and 2 of this run, relayed at %v", got, t0)
	}
	if len(unread) != 1 || !strings.Contains(unread[0].Error(), "is a symbolic link to /etc/passwd") {
		t.Errorf("unread %v, want the link named", unread)
	}
	// A rank is silent by its beat's age when its node's file was
	// written, or when that file itself has stopped.
	h := Hang{World: 3, Beats: got, Now: t0.Add(2 * time.Second), Host: "z", Self: 0}
	if h.Silent(1) {
		t.Errorf("rank 1, relayed 2 s ago a second old, is silent")
	}
	h.Now = t0.Add(SilentAfter + BeatEvery + time.Millisecond)
	if !h.Silent(1) {
		t.Errorf("rank 1, whose node's file stopped %v ago, is not silent", h.Now.Sub(t0))
	}
	old := got[2]
	old.Written = t0.Add(-SilentAfter - time.Millisecond)
	h.Beats[2], h.Now = old, t0
	if !h.Silent(2) {
		t.Errorf("rank 2, relayed with a beat %v old, is not silent", SilentAfter)
	}
}

// The rank of a node that writes its file is its first live one; a
// stopped or ended one is passed over.
func TestWriter(t *testing.T) {
	kept := map[int]Beat{4: {Written: t0.Add(-2 * time.Second)}, 5: {Written: t0, Ended: "exit 0"}, 6: {Written: t0}, 7: {Written: t0}}
	if w := Writer([]int{4, 5, 6, 7}, kept, 7, t0); w != 6 {
		t.Errorf("writer %d, want 6", w)
	}
	if w := Writer([]int{4, 5}, kept, 5, t0); w != 5 {
		t.Errorf("writer %d, want itself when none is live", w)
	}
}

// Beats kept in node-local memory are read back by rank, this run's and
// host's only.
func TestLocalBeats(t *testing.T) {
	l := LocalBeats{Dir: filepath.Join(t.TempDir(), "beats")}
	for _, b := range []Beat{{Run: "this", Rank: 0, Host: "a"}, {Run: "this", Rank: 1, Host: "a"}, {Run: "this", Rank: 2, Host: "b"}, {Run: "other", Rank: 3, Host: "a"}} {
		if err := l.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	unlock, err := l.Lock()
	if err != nil {
		t.Fatal(err)
	}
	unlock()
	if got := l.Read("this", "a"); len(got) != 2 || got[1].Rank != 1 {
		t.Errorf("%+v", got)
	}
	l.Remove()
	if _, err := os.Stat(l.Dir); !os.IsNotExist(err) {
		t.Errorf("%s left: %v", l.Dir, err)
	}
}

// ProcState reads a live process's state and says when one is gone.
func TestProcState(t *testing.T) {
	if s := ProcState(os.Getpid()); s != "R" && s != "S" {
		t.Errorf("this process: %q", s)
	}
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if s := ProcState(cmd.Process.Pid); s != "gone" {
		t.Errorf("an ended, reaped process: %q", s)
	}
}

// At 8,192 ranks on 1,024 nodes, a hang's line and the notes' clause stay
// a line: rank 5 stopped, ranks 0-4 and 6-8191 waiting, half of them
// having ended by the launcher's signal, every rank leaving a note.
func TestClosingLinesAreBoundedAt8192Ranks(t *testing.T) {
	const world = 8192
	h := Hang{World: world, Beats: map[int]Beat{}, Now: t0, Host: "node0", State: states(map[int]string{105: "T"}), Self: 0}
	var notes []Note
	for r := range world {
		host := fmt.Sprintf("node%d", r/8)
		b := beat(r, host, 1834, "all-reduce", true, 200*time.Millisecond, 5*time.Second)
		switch {
		case r == 5:
			b = beat(r, host, 1833, "all-gather", false, 6*time.Second, 6*time.Second)
		case r%2 == 1:
			b.Ended = "received SIGTERM: stopping"
		case r%3 == 0:
			b.Step.Seq, b.Step.Op = 1700, "barrier"
		}
		h.Beats[r] = b
		notes = append(notes, Note{Rank: r, Text: fmt.Sprintf("rank %d (%s): watchdog: all-reduce did not finish within 5s", r, host)})
	}
	text := h.Text()
	if len(text) > 2000 || !strings.Contains(text, "rank 5 on node0 (pid 105) is stopped (state T)") || !strings.Contains(text, "wait in timing barrier #1700") {
		t.Errorf("hang at %d ranks: %d bytes: %.3000s", world, len(text), text)
	}
	if n := NotesText(notes); len(n) > 300 || !strings.HasPrefix(n, "ranks 0-8191: watchdog") {
		t.Errorf("notes at %d ranks: %d bytes: %.500s", world, len(n), n)
	}
	t.Logf("hang line %d bytes: %s", len(text), text)
}
