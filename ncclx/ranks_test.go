package ncclx

import (
	"bufio"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"rsag/coll"
	"rsag/phases"
)

// Several ranks in one process: each rank is a goroutine locked to its OS
// thread with its own Backend and GPU (the fake CUDA keeps the current
// device per thread), and the fake NCCL runs their collectives together.
// The ranks meet through fakeWorld, which stands in for MPI: the unique
// id's broadcast (Bootstrap) and the phases' barrier and agreement (Comm).

// fakeWorld is n ranks that meet in exchange.
type fakeWorld struct {
	n       int
	mu      sync.Mutex
	cond    *sync.Cond
	gen     int
	arrived int
	vals    []any
	out     []any
}

func newFakeWorld(n int) *fakeWorld {
	w := &fakeWorld{n: n, vals: make([]any, n)}
	w.cond = sync.NewCond(&w.mu)
	return w
}

// exchange waits for every rank and returns every rank's v, by rank.
func (w *fakeWorld) exchange(rank int, v any) []any {
	w.mu.Lock()
	defer w.mu.Unlock()
	gen := w.gen
	w.vals[rank] = v
	if w.arrived++; w.arrived == w.n {
		w.out = append([]any(nil), w.vals...)
		w.arrived = 0
		w.gen++
		w.cond.Broadcast()
		return w.out
	}
	for gen == w.gen {
		w.cond.Wait()
	}
	return w.out
}

// fakeRank is one rank's Bootstrap and coll.Comm.
type fakeRank struct {
	w    *fakeWorld
	rank int
	opt  Options // what New gets
}

func (r fakeRank) Rank() int      { return r.rank }
func (r fakeRank) Size() int      { return r.w.n }
func (r fakeRank) LocalRank() int { return r.rank }
func (r fakeRank) LocalSize() int { return r.w.n }
func (r fakeRank) Host() string   { return "testhost" }
func (r fakeRank) Barrier() error { r.w.exchange(r.rank, nil); return nil }

func (r fakeRank) BcastUint64s(words []uint64, root int) error {
	var mine []uint64
	if r.rank == root {
		mine = append([]uint64(nil), words...)
	}
	copy(words, r.w.exchange(r.rank, mine)[root].([]uint64))
	return nil
}

func (r fakeRank) AllTrue(ok bool) (bool, []int, error) {
	var bad []int
	for i, v := range r.w.exchange(r.rank, ok) {
		if !v.(bool) {
			bad = append(bad, i)
		}
	}
	return len(bad) == 0, bad, nil
}

func (r fakeRank) MaxFloat64s(v []float64) error {
	all := r.w.exchange(r.rank, slices.Clone(v))
	for i := range v {
		v[i] = math.Inf(-1)
		for _, x := range all {
			v[i] = max(v[i], x.([]float64)[i])
		}
	}
	return nil
}

// rankBody is what one rank runs on its Backend; New and Close are around it.
type rankBody func(r fakeRank, b *Backend) error

// runRanks runs body on n ranks over the fake libraries (built with
// defs), each rank on a GPU of its own, and returns the call log. A rank's
// error fails the test; ranks that do not finish within 30 s fail it too.
func runRanks(t *testing.T, n int, body rankBody, defs ...string) *callLog {
	t.Helper()
	errs, log := startRanks(t, world{ranks: n, gpus: n}, body, defs...)
	for _, err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	return log
}

// world is how startRanks starts the ranks: how many, the GPUs of their
// one host, what each rank sees of them (visible[rank], as
// CUDA_VISIBLE_DEVICES lists them; none or "": all of them), and the
// Options every rank's New gets.
type world struct {
	ranks, gpus int
	visible     []string
	opt         Options
	// faults: load NCCL through testdata/ncclfault.c, linked to the fake,
	// which strikes as its NCCL_FAULT* variables say.
	faults bool
}

