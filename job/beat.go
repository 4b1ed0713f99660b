package job

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"rsag/coll"
	"rsag/internal/atomicfile"
	"rsag/internal/cadence"
	"rsag/internal/stopped"
	"rsag/outdir"
	"rsag/report"
	"rsag/watchdog"
)

// beatWriters are the heartbeat writers of the ranks of this process, by
// output dir and rank, for the output that writes the node's file: one
// in the binary, one a goroutine rank in a test (Options.World).
var beatWriters sync.Map // beatKey -> *beater

type beatKey struct {
	dir  string
	rank int
}

// Each node's heartbeat file is one of its ranks' outputs: run.json lists
// it, so that -overwrite removes it and a survey knows it for rsag's; its
// writing at the end of the phases is one more beat, which fails the run
// if a beat met a link or other refusal on the way.
func init() {
	report.Register(report.Output{Stage: report.EachRank, Patterns: []string{outdir.BeatPrefix + "node[0-9]*"},
		Plan: func(in report.Input) ([]string, func(string) error) {
			return []string{outdir.NodeBeatName(in.Node())}, func(dir string) error {
				if b, ok := beatWriters.Load(beatKey{dir, in.Rank}); ok {
					return b.(*beater).flush()
				}
				return nil
			}
		}})
}

// beater keeps this rank's heartbeat (outdir.Beat) about once a second,
// on a goroutine of its own, from the State the main goroutine keeps, so
// that what this rank is doing can be read while MPI is stuck; once the
// rank ends, a last beat says how. The beat goes to node-local memory
// (outdir.LocalBeats); one rank of the node, its first live one, puts
// every beat kept there into the node's file in the output dir, so that
// the shared file system sees one write a node a second, not one a rank.
type beater struct {
	dir   string
	local outdir.LocalBeats
	node  int
	ranks []int       // this node's, ascending, this one among them
	me    outdir.Beat // what every beat repeats: run, rank, host, pid
	state *watchdog.State
	peers []outdir.Peer      // the other ranks on this host
	async coll.AsyncReporter // the backend's word on its own errors; nil on MPI
	last  atomic.Int64       // Unix nanoseconds of the last beat written

	mu     sync.Mutex // one write at a time
	ended  string
	frozen time.Duration // the longest gap between beats beyond BeatEvery: this process did not run
	stop   chan struct{}
	// refused is the first refusal met writing the node's file (a link
	// planted there): the run fails by it at the end, as by any output's.
	refused error
}

// startBeats starts every rank's heartbeat, once the output dir is this
// run's and run.json lists the files: the ranks exchange their pids and
// hosts (so that each can look at the others on its host) and rank 0's
// start, which names the run. The first rank of each node writes its
// node's file at once.
func (s *session) startBeats() error {
	type whoami struct {
		PID     int    `json:"pid"`
		Host    string `json:"host"`
		Started string `json:"started"`
	}
	mine, err := json.Marshal(whoami{s.pid, s.comm.Host(), s.opts.Started.UTC().Format(time.RFC3339)})
	if err != nil {
		return err
	}
	s.tr.Arm("gather of process ids", -1)
	all, err := s.comm.AllGather(mine)
	s.tr.Leave()
	if err != nil {
		return err
	}
	ranks := make([]whoami, len(all))
	hosts := make([]string, len(all))
	for r, d := range all {
		if err := json.Unmarshal(d, &ranks[r]); err != nil {
			return fmt.Errorf("rank %d's process id: %w", r, err)
		}
		hosts[r] = ranks[r].Host
	}
	run := outdir.RunID(ranks[0].Host, ranks[0].PID, ranks[0].Started)
	b := &beater{dir: s.opts.OutputDir, local: outdir.LocalBeatsOf(run, s.opts.OutputDir), node: report.NodesOf(hosts)[s.comm.Rank()],
		state: &s.tr.State, stop: make(chan struct{}), async: s.async,
		me: outdir.Beat{Run: run, Rank: s.comm.Rank(), Host: s.comm.Host(), PID: s.pid}}
	for r, w := range ranks {
		if w.Host == s.comm.Host() {
			b.ranks = append(b.ranks, r)
			if r != s.comm.Rank() {
				b.peers = append(b.peers, outdir.Peer{Rank: r, PID: w.PID})
			}
		}
	}
	err = b.first()
	s.beats.Store(b)
	beatWriters.Store(beatKey{s.opts.OutputDir, s.comm.Rank()}, b)
	s.end.OnEnd(b.end)
	if s.comm.Rank() != 0 {
		// Rank 0 (or its guard) names how each rank a signal ended, from
		// its last heartbeat, ranks as ranges: one line for all.
		s.end.SetQuietOnSignal()
	}
	go b.loop()
	// A rank that cannot write its heartbeat (a full disk) would fail on
	// its own and leave run.json to a launcher's signal: the ranks agree,
	// so that run.json names the cause.
	return s.agree(err, ExitFailed, "writing the heartbeat file")
}

