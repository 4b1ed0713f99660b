package outdir

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"rsag/internal/atomicfile"
)

// BeatPrefix starts the name of each rank's heartbeat file in the output
// dir, .rsag-beat-rankN: what the rank is doing, rewritten about once a
// second (BeatEvery) by a goroutine of its own, so that when a collective
// hangs, or the launcher ends the job, rank 0 (or its guard) can name
// every rank's state without MPI, which may be stuck. The files are
// rsag's outputs: run.json lists them, so -overwrite removes them, and a
// beat names its run, so a stale one is never taken for this run's.
const BeatPrefix = ".rsag-beat-rank"

// BeatEvery is how often a rank rewrites its heartbeat; SilentAfter, a
// few missed beats, is how old one may grow before its rank is called
// silent: stopped, frozen, dead, or on a node that is gone.
const (
	BeatEvery   = time.Second
	SilentAfter = 3 * time.Second
)

// maxBeatBytes bounds a heartbeat file read: one is a few hundred bytes,
// a few kilobytes with many ranks on its host.
const maxBeatBytes = 1 << 20

// BeatName is rank's heartbeat file.
func BeatName(rank int) string { return BeatPrefix + strconv.Itoa(rank) }

// Beat is one rank's heartbeat.
type Beat struct {
	Run     string    `json:"run"` // the run's id (RunID): a beat of another run is not this one's
	Rank    int       `json:"rank"`
	Host    string    `json:"host"`
	PID     int       `json:"pid"`
	Written time.Time `json:"written"`
	Step    BeatStep  `json:"step"`
	// Ended says how the rank ended, once it has: "exit 0", its
	// watchdog's message, "signal SIGTERM"; "" while it runs. A rank whose
	// beat stops without it ended without a word.
	Ended string `json:"ended,omitempty"`
	// TimedOut says the last beat was written as the rank's watchdog fired:
	// Step is the one it waited too long in.
	TimedOut bool `json:"timed_out,omitempty"`
	// Frozen is the longest stretch the rank noticed it did not run at all
	// (its beats stopped: SIGSTOP, a frozen VM), in seconds; a stopped rank
	// that its launcher wakes to end it says so here.
	Frozen float64 `json:"frozen_s,omitempty"`
	// Peers are the other ranks on this rank's host, as /proc shows them
	// when it wrote: what another host cannot see of them.
	Peers []Peer `json:"peers,omitempty"`
}

// BeatStep is the blocking step a rank is in or last left
// (watchdog.Snapshot).
type BeatStep struct {
	Seq     uint64    `json:"seq"`
	Phase   string    `json:"phase"`
	Op      string    `json:"op"`
	Bytes   int64     `json:"bytes"`
	Context string    `json:"context,omitempty"` // "direct, cycle"
	Round   int       `json:"round,omitempty"`
	In      bool      `json:"in"`
	At      time.Time `json:"at"` // when it entered or left it
}

// Peer is another rank's process on this host.
type Peer struct {
	Rank  int    `json:"rank"`
	PID   int    `json:"pid"`
	State string `json:"state"` // ProcState's
}

// RunID names a run in its beats: rank 0's host, pid and start, as
// run.json has them.
func RunID(host string, pid int, started string) string {
	return fmt.Sprintf("%s/%d/%s", host, pid, started)
}

// WriteBeat writes b as dir's heartbeat file of its rank, atomically.
func WriteBeat(dir string, b Beat) error {
	data, err := json.Marshal(b)
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, BeatName(b.Rank)), data)
}

// ReadBeats reads the heartbeats of run in dir, by rank; a file of
// another run, or one that cannot be read, is left out.
func ReadBeats(dir, run string) map[int]Beat {
	entries, _ := os.ReadDir(dir)
	out := map[int]Beat{}
	for _, e := range entries {
		r, err := strconv.Atoi(strings.TrimPrefix(e.Name(), BeatPrefix))
		if !strings.HasPrefix(e.Name(), BeatPrefix) || err != nil {
			continue
		}
		data, err := atomicfile.ReadIn(dir, e.Name(), maxBeatBytes) // never through a planted link
		var b Beat
		if err != nil || json.NewDecoder(bytes.NewReader(data)).Decode(&b) != nil || b.Run != run || b.Rank != r {
			continue
		}
		out[r] = b
	}
	return out
}

// ProcState is the state of process pid on this host, from /proc: "R"
// (running), "S" (sleeping), "D" (in the kernel), "T" (stopped), "t"
// (traced), "Z" (exited, not yet reaped), or "gone" when there is no such
// process; "" when it cannot be told.
func ProcState(pid int) string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if os.IsNotExist(err) {
		return "gone"
	}
	if err != nil {
		return ""
	}
	// pid (comm) S ...: comm may hold spaces and parentheses; the state
	// follows the last ")".
	i := bytes.LastIndexByte(data, ')')
	if i < 0 || i+2 >= len(data) {
		return ""
	}
	return string(data[i+2])
}

