package inmem

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"rsag/coll"
)

// Ranks is one job of goroutine ranks for package job: each rank's World
// (job.World: MPI's world's calls, met in memory), its backend, its own
// stdout and stderr, and how it ended. A rank ends as a process would:
// by returning its code, by Exit (which ends the goroutine that calls it,
// as os.Exit ends a process), or by its World's Abort, which ends it and
// every other rank's wait at once, as MPI_Abort does; the ranks still
// running are then killed, as mpirun kills them: what they print later is
// dropped, and their codes are the abort's.
type Ranks struct {
	j      *job
	world  *group
	worlds []*World

	mu      sync.Mutex
	abortBy int // the rank that aborted first; -1 for none
}

// Ended is how a rank ended.
type Ended struct {
	Code           int
	Stdout, Stderr string
	// How: "returned", "exited" (Exit), "aborted" (its World's Abort),
	// "killed" (another rank aborted first), "panicked" (its stack on its
	// Stderr) or "stuck" (it had not ended within Run's limit).
	How string
}

// NewRanks makes a job of len(hosts) ranks, rank r on host hosts[r] (its
// local rank and size are those of the ranks on that host), whose
// backends have faults. Each wait in a collective is bounded by timeout,
// as in Launch.
func NewRanks(hosts []string, faults Faults, timeout time.Duration) *Ranks {
	n := len(hosts)
	j := &job{timeout: timeout, faults: faults, broken: make(chan struct{}), left: make([]string, n)}
	rs := &Ranks{j: j, world: j.newGroup("world", seq(n)), abortBy: -1}
	for r, h := range hosts {
		w := &World{Comm: Comm{job: j, group: rs.world, rank: r, flips: &flips{rank: r, comm: true}}, ranks: rs, host: h,
			stdout: &output{}, stderr: &output{}, done: make(chan struct{}), finished: make(chan struct{})}
		for q, g := range hosts {
			if g == h {
				if q < r {
					w.localRank++
				}
				w.localSize++
			}
		}
		rs.worlds = append(rs.worlds, w)
	}
	return rs
}

// World is rank r's world.
func (rs *Ranks) World(r int) *World { return rs.worlds[r] }

// Run runs main on every rank, each on a goroutine of its own, and returns
// how each ended, once every one has, or once limit has passed (those
// still running then are "stuck", and left behind).
func (rs *Ranks) Run(limit time.Duration, main func(w *World) int) []Ended {
	for _, w := range rs.worlds {
		go func() {
			defer close(w.finished)
			defer func() {
				if p := recover(); p != nil {
					w.stderr.Write(fmt.Appendf(nil, "inmem: rank %d panicked: %v\n%s", w.rank, p, debug.Stack()))
					w.end("panicked", 2)
				}
			}()
			w.end("returned", main(w))
		}()
	}
	out := make([]Ended, len(rs.worlds))
	deadline := time.After(limit)
	for r, w := range rs.worlds {
		select {
		case <-w.done:
		case <-deadline:
		}
		out[r] = w.ended()
	}
	// A killed rank's goroutine runs on to its own end (its waits fail at
	// once): it is waited for, so that nothing of it writes after Run.
	// (A rank that exited may have left its main goroutine waiting for
	// ever, as a process's would be as it exits.)
	for _, w := range rs.worlds {
		if w.ended().How == "killed" {
			select {
			case <-w.finished:
			case <-deadline:
			}
		}
	}
	return out
}

// World is one rank's world, for job.Options.World.
type World struct {
	Comm
	ranks                *Ranks
	host                 string
	localRank, localSize int
	stdout, stderr       *output

	mu       sync.Mutex
	env      map[string]string // Setenv's, over the process's environment
	how      string            // "" while the rank runs
	code     int
	done     chan struct{} // closed once the rank has ended
	finished chan struct{} // closed once main's goroutine has
}

// Setenv gives the rank a variable of its own, before Run: what mpirun's
// -x gives the ranks of one part of an MPMD line. The rest of its
// environment is the process's, as a launched rank inherits the launcher's.
func (w *World) Setenv(key, value string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.env == nil {
		w.env = map[string]string{}
	}
	w.env[key] = value
}

// Getenv is the rank's variable key (job.EnvWorld): its own (Setenv), else
// the process's.
func (w *World) Getenv(key string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if v, ok := w.env[key]; ok {
		return v
	}
	return os.Getenv(key)
}

func (w *World) Host() string   { return w.host }
func (w *World) LocalRank() int { return w.localRank }
func (w *World) LocalSize() int { return w.localSize }

// Stdout and Stderr are the rank's own.
func (w *World) Stdout() *output { return w.stdout }
func (w *World) Stderr() *output { return w.stderr }

// Gather gives root every rank's data, in rank order; the others get nil.
func (w *World) Gather(data []byte, root int) ([][]byte, error) {
	all, err := w.gather(fmt.Sprintf("gather to rank %d", root), data)
	if err != nil || w.rank != root {
		return nil, err
	}
	return all, nil
}

// BcastBlob gives every rank root's data (the others' is ignored).
func (w *World) BcastBlob(data []byte, root int) ([]byte, error) {
	if w.rank != root {
		data = nil
	}
	all, err := w.gather(fmt.Sprintf("broadcast from rank %d", root), data)
	if err != nil {
		return nil, err
	}
	return all[root], nil
}