// first is the first beat: kept in node-local memory by every rank (a
// node without any fails here, on every rank of it), and in the node's
// file by its first rank.
func (b *beater) first() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	beat := b.now()
	b.last.Store(beat.Written.UnixNano())
	if err := b.local.Write(beat); err != nil {
		return fmt.Errorf("keeping heartbeats in node-local memory: %w", err)
	}
	if b.ranks[0] != b.me.Rank {
		return nil
	}
	return b.relay(beat, true)
}

// now is this rank's heartbeat as of now (b.mu is held).
func (b *beater) now() outdir.Beat {
	beat := b.me
	snap := b.state.Snapshot()
	beat.Written = time.Now()
	// Beats that come seconds late mean this process did not run, when a
	// SIGCONT since the last one proves it was stopped; on a loaded
	// machine they come as late without it (issue 34 class 5), and an
	// innocent rank must not take the blame.
	last := time.Unix(0, b.last.Load())
	if gap := beat.Written.Sub(last) - outdir.BeatEvery; b.last.Load() > 0 && gap > frozenAfter && stopped.Since(last) {
		b.frozen = max(b.frozen, gap)
	}
	beat.Frozen = b.frozen.Seconds()
	beat.Step = outdir.BeatStep{Seq: snap.Seq, Phase: snap.Phase, Op: snap.Op, Bytes: snap.Bytes, Context: snap.Context,
		Round: snap.Round, In: snap.In, At: snap.At}
	if b.async != nil {
		if a := b.async.AsyncStatus(); !a.At.IsZero() {
			beat.Async = &outdir.AsyncSaid{Call: a.Call, Said: a.Said, At: a.At}
		}
	}
	return beat
}

// relay writes the node's file from the beats its ranks keep, mine for
// this rank's: when always, or when this rank is the node's writer now
// (outdir.Writer). The node's ranks write it one at a time. The writer's
// beat carries the state of the other ranks' processes, which no other
// host can see. (b.mu is held.)
func (b *beater) relay(mine outdir.Beat, always bool) error {
	kept := b.local.Read(b.me.Run, b.me.Host)
	kept[b.me.Rank] = mine
	if !always && outdir.Writer(b.ranks, kept, b.me.Rank, mine.Written) != b.me.Rank {
		return nil
	}
	unlock, err := b.local.Lock()
	if err != nil {
		return err
	}
	defer unlock()
	kept = b.local.Read(b.me.Run, b.me.Host) // what the others kept since
	for _, p := range b.peers {
		p.State = outdir.ProcState(p.PID)
		mine.Peers = append(mine.Peers, p)
	}
	kept[b.me.Rank] = mine
	n := outdir.NodeBeats{Run: b.me.Run, Host: b.me.Host, Node: b.node, Writer: b.me.Rank, Written: time.Now()}
	for _, r := range b.ranks {
		if k, ok := kept[r]; ok {
			n.Beats = append(n.Beats, k)
		}
	}
	err = outdir.WriteNodeBeats(b.dir, n)
	var le *atomicfile.LinkError
	var ke *atomicfile.KindError
	if (errors.As(err, &le) || errors.As(err, &ke)) && b.refused == nil {
		b.refused = err
	}
	return err
}

// write beats now, unless the rank has ended (its last beat stays).
func (b *beater) write() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ended != "" {
		return nil
	}
	beat := b.now()
	b.last.Store(beat.Written.UnixNano())
	_ = b.local.Write(beat) // a missed beat only ages it
	return b.relay(beat, false)
}

