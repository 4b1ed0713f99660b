package outdir

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// world is an in-memory MPI world of goroutine ranks: every collective is
// one exchange in which each rank gives its bytes and gets everyone's.
type world struct {
	n       int
	mu      sync.Mutex
	cond    *sync.Cond
	gen     int
	arrived int
	slots   [][]byte
	result  [][]byte
}

func newWorld(n int) *world {
	w := &world{n: n, slots: make([][]byte, n)}
	w.cond = sync.NewCond(&w.mu)
	return w
}

func (w *world) exchange(rank int, data []byte) [][]byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	gen := w.gen
	w.slots[rank] = append([]byte{}, data...)
	w.arrived++
	if w.arrived == w.n {
		w.result, w.slots, w.arrived = w.slots, make([][]byte, w.n), 0
		w.gen++
		w.cond.Broadcast()
	} else {
		for gen == w.gen {
			w.cond.Wait()
		}
	}
	return w.result
}

type rank struct {
	w    *world
	rank int
	host string
}

func (r rank) Rank() int    { return r.rank }
func (r rank) Size() int    { return r.w.n }
func (r rank) Host() string { return r.host }
func (r rank) BcastBlob(data []byte, root int) ([]byte, error) {
	return append([]byte{}, r.w.exchange(r.rank, data)[root]...), nil
}
func (r rank) AllGather(data []byte) ([][]byte, error) { return r.w.exchange(r.rank, data), nil }

// place is one rank's host and output dir.
type place struct{ host, dir string }

// check runs CheckShared on every rank at once and returns each rank's error.
func check(t *testing.T, places []place) []error {
	t.Helper()
	old := Settle
	Settle = 50 * time.Millisecond
	t.Cleanup(func() { Settle = old })
	w := newWorld(len(places))
	errs := make([]error, len(places))
	var wg sync.WaitGroup
	for r, p := range places {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[r] = CheckShared(rank{w: w, rank: r, host: p.host}, p.dir)
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("CheckShared did not return on every rank within 30 s")
	}
	return errs
}

// sameOnEveryRank returns the one error every rank returned.
func sameOnEveryRank(t *testing.T, errs []error) error {
	t.Helper()
	for r, err := range errs {
		if (err == nil) != (errs[0] == nil) || (err != nil && err.Error() != errs[0].Error()) {
			t.Fatalf("rank %d returned %v, rank 0 %v: every rank must return the same", r, err, errs[0])
		}
	}
	return errs[0]
}

func noProbeLeft(t *testing.T, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		left, _ := filepath.Glob(filepath.Join(d, ProbePrefix+"*"))
		if len(left) > 0 {
			t.Errorf("probe files left in %s: %v", d, left)
		}
	}
}

func TestOneDirectorySharedByEveryRankPasses(t *testing.T) {
	dir := t.TempDir()
	err := sameOnEveryRank(t, check(t, []place{{"node1", dir}, {"node1", dir}, {"node2", dir}, {"node2", dir}}))
	if err != nil {
		t.Fatal(err)
	}
	noProbeLeft(t, dir)
}

// The same directory spelt relative on one rank and absolute on another is
// one directory.
func TestSpellingsOfOneDirectoryPass(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "out")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(parent)
	if err := sameOnEveryRank(t, check(t, []place{{"node1", dir}, {"node2", "out"}, {"node2", "./out/"}})); err != nil {
		t.Fatal(err)
	}
	noProbeLeft(t, dir)
}

// Each node's own directory (as a node-local /tmp gives): the ranks of the
// other nodes are named with their hosts, on every rank alike.
func TestRanksThatCannotSeeTheProbeAreNamedWithTheirHosts(t *testing.T) {
	a, b, c := t.TempDir(), t.TempDir(), t.TempDir()
	err := sameOnEveryRank(t, check(t, []place{{"node1", a}, {"node1", a}, {"node2", b}, {"node2", b}, {"node3", c}}))
	if err == nil {
		t.Fatal("CheckShared passed over three directories")
	}
	for _, want := range []string{
		"output dir " + a + " is not shared by every rank",
		"the file rank 0 (node1) wrote there is not visible to ranks 2, 3 on node2; rank 4 on node3",
		"must be on a file system all nodes share",
		"-output-dir",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "rank 1") || strings.Contains(err.Error(), "ranks 1") {
		t.Errorf("rank 1 sees the probe but is named:\n%v", err)
	}
	noProbeLeft(t, a, b, c)
}

// Ranks given different -output-dir values are caught by the same check,
// and the message says what each was given.
func TestDifferentOutputDirValuesAreNamed(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	err := sameOnEveryRank(t, check(t, []place{{"node1", a}, {"node1", b}}))
	if err == nil {
		t.Fatal("CheckShared passed with two -output-dir values")
	}
	for _, want := range []string{
		"not visible to rank 1 on node1",
		"every rank must be given the same -output-dir: rank 0 was given \"" + a + "\", rank 1 (node1) was given \"" + b + "\"",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	noProbeLeft(t, a, b)
}

// A directory rank 0 cannot write into fails on every rank alike, naming
// rank 0.
func TestRankZeroThatCannotWriteFailsEveryRank(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no", "such")
	err := sameOnEveryRank(t, check(t, []place{{"node1", missing}, {"node2", missing}}))
	if err == nil || !strings.Contains(err.Error(), "output dir "+missing+": rank 0 (node1) cannot write a probe file in it") {
		t.Fatalf("got %v", err)
	}
}

// A file that holds another token (a leftover, or another run's) is not
// the probe.
func TestOnlyTheFreshTokenCounts(t *testing.T) {
	old := Settle
	Settle = 0
	defer func() { Settle = old }()
	if sees(t.TempDir(), "none", "x") {
		t.Error("a missing file was seen")
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, ProbePrefix+"abc"), []byte("another"), 0o644)
	if sees(dir, ProbePrefix+"abc", "abc") {
		t.Error("a file with another token was seen as the probe")
	}
}
