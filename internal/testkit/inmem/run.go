// Package inmem is a coll.Backend for W ranks in one process: each rank is
// a goroutine with its own host buffers, and the collectives meet in memory.
// It exists so that the experiment itself (package phases) is tested without
// MPI, cgo or a GPU, with the semantics of the MPI backend (exact memory
// accounting, NCCL's in-place layouts, views, errors for freed and foreign
// buffers), and with Faults: a backend wrong in one known way, for negative
// controls.
//
// Every wait is bounded: a rank that never reaches a collective the others
// wait in, or reaches a different one, ends the run with an error on every
// rank instead of hanging the test.
package inmem

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"rsag/coll"
)

// Faults make the backend wrong in one way each, for negative controls. The
// zero value is a correct backend.
type Faults struct {
	// RotatedGather makes AllGather put rank r's shard where rank r+1's
	// belongs (mod W): the rank-major order rotated by one rank.
	RotatedGather bool
	// SumAsMax makes every reduction asked for sum (AllReduce and
	// ReduceScatter) compute max instead.
	SumAsMax bool
	// ReversedReduceScatter makes ReduceScatter reduce from rank W-1 down
	// to rank 0, while AllReduce keeps rank order: floating-point sums on 3
	// or more ranks then differ in their last bits between the two paths,
	// each within rounding error. (On 2 ranks a+b = b+a: no difference.)
	ReversedReduceScatter bool
	// DropLastRank makes every reduction (AllReduce and ReduceScatter)
	// leave out rank W-1's contribution.
	DropLastRank bool
	// Flip flips one bit of one element of one collective's output on one
	// rank, at the calls it names: what e2e/testdata/corrupt.c does to MPI,
	// in memory.
	Flip *Flip
	// Slow delays one rank's calls before they meet the others': what
	// e2e/testdata/slow.c does to MPI, in memory.
	Slow *Slow
	// Refusals, when set, are what the backend refuses in place of
	// nothing: another backend's (e2e gives MPI's), so that a run that
	// backend refuses is refused in memory alike, with its words.
	Refusals *Refusals
}

// Slow sleeps before each call of rank Rank for as long as Delay says for
// the collective (coll.AllReduce.Name, ...) and the bytes the call moves as
// MPI counts them (slow.c's SLOW_SPEC): AllReduce its buffer, ReduceScatter
// and AllGather one rank's shard. Zero: no sleep.
type Slow struct {
	Rank  int
	Delay func(collective string, bytes int) time.Duration
}

// sleep is Slow's delay of a call of c moving bytes on world rank rank.
func (s *Slow) sleep(rank int, c string, bytes int) {
	if s != nil && s.Rank == rank {
		if d := s.Delay(c, bytes); d > 0 {
			time.Sleep(d)
		}
	}
}

// Refusals is a backend's Supports, and whether it lacks CUDA graphs, for
// Faults.Refusals.
type Refusals struct {
	Supports func(coll.DType, coll.Op) error
	// NoGraphs: a World's backend has no CUDA graphs' stand-in
	// (coll.GraphTimer), as MPI's has not, and the graph method is refused
	// as there.
	NoGraphs bool
}

// Flip is an intermittent fault on one world rank: at the calls of one
// collective that Calls picks (counted from 1 on that rank, over every
// communicator), the lowest bit of element Element of its output flips.
// With Send, an AllGather call corrupts instead what the rank sends, so
// that every rank receives that chunk wrong: a bad transfer from its owner;
// without it, the element is counted from the start of the output's chunk
// Chunk (what rank Chunk sent).
type Flip struct {
	Collective string // coll.AllReduce.Name, ...
	// Bytes, when not 0, counts only the calls that move that many bytes,
	// as Slow counts them (corrupt.c's CORRUPT_BYTES).
	Bytes   int
	Rank    int
	Element int
	Chunk   int
	Send    bool
	// Comm: the fault strikes the rank's host-side communicator's
	// reductions instead of its backend's collectives (coll.Comm's
	// MaxFloat64s, an AllReduce of 8 bytes an element: on MPI's world an
	// MPI_Allreduce, as corrupt.c meets it), counted on their own.
	Comm  bool
	Calls func(n int) bool
}

// hits counts a call of c on the rank that owns h and says whether the
// fault strikes it.
func (f *Flip) hits(h *flips, c string, bytes int) bool {
	if f == nil || h == nil || f.Comm != h.comm || f.Collective != c || f.Rank != h.rank || (f.Bytes != 0 && f.Bytes != bytes) {
		return false
	}
	h.calls++
	return f.Calls(h.calls)
}

// flip flips the lowest bit of element e (of size bytes) of mem, when it
// has one.
func flip(mem []byte, e, size int) {
	if (e+1)*size <= len(mem) {
		mem[e*size] ^= 1
	}
}