// Hang is what the rank (or guard) that must explain an ending job
// knows: every rank's last heartbeat, read from the output dir (its own
// fresh), when, and on which host it runs, where it can look at
// processes itself.
type Hang struct {
	World int
	Beats map[int]Beat
	Now   time.Time
	Host  string
	// State is ProcState, for the processes on Host.
	State func(pid int) string
	// Frozen is how long the reader itself did not run before now (its
	// own beats stopped), when it did not: then it is the stopped one.
	Frozen time.Duration
	Self   int // the reader's rank; -1 for the guard
}

// Text names every rank's part in the hang: the ranks that wait in the
// same collective (the most of them, by sequence number), and each other
// rank: stopped, exited without a word, silent, elsewhere, or ended. It
// is "" when no rank waits and none is silent. E.g. "ranks 0,1,3 wait in
// timing all-reduce #1834 (1048576 bytes, decomposed, cycle 7) for 5.0 s;
// rank 2 on node2 (pid 5678) is stopped (state T, seen by rank 3 on
// node2): when last heard from, 5.4 s ago, it had not reached it: it was
// in all-gather #1833 (decomposed, cycle 7), left 0.0 s before".
func (h Hang) Text() string {
	type key struct {
		seq uint64
		op  string
	}
	waiting := map[key][]int{}
	silent := h.Silent
	timedOut := map[key]int{}
	for r := range h.World {
		if b, ok := h.Beats[r]; ok && !silent(r) && b.Step.In {
			k := key{b.Step.Seq, b.Step.Op}
			waiting[k] = append(waiting[k], r)
			if b.TimedOut {
				timedOut[k]++
			}
		}
	}
	// The step the most ranks timed out in, then the most wait in: a
	// launcher that wakes a stopped rank to end the job can let the
	// others move on a step before rank 0 looks.
	var most key
	for k, rs := range waiting {
		n := len(waiting[most])
		if t := timedOut[k]; t > timedOut[most] || (t == timedOut[most] && (len(rs) > n || (len(rs) == n && k.seq < most.seq))) {
			most = k
		}
	}
	var parts []string
	group := waiting[most]
	var began time.Time // when the last of the waiters entered: from then on they all waited
	if len(group) > 0 {
		b := h.Beats[group[0]]
		for _, r := range group {
			if at := h.Beats[r].Step.At; at.After(began) {
				began = at
			}
		}
		parts = append(parts, fmt.Sprintf("%s in %s for %.1f s", waitText(group), stepText(b.Step, true), h.Now.Sub(began).Seconds()))
	}
	// A waiter that did not run for a while held the others up: say so
	// first, whether it noticed (its beat) or is the reader.
	for _, r := range group {
		b := h.Beats[r]
		frozen := time.Duration(b.Frozen * float64(time.Second))
		if r == h.Self {
			frozen = max(frozen, h.Frozen)
		}
		if frozen > SilentAfter {
			parts = append(parts, fmt.Sprintf("rank %d on %s (pid %d) did not run for %.1f s (stopped, e.g. by SIGSTOP, or frozen) until it was woken: the others waited for it",
				r, b.Host, b.PID, frozen.Seconds()))
		}
	}
	for r := range h.World {
		if slices.Contains(group, r) {
			continue
		}
		if part := h.rankText(r, most.seq, group, began); part != "" {
			parts = append(parts, part)
		}
	}
	if len(group) == 0 && !slices.ContainsFunc(seq(h.World), silent) && h.Frozen <= SilentAfter {
		return ""
	}
	return strings.Join(parts, "; ")
}

// Silent says whether rank r has gone quiet: no beat, or none for
// SilentAfter, or its process gone, without a last beat that says how it
// ended. The reader itself is never silent.
func (h Hang) Silent(r int) bool {
	b, ok := h.Beats[r]
	switch {
	case r == h.Self:
		return false
	case !ok:
		return true
	case b.Ended != "":
		return false
	case h.Now.Sub(b.Written) > SilentAfter:
		return true
	}
	state, _ := h.procState(r, b)
	return state == "gone" || state == "Z"
}

