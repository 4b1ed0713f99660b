package outdir

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"rsag/internal/cadence"
	"rsag/internal/rankset"
)

// BeatPrefix starts the name of every heartbeat file in the output dir:
// one a node, .rsag-beat-nodeK (NodeBeatName), holding what every rank of
// that node is doing, rewritten about once a second (BeatEvery) by one
// rank of the node from the beats its ranks keep in node-local memory
// (LocalBeats), so that when a collective hangs, or the launcher ends the
// job, rank 0 (or its guard) can name every rank's state without MPI,
// which may be stuck. The shared file system sees one file a node, not
// one a rank. The files are rsag's outputs: run.json lists them, so
// -overwrite removes them, and a beat names its run, so a stale one is
// never taken for this run's. (Runs before node files wrote
// .rsag-beat-rankN, one a rank: the prefix still knows them for rsag's.)
const BeatPrefix = ".rsag-beat-"

// nodeBeatPrefix starts a node's heartbeat file.
const nodeBeatPrefix = BeatPrefix + "node"

// BeatEvery is how often a rank beats; SilentAfter, a few missed beats,
// is how old one may grow before its rank is called silent: stopped,
// frozen, dead, or on a node that is gone. Both are internal/cadence's,
// which a test build shortens.
const (
	BeatEvery   = cadence.BeatEvery
	SilentAfter = cadence.SilentAfter
)

// maxBeatBytes bounds a heartbeat file read: a node's is a few hundred
// bytes a rank.
const maxBeatBytes = 16 << 20

// NodeBeatName is the heartbeat file of node, numbered from 0 in the
// order of the nodes' first ranks.
func NodeBeatName(node int) string { return nodeBeatPrefix + strconv.Itoa(node) }

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
	// when it wrote: what another host cannot see of them (the beat of
	// the rank that wrote its node's file has them).
	Peers []Peer `json:"peers,omitempty"`
	// Async is what the rank's library last said of its own errors
	// (NCCL's ncclCommGetAsyncError), when its backend says; absent on MPI.
	Async *AsyncSaid `json:"async,omitempty"`
	// Relayed is when the node's file that carried this beat was
	// written; zero for a beat read from node-local memory. A rank is
	// silent by the age its beat had then; a node whose file stops is
	// silent whole.
	Relayed time.Time `json:"-"`
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
	// Unread are the heartbeat files that could not be read (ReadBeats):
	// the ranks they hold have no beat, and the hang says why.
	Unread []error
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
	// Every rank waits in the same collective, none behind, none stopped,
	// every heartbeat fresh: no rank holds it up, and none is blamed.
	if len(group) == h.World && h.World > 0 && len(parts) == 1 && len(h.Unread) == 0 {
		return fmt.Sprintf("no rank is behind: the collective itself is stuck (a link, the fabric or the library): all %d ranks wait in %s for %.1f s",
			h.World, stepText(h.Beats[group[0]].Step, true), h.Now.Sub(began).Seconds()) + h.asyncText(group)
	}
	// Or every rank is inside one of two steps, the one some still wait
	// in and the next, which the others went on to: none is behind.
	if s := h.straddling(); s != "" {
		return s
	}
	var others []rankPart
	for r := range h.World {
		if slices.Contains(group, r) {
			continue
		}
		if p := h.rankText(r, most.seq, group, began); p.text != "" {
			others = append(others, p)
		}
	}
	parts = append(parts, foldParts(others)...)
	if len(group) == 0 && !slices.ContainsFunc(seq(h.World), silent) && h.Frozen <= SilentAfter {
		return ""
	}
	for _, err := range h.Unread {
		parts = append(parts, fmt.Sprintf("a heartbeat file could not be read: %v", err))
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
	case !b.Relayed.IsZero() && (b.Relayed.Sub(b.Written) > SilentAfter || h.Now.Sub(b.Relayed) > SilentAfter+BeatEvery):
		// Silent by its node's file: its beat was old when the file was
		// written, or the file itself has stopped (another rank of the
		// node takes over within BeatEvery and a half of its writer's
		// stop).
		return true
	case b.Relayed.IsZero() && h.Now.Sub(b.Written) > SilentAfter:
		return true
	}
	state, _ := h.procState(r, b)
	return state == "gone" || state == "Z"
}

// rankPart is one rank's part in a hang: its text, and what it shares
// with other ranks in the same plight (the text without its rank, host,
// pid and ages), by which many are folded into one.
type rankPart struct {
	rank       int
	text, kind string
}

// foldAbove is how many ranks' parts a hang names one by one; beyond it,
// ranks of one kind are said once, their ranks as ranges, so that a hang
// among thousands of ranks is a line, not a page.
const foldAbove = 8