// DefaultTimeout is how long Launch lets a rank wait in one collective for the
// others.
const DefaultTimeout = 30 * time.Second

// Launch runs body on world goroutine ranks, each with its own Backend and a
// Comm over the same ranks, and returns each rank's error (nil slots for
// ranks that succeeded). A rank's Backend is closed after body returns
// unless body closed it, so a buffer body leaked is an error of that rank.
func Launch(world int, faults Faults, body func(be coll.Backend, comm coll.Comm) error) []error {
	return LaunchTimeout(world, faults, DefaultTimeout, body)
}

// LaunchTimeout is Launch with a bound other than DefaultTimeout on every
// wait: on each collective, and, once any rank has returned, on how long it
// waits for the others. A rank still running then is left behind and
// reported.
func LaunchTimeout(world int, faults Faults, timeout time.Duration, body func(be coll.Backend, comm coll.Comm) error) []error {
	if world < 1 {
		return []error{fmt.Errorf("inmem: Launch on %d ranks: a world has at least one rank", world)}
	}
	j := &job{timeout: timeout, faults: faults, broken: make(chan struct{}), left: make([]string, world)}
	w := j.newGroup("world", seq(world))
	type result struct {
		rank int
		err  error
	}
	done := make(chan result, world)
	for r := range world {
		go func() {
			be := &Backend{job: j, group: w, rank: r, Heap: newHeap(r), flips: &flips{rank: r}}
			err := call(body, be, &Comm{job: j, group: w, rank: r, flips: &flips{rank: r, comm: true}})
			if !be.closed {
				err = errors.Join(err, be.Close())
			}
			j.leave(r, err)
			done <- result{r, err}
		}()
	}
	errs := make([]error, world)
	returned := make([]bool, world)
	var grace <-chan time.Time
	for n := 0; n < world; n++ {
		select {
		case res := <-done:
			errs[res.rank], returned[res.rank] = res.err, true
			if grace == nil {
				grace = time.After(timeout)
			}
		case <-grace:
			for r, ok := range returned {
				if !ok {
					errs[r] = fmt.Errorf("inmem: rank %d did not return within %v of the first rank that did (stuck outside any collective)", r, timeout)
				}
			}
			return errs
		}
	}
	return errs
}

// call runs body, turning a panic into the rank's error.
func call(body func(coll.Backend, coll.Comm) error, be *Backend, c *Comm) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("inmem: rank %d panicked: %v", be.rank, p)
		}
	}()
	return body(be, c)
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// job is one Run: its ranks, its communicators and whether it broke. One
// mutex guards everything; the payloads of a completed meeting are
// immutable, so ranks read them without it.
type job struct {
	timeout time.Duration
	faults  Faults

	mu     sync.Mutex
	err    error         // why the job broke; nil while it works
	broken chan struct{} // closed when it breaks
	left   []string      // by world rank: how body returned ("" while it runs)
	groups []*group
}

// group is one communicator: the world, or a group from Split.
type group struct {
	name    string
	members []int // world ranks, by group rank
	calls   int   // meetings completed
	cur     *meeting
}

// meeting is one collective call on a group: every member brings its
// payload, and once all have, each reads all of them.
type meeting struct {
	call     string // the first arrival's call, which every member must match
	firstBy  int
	arrived  []bool
	n        int
	payloads []any
	done     chan struct{}
	splits   map[int]*group // Split's groups by color, made by the first member to ask
}

func (j *job) newGroup(name string, members []int) *group {
	g := &group{name: name, members: members}
	g.cur = newMeeting(len(members))
	j.groups = append(j.groups, g)
	return g
}

func newMeeting(n int) *meeting {
	return &meeting{arrived: make([]bool, n), payloads: make([]any, n), done: make(chan struct{})}
}

// breakLocked ends the job with err; the first reason wins.
func (j *job) breakLocked(err error) error {
	if j.err == nil {
		j.err = err
		close(j.broken)
	}
	return j.err
}