// flush is the beat the end of the phases writes as an output: it fails
// with what this beat met, or with a refusal an earlier one met (a link
// planted at the node's file mid-run), so that no run ends complete past
// one.
func (b *beater) flush() error {
	if err := b.write(); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.refused
}

func (b *beater) loop() {
	t := time.NewTicker(outdir.BeatEvery)
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-t.C:
			_ = b.write() // a missed beat only ages it
		}
	}
}

// end writes the last beat, saying how the rank ended, once.
func (b *beater) end(how string) { b.endAs(how, false) }

// endAs is end; timedOut says the rank's watchdog ends it, in the step
// its State holds. The last beat goes into the node's file at once when
// the rank ended otherwise than by a clean exit (rank 0 may be waiting
// to read it), when it writes that file, or when it is the node's last;
// the last removes the node-local beats.
func (b *beater) endAs(how string, timedOut bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ended != "" {
		return
	}
	beat := b.now()
	beat.Ended, beat.TimedOut = how, timedOut
	b.ended = how
	close(b.stop)
	_ = b.local.Write(beat)
	kept := b.local.Read(b.me.Run, b.me.Host)
	kept[b.me.Rank] = beat
	last := true
	for _, p := range b.peers {
		if k, ok := kept[p.Rank]; (!ok || k.Ended == "") && outdir.ProcState(p.PID) != "gone" && outdir.ProcState(p.PID) != "Z" {
			last = false
		}
	}
	clean := how == fmt.Sprintf("exit %d", ExitOK)
	_ = b.relay(beat, !clean || last)
	if last {
		b.local.Remove()
	}
}

// frozenAfter is how late a beat may come before this process is said not
// to have run: far more than a scheduler's delay on a loaded node.
const frozenAfter = cadence.FrozenAfter

// endBeats ends this rank's heartbeat with how, when it beats.
func (s *session) endBeats(how string) {
	if b := s.beats.Load(); b != nil {
		b.end(how)
	}
}

// forgetBeats drops this rank's heartbeat writer from beatWriters, for a
// rank that ends before its process (a goroutine rank).
func (s *session) forgetBeats() {
	if b := s.beats.Load(); b != nil {
		beatWriters.CompareAndDelete(beatKey{b.dir, b.me.Rank}, b)
	}
}

// hang names every rank's part in a hang from their heartbeats (this
// rank's own fresh), or "" when none waits and none is silent or before
// the heartbeats start; done says whether every other rank's part is
// known: it has ended, saying how, or gone silent.
func (s *session) hang() (text string, done bool) {
	b := s.beats.Load()
	if b == nil {
		return "", true
	}
	h := b.look(s.comm.Size())
	done = true
	for r := range h.World {
		if beat, ok := h.Beats[r]; r != h.Self && (!ok || beat.Ended == "") && !h.Silent(r) {
			done = false
		}
	}
	return h.Text(), done
}

// withHang is a watchdog's message with every rank's part of the hang, as
// this rank's heartbeats tell it, before its "; aborting the job".
func (s *session) withHang(msg string) string {
	h, _ := s.hang()
	if h == "" {
		return msg
	}
	return strings.TrimSuffix(msg, "; aborting the job") + "; hang: " + h + "; aborting the job"
}

// look is every rank's heartbeat as this rank sees it now (its own
// fresh, its node's from node-local memory).
func (b *beater) look(world int) outdir.Hang {
	all, unread := outdir.ReadBeats(b.dir, b.me.Run)
	outdir.Merge(all, b.local.Read(b.me.Run, b.me.Host)) // this node's, fresher than its file
	b.mu.Lock()
	all[b.me.Rank] = b.now()
	b.mu.Unlock()
	now := time.Now() // after its own beat's time: no beat is said written in the future
	// The reader's own silence counts as its stop only with a SIGCONT to
	// prove it (see now).
	last := time.Unix(0, b.last.Load())
	frozen := now.Sub(last)
	if frozen > frozenAfter && !stopped.Since(last) {
		frozen = 0
	}
	return outdir.Hang{World: world, Beats: all, Now: now, Host: b.me.Host, State: outdir.ProcState,
		Frozen: frozen, Self: b.me.Rank, Unread: unread}
}