// startRanks runs body on the ranks of w over the fake libraries and
// returns every rank's error, by rank, and the call log. Ranks that do not
// finish within 30 s fail the test.
func startRanks(t *testing.T, w world, body rankBody, defs ...string) ([]error, *callLog) {
	t.Helper()
	cuda := useFakeCUDA(t)
	nccl := useFakeNCCL(t, defs...)
	if w.faults {
		t.Setenv(NCCLLibraryEnv, buildFake(t, "ncclfault.c", "libncclfault.so", "-ldl", "-Wl,--no-as-needed", nccl))
		t.Setenv("NCCL_FAULT_REAL", nccl)
		t.Setenv("NCCL_FAULT_CUDA", cuda)
	}
	t.Setenv("RSAG_FAKE_CUDA_DEVICES", strconv.Itoa(w.gpus))
	log := &callLog{path: filepath.Join(t.TempDir(), "calls.log")}
	t.Setenv("RSAG_FAKE_LOG", log.path)
	fw := newFakeWorld(w.ranks)
	type result struct {
		rank int
		err  error
	}
	results := make(chan result, w.ranks)
	tids := make(chan [2]int, w.ranks)
	start := make(chan struct{})
	for r := range w.ranks {
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			tids <- [2]int{r, syscall.Gettid()}
			<-start
			results <- result{r, runRank(fakeRank{w: fw, rank: r, opt: w.opt}, body)}
		}()
	}
	// Each rank's view of the GPUs is set for its thread before any rank
	// starts: the fake reads the environment while ranks run.
	for range w.ranks {
		rt := <-tids
		if rt[0] < len(w.visible) && w.visible[rt[0]] != "" {
			t.Setenv(fmt.Sprintf("RSAG_FAKE_CUDA_VISIBLE_%d", rt[1]), w.visible[rt[0]])
		}
	}
	close(start)
	errs := make([]error, w.ranks)
	deadline := time.After(30 * time.Second)
	for range w.ranks {
		select {
		case res := <-results:
			errs[res.rank] = res.err
		case <-deadline:
			t.Fatal("the ranks did not finish within 30 s")
		}
	}
	log.read(t)
	return errs, log
}

func runRank(r fakeRank, body rankBody) (err error) {
	if err := mark(r.rank, "new"); err != nil {
		return err
	}
	b, err := New(r, r.opt)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := b.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	return body(r, b)
}

// call is one line of the fakes' call log: the call and its key=value pairs.
type call struct {
	name string
	kv   map[string]string
}

func (c call) str(k string) string { return c.kv[k] }

// num reads a number (decimal, or 0x hex as pointers are written).
func (c call) num(k string) int64 {
	v, err := strconv.ParseUint(c.kv[k], 0, 64)
	if err != nil {
		return -1
	}
	return int64(v)
}

func (c call) String() string {
	var b strings.Builder
	b.WriteString(c.name)
	for _, k := range slices.Sorted(maps.Keys(c.kv)) {
		fmt.Fprintf(&b, " %s=%s", k, c.kv[k])
	}
	return b.String()
}

type callLog struct {
	path  string
	calls []call
}