func (w *World) gather(call string, data []byte) ([][]byte, error) {
	m, err := w.job.meet(w.group, w.rank, call, bytes.Clone(data))
	if err != nil {
		return nil, err
	}
	out := make([][]byte, len(m.payloads))
	for r, p := range m.payloads {
		out[r] = bytes.Clone(p.([]byte))
	}
	return out, nil
}

// Finalize ends nothing: the rank's end (Run) is what the others see.
func (w *World) Finalize() error { return nil }

// Abort ends the job as MPI_Abort does: every other rank's wait fails at
// once, the ranks still running are killed (their later output dropped),
// and this rank ends with code. It does not return.
func (w *World) Abort(code int) error {
	rs := w.ranks
	rs.mu.Lock()
	first := rs.abortBy < 0
	if first {
		rs.abortBy = w.rank
	}
	rs.mu.Unlock()
	if first {
		// What Open MPI says of it, on the rank's stderr: a test that
		// asserts no rank aborted alone reads the same line either way.
		fmt.Fprintf(w.stderr, "MPI_ABORT was invoked on rank %d in communicator MPI_COMM_WORLD with errorcode %d\n", w.rank, code)
		for _, o := range rs.worlds {
			if o != w {
				o.end("killed", code)
			}
		}
		rs.j.mu.Lock()
		rs.j.breakLocked(fmt.Errorf("inmem: rank %d called MPI_Abort with code %d", w.rank, code))
		rs.j.mu.Unlock()
	}
	w.end("aborted", code)
	runtime.Goexit()
	return errors.New("unreachable")
}

// Exit ends the rank with code, as os.Exit ends a process: the goroutine
// that calls it ends (the watchdog's or the signal handler's, or main's),
// and the other ranks' waits for this one fail. Its other goroutines run
// on, silent: what they print is dropped.
func (w *World) Exit(code int) {
	w.end("exited", code)
	runtime.Goexit()
}

// end records how the rank ended, once: its output closes, and the job
// breaks where another rank waits for it.
func (w *World) end(how string, code int) {
	w.mu.Lock()
	if w.how != "" {
		w.mu.Unlock()
		return
	}
	w.how, w.code = how, code
	w.stdout.close()
	w.stderr.close()
	close(w.done)
	w.mu.Unlock()
	if how != "killed" {
		w.job.leave(w.rank, fmt.Errorf("%s with code %d", how, code))
	}
}

func (w *World) ended() Ended {
	w.mu.Lock()
	defer w.mu.Unlock()
	e := Ended{Code: w.code, How: w.how, Stdout: w.stdout.String(), Stderr: w.stderr.String()}
	if e.How == "" {
		e.How, e.Code = "stuck", -1
	}
	return e
}

// OpenBackend is the rank's in-memory backend, whatever the config names
// (job.BackendWorld): its Info says "inmem" and the rank's host. Its
// ranks share this process's memory, and it says how much is free as a
// host-memory backend does, so that a run too large for the host is
// refused before it allocates, not ended with the test's process.
func (w *World) OpenBackend(name string) (coll.Backend, error) {
	be := &Backend{job: w.job, group: w.group, rank: w.rank, Heap: newHeap(w.rank), flips: &flips{rank: w.rank}}
	be.info = coll.Info{Backend: "inmem", Host: w.host, Device: "host memory"}
	wb := &worldBackend{Backend: be, ranks: len(w.group.members)}
	if r := w.job.faults.Refusals; r != nil && r.NoGraphs {
		return &graphless{worldBackend: wb}, nil
	}
	return wb, nil
}

// graphless is a World's backend without CUDA graphs' stand-in
// (Refusals.NoGraphs): its field CaptureGraph hides the method of that
// name, so that coll.Find[coll.GraphTimer] finds none, while every other
// ability stays.
type graphless struct {
	*worldBackend
	CaptureGraph struct{}
}

// worldBackend is a World's backend: the in-memory one, with FreeMemory.
type worldBackend struct {
	*Backend
	ranks int // every rank of the job shares this process
}

var _ coll.FreeMemoryReporter = (*worldBackend)(nil)

// FreeMemory is the host's MemAvailable shared by every rank of the job.
func (be *worldBackend) FreeMemory() (coll.MemoryReading, error) {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return coll.MemoryReading{}, fmt.Errorf("inmem: reading the host's memory: %w", err)
	}
	kb := map[string]int64{}
	for _, line := range strings.Split(string(data), "\n") {
		key, rest, _ := strings.Cut(line, ":")
		if v, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64); err == nil {
			kb[key] = v
		}
	}
	if kb["MemAvailable"] == 0 || kb["MemTotal"] == 0 {
		return coll.MemoryReading{}, errors.New("inmem: /proc/meminfo has no MemAvailable or MemTotal")
	}
	return coll.MemoryReading{Free: kb["MemAvailable"] << 10 / int64(be.ranks), Total: kb["MemTotal"] << 10,
		MemoryKind: coll.MemoryKind{Memory: "host memory", Fix: "run fewer ranks",
			Where: fmt.Sprintf("%s (MemAvailable in /proc/meminfo, shared by the %d ranks of this process)", be.info.Host, be.ranks)}}, nil
}

// output is a rank's stdout or stderr: safe for its goroutines, and deaf
// once the rank has ended.
type output struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	closed bool
}

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.closed {
		o.buf.Write(p)
	}
	return len(p), nil
}

func (o *output) close() { o.mu.Lock(); o.closed = true; o.mu.Unlock() }

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}