// watchStuck is rank 0's early naming of the other ranks (outdir's
// stuck.go; its guard names rank 0), once a beat from the heartbeats'
// start until run.json is final: one line on stderr and run.json's
// "stuck" as soon as a rank is known stuck; with end_on_stuck_rank, the
// job ends then, for a rank known stopped or gone.
func (s *session) watchStuck(log *runLog) {
	w := outdir.StuckWatch{Timeout: s.wd.Timeout()}
	t := time.NewTicker(outdir.BeatEvery)
	defer t.Stop()
	for {
		select {
		case <-log.stop:
			return
		case <-t.C:
		}
		b := s.beats.Load()
		if b == nil || s.end.Ending() {
			continue
		}
		named := w.Look(b.look(s.comm.Size()), nil)
		if len(named) == 0 {
			continue
		}
		// The line is said here (folded to the terminal's width by the
		// job's stderr, issue 57); the end is then quiet, its message
		// whole for the beat and the verdict.
		if s.endOnStuck && slices.ContainsFunc(named, outdir.Stuck.Known) {
			for i := range named {
				named[i].Ending = named[i].Known()
			}
			log.stuck(named)
			msg := outdir.StuckText(named) + "; ending the job now (end_on_stuck_rank)"
			fmt.Fprintf(s.opts.Stderr, "rsag: rank 0 (%s): %s\n", s.comm.Host(), msg)
			s.end.EndQuietly(ExitWatchdog, msg, outdir.StuckReason(named))
			continue
		}
		log.stuck(named)
		fmt.Fprintf(s.opts.Stderr, "rsag: rank 0 (%s): %s\n", s.comm.Host(), outdir.StuckText(named))
	}
}

// speaksForAll says whether this rank (not 0), whose watchdog fired,
// says so itself, rather than leave it to rank 0, which says every
// rank's part once. It waits up to zeroSpeaksWithin for rank 0 to end
// (its last heartbeat says how: it spoke); when rank 0 has not by then,
// or its heartbeat stopped without a word (rank 0 stopped or dead), the
// lowest rank that still beats or ended speaks, not every rank.
func (s *session) speaksForAll() bool {
	world := s.comm.Size()
	b := s.beats.Load()
	if b == nil {
		return true
	}
	for deadline := time.Now().Add(zeroSpeaksWithin); ; time.Sleep(100 * time.Millisecond) {
		h := b.look(world)
		z, ok := h.Beats[0]
		if !ok || z.Ended != "" {
			// Rank 0 ended, having spoken; or its beat is gone from this
			// node's store, which the last rank to end removes (rank 0
			// finds every other rank's beat ended while they linger
			// here): either way rank 0, or its guard, speaks.
			return false
		}
		if h.Silent(0) || time.Now().After(deadline) {
			for r := 1; r < b.me.Rank; r++ {
				if !h.Silent(r) {
					return false
				}
			}
			return true
		}
	}
}

// zeroSpeaksWithin bounds how long a rank whose watchdog fired waits for
// rank 0 to say it: rank 0's deadline passes within a check of the
// others' (it waits in the same collective, or one step beside it).
const zeroSpeaksWithin = cadence.ZeroSpeaksWithin

// settle is rank 0's last word on a run a signal ended: it puts every
// rank's part in run.json's reason at once, then waits a moment (at most
// settleFor) for the other ranks' last beats, which each writes as the
// same signal ends it, puts what it then knows there instead, and returns
// it to be said. The launcher may kill rank 0 at any moment of it.
func (s *session) settle(log *runLog) func() string {
	say := func(h string) {
		if h != "" {
			log.amend(func(reason string) string {
				base, _, _ := strings.Cut(reason, "; hang: ")
				return strings.TrimSuffix(base, ".") + "; hang: " + h
			})
		}
	}
	return func() string {
		h, done := s.hang()
		said := h
		say(h)
		for deadline := time.Now().Add(settleFor); !done && time.Now().Before(deadline); {
			time.Sleep(25 * time.Millisecond)
			h, done = s.hang()
		}
		if h != said {
			say(h)
		}
		return h
	}
}

// settleFor bounds settle's wait: less than a launcher's grace between
// its SIGTERM and its SIGKILL, more than the other ranks take to write
// their last beats when the same signal reaches them.
const settleFor = cadence.SettleFor