// meet brings payload to the group's current meeting as group rank rank,
// waits until every member has brought theirs, and returns the meeting.
// call names the collective and its shapes: a member arriving with another
// call breaks the job, as does a member that has returned, or a wait
// longer than the job's timeout.
func (j *job) meet(g *group, rank int, call string, payload any) (*meeting, error) {
	j.mu.Lock()
	if j.err != nil {
		defer j.mu.Unlock()
		return nil, j.err
	}
	m := g.cur
	where := fmt.Sprintf("call #%d on the %s communicator", g.calls+1, g.name)
	if m.n == 0 {
		m.call, m.firstBy = call, rank
	} else if m.call != call {
		defer j.mu.Unlock()
		return nil, j.breakLocked(fmt.Errorf("inmem: rank %d called %s but rank %d called %s (%s): every rank must call the same collectives in the same order with the same shapes",
			g.members[rank], call, g.members[m.firstBy], m.call, where))
	}
	for _, wr := range g.members {
		if how := j.left[wr]; how != "" {
			defer j.mu.Unlock()
			return nil, j.breakLocked(fmt.Errorf("inmem: rank %d returned %s and will never reach %s (%s), which rank %d waits in",
				wr, how, call, where, g.members[rank]))
		}
	}
	m.arrived[rank], m.payloads[rank] = true, payload
	m.n++
	if m.n == len(g.members) {
		close(m.done)
		g.calls++
		g.cur = newMeeting(len(g.members))
		j.mu.Unlock()
		return m, nil
	}
	j.mu.Unlock()

	timer := time.NewTimer(j.timeout)
	defer timer.Stop()
	select {
	case <-m.done:
		return m, nil
	case <-j.broken:
		select {
		case <-m.done:
			return m, nil
		default:
		}
		j.mu.Lock()
		defer j.mu.Unlock()
		return nil, j.err
	case <-timer.C:
		j.mu.Lock()
		defer j.mu.Unlock()
		select {
		case <-m.done:
			return m, nil
		default:
		}
		var missing []int
		for gr, ok := range m.arrived {
			if !ok {
				missing = append(missing, g.members[gr])
			}
		}
		return nil, j.breakLocked(fmt.Errorf("inmem: rank %d waited %v in %s (%s) for rank(s) %v, which never came: a deadlock",
			g.members[rank], j.timeout, call, where, missing))
	}
}

// leave marks world rank r as returned. A meeting that some ranks wait in
// and r has not reached can never complete, so the job breaks now rather
// than at the timeout.
func (j *job) leave(r int, bodyErr error) {
	how := "without an error"
	if bodyErr != nil {
		how = fmt.Sprintf("with the error %q", bodyErr)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.left[r] = how
	if j.err != nil {
		return
	}
	for _, g := range j.groups {
		gr := slices.Index(g.members, r)
		if gr < 0 || g.cur.n == 0 || g.cur.arrived[gr] {
			continue
		}
		j.breakLocked(fmt.Errorf("inmem: rank %d returned %s and will never reach %s (call #%d on the %s communicator), which rank %d waits in",
			r, how, g.cur.call, g.calls+1, g.name, g.members[g.cur.firstBy]))
		return
	}
}

// Comm is a rank's host-side communication (coll.Comm) over its group.
type Comm struct {
	group *group
	rank  int
	job   *job
	flips *flips // Faults.Flip with Comm: this rank's reductions; nil: none
}

var _ coll.Comm = (*Comm)(nil)

func (c *Comm) Rank() int { return c.rank }
func (c *Comm) Size() int { return len(c.group.members) }

func (c *Comm) Barrier() error {
	_, err := c.job.meet(c.group, c.rank, "barrier", nil)
	return err
}

// AllTrue tells every rank whether ok is true on all of them, and where not.
func (c *Comm) AllTrue(ok bool) (bool, []int, error) {
	m, err := c.job.meet(c.group, c.rank, "agreement", ok)
	if err != nil {
		return false, nil, err
	}
	var bad []int
	for r, p := range m.payloads {
		if !p.(bool) {
			bad = append(bad, r)
		}
	}
	return len(bad) == 0, bad, nil
}

// MaxFloat64s gives every rank the largest v[i] brought, for each i.
func (c *Comm) MaxFloat64s(v []float64) error {
	m, err := c.job.meet(c.group, c.rank, "maximum", slices.Clone(v))
	if err != nil {
		return err
	}
	for i := range v {
		v[i] = math.Inf(-1)
		for _, p := range m.payloads {
			v[i] = max(v[i], p.([]float64)[i])
		}
	}
	if f := c.job.faults.Flip; f.hits(c.flips, coll.AllReduce.Name, 8*len(v)) && f.Element < len(v) {
		v[f.Element] = math.Float64frombits(math.Float64bits(v[f.Element]) ^ 1)
	}
	return nil
}

var _ coll.Gatherer = (*Comm)(nil)

// AllGather gives every rank what each rank brought, in rank order.
func (c *Comm) AllGather(data []byte) ([][]byte, error) {
	m, err := c.job.meet(c.group, c.rank, "gather", append([]byte(nil), data...))
	if err != nil {
		return nil, err
	}
	out := make([][]byte, len(m.payloads))
	for r, p := range m.payloads {
		out[r] = append([]byte(nil), p.([]byte)...)
	}
	return out, nil
}