// foldParts is each part's text, or, past foldAbove parts, one clause a
// kind: "ranks 4-1023 had ended (signal SIGTERM)".
func foldParts(parts []rankPart) []string {
	var out []string
	if len(parts) <= foldAbove {
		for _, p := range parts {
			out = append(out, p.text)
		}
		return out
	}
	var kinds []string
	byKind := map[string][]rankPart{}
	for _, p := range parts {
		if _, ok := byKind[p.kind]; !ok {
			kinds = append(kinds, p.kind)
		}
		byKind[p.kind] = append(byKind[p.kind], p)
	}
	for i, k := range kinds {
		if i == rankset.MaxParts {
			var rest []int
			for _, k := range kinds[i:] {
				for _, p := range byKind[k] {
					rest = append(rest, p.rank)
				}
			}
			out = append(out, fmt.Sprintf("%s: %d other kinds of state", rankset.Ranks(rest), len(kinds)-i))
			break
		}
		ps := byKind[k]
		if len(ps) == 1 {
			out = append(out, ps[0].text)
			continue
		}
		var rs []int
		for _, p := range ps {
			rs = append(rs, p.rank)
		}
		out = append(out, fmt.Sprintf("%s %s (as rank %d: %s)", rankset.Ranks(rs), k, ps[0].rank, strings.TrimPrefix(ps[0].text, fmt.Sprintf("rank %d ", ps[0].rank))))
	}
	return out
}

// rankText is one rank's part, told against the waiters' step (seq),
// which the last of the ranks in group entered at began.
func (h Hang) rankText(r int, seq uint64, group []int, began time.Time) rankPart {
	part := func(kind, format string, args ...any) rankPart {
		return rankPart{rank: r, kind: kind, text: fmt.Sprintf(format, args...)}
	}
	b, ok := h.Beats[r]
	if !ok {
		return part("wrote no heartbeat in this run", "rank %d wrote no heartbeat in this run", r)
	}
	who := fmt.Sprintf("rank %d on %s (pid %d)", r, b.Host, b.PID)
	frozen := time.Duration(b.Frozen * float64(time.Second))
	if r == h.Self {
		frozen = max(frozen, h.Frozen)
	}
	if frozen > SilentAfter {
		return part("did not run (stopped, e.g. by SIGSTOP, or frozen) until woken",
			"%s did not run for %.1f s (stopped, e.g. by SIGSTOP, or frozen) until it was woken: the others waited for it; its last heartbeat, %.1f s ago, %s",
			who, frozen.Seconds(), h.Now.Sub(b.Written).Seconds(), positionText(b, seq, group, began))
	}
	if b.Ended != "" {
		return part(fmt.Sprintf("had ended (%s)", b.Ended), "%s had ended (%s) and %s", who, b.Ended, positionText(b, seq, group, began))
	}
	age := h.Now.Sub(b.Written)
	if !h.Silent(r) {
		if b.Step.In {
			return part(fmt.Sprintf("wait in %s instead", stepText(b.Step, true)), "%s waits in %s instead", who, stepText(b.Step, true))
		}
		return part(fmt.Sprintf("run outside any collective, past %s", stepText(b.Step, true)),
			"%s runs outside any collective: it left %s %.1f s ago", who, stepText(b.Step, true), h.Now.Sub(b.Step.At).Seconds())
	}
	state, seen := h.procState(r, b)
	var what, kind string
	switch state {
	case "T", "t":
		what, kind = fmt.Sprintf("is stopped (state %s%s)", state, seen), fmt.Sprintf("are stopped (state %s)", state)
	case "gone":
		what, kind = fmt.Sprintf("exited without a word: its process is gone%s and it wrote no last heartbeat", seen), "exited without a word"
	case "Z":
		what, kind = fmt.Sprintf("exited without a word (state Z%s) and wrote no last heartbeat", seen), "exited without a word"
	case "":
		what = fmt.Sprintf("has written no heartbeat for %.1f s, and no rank on %s can say why (stopped, killed, or its node gone)", age.Seconds(), b.Host)
		kind = "are silent, and no rank on their hosts can say why (stopped, killed, or their node gone)"
	default:
		what = fmt.Sprintf("lives (state %s%s) but has written no heartbeat for %.1f s: it is frozen or starved", state, seen, age.Seconds())
		kind = fmt.Sprintf("live (state %s) but are silent: frozen or starved", state)
	}
	return part(kind, "%s %s; its last heartbeat, %.1f s ago, %s", who, what, age.Seconds(), positionText(b, seq, group, began))
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

// waitText is "rank 2 waits" or "ranks 0-7,9 wait" (rankset: bounded
// for any world).
func waitText(ranks []int) string {
	if len(ranks) == 1 {
		return fmt.Sprintf("rank %d waits", ranks[0])
	}
	return rankset.Ranks(ranks) + " wait"
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}