// rankText is one rank's part, told against the waiters' step (seq),
// which the last of the ranks in group entered at began.
func (h Hang) rankText(r int, seq uint64, group []int, began time.Time) string {
	b, ok := h.Beats[r]
	if !ok {
		return fmt.Sprintf("rank %d wrote no heartbeat in this run", r)
	}
	who := fmt.Sprintf("rank %d on %s (pid %d)", r, b.Host, b.PID)
	frozen := time.Duration(b.Frozen * float64(time.Second))
	if r == h.Self {
		frozen = max(frozen, h.Frozen)
	}
	if frozen > SilentAfter {
		return fmt.Sprintf("%s did not run for %.1f s (stopped, e.g. by SIGSTOP, or frozen) until it was woken: the others waited for it; its last heartbeat, %.1f s ago, %s",
			who, frozen.Seconds(), h.Now.Sub(b.Written).Seconds(), positionText(b, seq, group, began))
	}
	if b.Ended != "" {
		return fmt.Sprintf("%s had ended (%s) and %s", who, b.Ended, positionText(b, seq, group, began))
	}
	age := h.Now.Sub(b.Written)
	if !h.Silent(r) {
		if b.Step.In {
			return fmt.Sprintf("%s waits in %s instead", who, stepText(b.Step, true))
		}
		return fmt.Sprintf("%s runs outside any collective: it left %s %.1f s ago", who, stepText(b.Step, true), h.Now.Sub(b.Step.At).Seconds())
	}
	state, seen := h.procState(r, b)
	var what string
	switch state {
	case "T", "t":
		what = fmt.Sprintf("is stopped (state %s%s)", state, seen)
	case "gone":
		what = fmt.Sprintf("exited without a word: its process is gone%s and it wrote no last heartbeat", seen)
	case "Z":
		what = fmt.Sprintf("exited without a word (state Z%s) and wrote no last heartbeat", seen)
	case "":
		what = fmt.Sprintf("has written no heartbeat for %.1f s, and no rank on %s can say why (stopped, killed, or its node gone)", age.Seconds(), b.Host)
	default:
		what = fmt.Sprintf("lives (state %s%s) but has written no heartbeat for %.1f s: it is frozen or starved", state, seen, age.Seconds())
	}
	return fmt.Sprintf("%s %s; its last heartbeat, %.1f s ago, %s", who, what, age.Seconds(), positionText(b, seq, group, began))
}

// procState looks at rank r's process: itself when it is on this host,
// else through a live rank on its host that saw it.
func (h Hang) procState(r int, b Beat) (state, seen string) {
	if b.Host == h.Host && h.State != nil {
		return h.State(b.PID), ""
	}
	for q := range h.World {
		o, ok := h.Beats[q]
		if !ok || q == r || o.Host != b.Host {
			continue
		}
		for _, p := range o.Peers {
			if p.Rank == r && p.PID == b.PID && p.State != "" {
				return p.State, fmt.Sprintf(", seen by rank %d on %s %.1f s ago", q, o.Host, h.Now.Sub(o.Written).Seconds())
			}
		}
	}
	return "", ""
}

// positionText says where a rank's last beat had it, against the
// waiters' step seq, which the last of group entered at began: a beat
// from before then cannot say whether the rank reached it.
func positionText(b Beat, seq uint64, group []int, began time.Time) string {
	st := b.Step
	where := "in " + stepText(st, true)
	if before := b.Written.Sub(st.At); !st.In {
		where = fmt.Sprintf("past %s, which it left %.1f s before", stepText(st, true), before.Seconds())
	} else if before >= 50*time.Millisecond {
		where += fmt.Sprintf(", entered %.1f s before", before.Seconds())
	}
	switch {
	case len(group) == 0:
		return "had it " + where
	case b.Written.Before(began):
		return fmt.Sprintf("written %.1f s before %s began to wait, had it %s", began.Sub(b.Written).Seconds(), subject(group), where)
	case st.Seq == seq && st.In:
		return "had it in that one too"
	case st.Seq < seq || (st.Seq == seq && !st.In):
		return "had it short of that one: " + where
	}
	return "had it beyond that one: " + where
}

// subject names the waiters: "rank 0", "ranks 0,1,3".
func subject(group []int) string {
	return strings.TrimSuffix(strings.TrimSuffix(waitText(group), " waits"), " wait")
}

// stepText names a step: "timing all-reduce #1834 (4096 bytes, direct,
// cycle 7)".
func stepText(s BeatStep, phase bool) string {
	var in []string
	if s.Bytes >= 0 {
		in = append(in, fmt.Sprintf("%d bytes", s.Bytes))
	}
	if s.Context != "" {
		in = append(in, fmt.Sprintf("%s %d", s.Context, s.Round))
	}
	t := fmt.Sprintf("%s #%d", s.Op, s.Seq)
	if phase && s.Phase != "" {
		t = s.Phase + " " + t
	}
	if len(in) > 0 {
		t += " (" + strings.Join(in, ", ") + ")"
	}
	return t
}

func waitText(ranks []int) string {
	if len(ranks) == 1 {
		return fmt.Sprintf("rank %d waits", ranks[0])
	}
	s := make([]string, len(ranks))
	for i, r := range ranks {
		s[i] = strconv.Itoa(r)
	}
	return "ranks " + strings.Join(s, ",") + " wait"
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}