func (l *callLog) read(t *testing.T) {
	t.Helper()
	f, err := os.Open(l.path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		c := call{name: fields[0], kv: map[string]string{}}
		for _, f := range fields[1:] {
			k, v, _ := strings.Cut(f, "=")
			c.kv[k] = v
		}
		l.calls = append(l.calls, c)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
}

// mark writes a line of the test's own into the log: which rank this
// thread is and what it does from now on, so that the checks can tell the
// ranks' calls apart (the fakes write the thread of each) and the parts of
// a run.
func mark(rank int, what string) error {
	f, err := os.OpenFile(os.Getenv("RSAG_FAKE_LOG"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(f, "mark rank=%d what=%s tid=%d\n", rank, what, syscall.Gettid())
	return errors.Join(err, f.Close())
}

// filter returns the calls named.
func filter(calls []call, names ...string) []call {
	var out []call
	for _, c := range calls {
		if slices.Contains(names, c.name) {
			out = append(out, c)
		}
	}
	return out
}

// byRank splits the log by world rank, and each rank's calls by the marks
// it wrote: mark -> rank -> calls, in order.
func (l *callLog) byRank() map[string]map[int][]call {
	rankOf := map[string]int{}  // thread -> rank
	current := map[int]string{} // rank -> its last mark
	out := map[string]map[int][]call{}
	for _, c := range l.calls {
		if c.name == "mark" {
			r, _ := strconv.Atoi(c.str("rank"))
			rankOf[c.str("tid")] = r
			current[r] = c.str("what")
			continue
		}
		r, ok := rankOf[c.str("tid")]
		if !ok {
			continue // a thread of no rank
		}
		m := current[r]
		if out[m] == nil {
			out[m] = map[int][]call{}
		}
		out[m][r] = append(out[m][r], c)
	}
	return out
}

// timingRun is a small sweep: every method, both placements, two element
// types, two sizes (of 2 ranks' worth of elements).
func timingRun(name string) coll.Sweep {
	return coll.Sweep{
		Name: name, SizesBytes: []int64{4 << 10, 64 << 10}, DTypes: []coll.DType{coll.Int64, coll.Float32},
		Ops: []coll.Op{coll.Sum}, Placements: coll.Placements, Methods: coll.Methods,
		Batch: 2, Warmups: 1, Cycles: 2,
	}
}

// The fake NCCL's collectives across ranks are real ones: the phases' own
// timing, which checks every element of every output against the formula,
// passes on 4 ranks for every reduction, in place and out of place, timed
// per-op and replayed from graphs (which run the collectives at launch).
func TestTimingAcrossRanks(t *testing.T) {
	ints := coll.Sweep{
		Name: "ints", SizesBytes: []int64{4 << 10}, DTypes: []coll.DType{coll.Int64, coll.Int32},
		Ops: []coll.Op{coll.Sum, coll.Prod, coll.Max, coll.Min}, Placements: coll.Placements,
		Methods: []coll.Method{coll.PerOp, coll.GraphReplay}, Batch: 2, Warmups: 1, Cycles: 2,
	}
	floats := ints
	floats.Name, floats.DTypes, floats.Ops = "floats", []coll.DType{coll.Float32, coll.Float64}, coll.AllOps
	var samples [4]int
	runRanks(t, 4, func(r fakeRank, b *Backend) error {
		got, err := phases.RunTiming(b, r, []coll.Sweep{ints, floats}, nil, nil)
		samples[r.rank] = len(got)
		return err
	})
	want := 2 * 2 * (4 + 5) * 2 * 2 * 2 // dtypes, placements, ops, methods, cycles, modes
	for r, n := range samples {
		if n != want {
			t.Errorf("rank %d: %d samples, want %d", r, n, want)
		}
	}
}

// The hierarchical decomposition on the fake NCCL, 4 ranks in 2 groups of
// 2: every mode of it runs on split communicators, per-op, batched and
// captured into a graph, in both placements, its outputs checked; its
// contracts hold; and hierarchical-lifetime's deltas are exact.
func TestHierarchyAcrossRanks(t *testing.T) {
	groups, err := phases.NewGroups([]string{"a", "a", "a", "a"}, 2)
	if err != nil {
		t.Fatal(err)
	}
	run := coll.Sweep{
		Name: "hier", SizesBytes: []int64{4 << 10}, DTypes: []coll.DType{coll.Float32},
		Ops: []coll.Op{coll.Sum}, Placements: coll.Placements, Methods: coll.Methods, Batch: 2, Warmups: 1,
		Cycles: 2, Modes: []coll.Mode{coll.Direct, coll.Hierarchical, "hierarchical-reduce-scatter",
			"hierarchical-all-reduce", "hierarchical-all-gather"},
	}
	var samples [4]int
	runRanks(t, 4, func(r fakeRank, b *Backend) error {
		if err := phases.CheckSupport(b, []coll.Sweep{run}, groups); err != nil {
			return err
		}
		got, err := phases.RunTiming(b, r, []coll.Sweep{run}, groups, nil)
		samples[r.rank] = len(got)
		if err != nil {
			return err
		}
		contracts, err := phases.RunHierarchyContracts(b, groups, []string{"a", "a", "a", "a"})
		if err != nil {
			return err
		}
		for _, c := range contracts {
			if !c.Correct {
				return fmt.Errorf("rank %d: %s does not hold: %s", r.rank, c.Name, c.Detail)
			}
		}
		mem, err := phases.RunMemory(b, r, phases.MemoryRun{PayloadBytes: 4 << 10, Modes: []string{"hierarchical-lifetime"}, Groups: groups}, nil)
		if err != nil {
			return err
		}
		if m := mem[0]; !m.Correct || m.SteadyDeltaBytes != 4<<10 || m.PeakDeltaBytes != 4<<10+2<<10 {
			return fmt.Errorf("rank %d: hierarchical-lifetime %+v", r.rank, m)
		}
		return nil
	})
	want := 2 * len(coll.Methods) * 2 * 5 // placements, methods, cycles, modes
	for r, n := range samples {
		if n != want {
			t.Errorf("rank %d: %d samples, want %d", r, n, want)
		}
	}
}
