package ncclx

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"rsag/coll"
	"rsag/phases"
)

// envRecorder stands in for each rank's own environment, since the test's
// ranks are goroutines of one process: what each rank found set, and what
// New set.
type envRecorder struct {
	mu    sync.Mutex
	given map[int]map[string]string // set before the ranks start
	set   map[int]map[string]string
}

func recordEnv(t *testing.T, given map[int]map[string]string) *envRecorder {
	e := &envRecorder{given: given, set: map[int]map[string]string{}}
	oldSet, oldLookup := setenv, lookupEnv
	setenv = func(rank int, k, v string) error {
		e.mu.Lock()
		defer e.mu.Unlock()
		if e.set[rank] == nil {
			e.set[rank] = map[string]string{}
		}
		e.set[rank][k] = v
		return nil
	}
	lookupEnv = func(rank int, k string) (string, bool) {
		v, ok := e.given[rank][k]
		return v, ok
	}
	t.Cleanup(func() { setenv, lookupEnv = oldSet, oldLookup })
	return e
}

// checkedAllReduce runs one small timing case whose every output the
// timing phase checks, and returns the rank's GPU bus id.
func checkedAllReduce(buses []string) rankBody {
	run := coll.Sweep{Name: "gpu", SizesBytes: []int64{4 << 10}, DTypes: []coll.DType{coll.Float32},
		Ops: []coll.Op{coll.Sum}, Placements: []coll.Placement{coll.OutOfPlace}, Methods: []coll.Method{coll.PerOp},
		Batch: 1, Warmups: 1, Cycles: 1}
	return func(r fakeRank, b *Backend) error {
		buses[r.rank] = b.Info().BusID
		_, err := phases.RunTiming(b, r, []coll.Sweep{run}, nil, nil)
		return err
	}
}

// GPU selection for 4 ranks on one host, as jobs are started: 4 GPUs seen
// by every rank (GPU <local rank>), and one different GPU shown to each
// rank (srun --gpus-per-task=1: CUDA_VISIBLE_DEVICES per rank), in either
// order. Every rank runs on its own GPU, and nothing is set for sharing.
func TestGPUSelectionRuns(t *testing.T) {
	for _, c := range []struct {
		name    string
		visible []string
		want    []string // bus id by rank
	}{
		{"all 4 seen", nil, []string{"0000:18:00.0", "0000:19:00.0", "0000:1A:00.0", "0000:1B:00.0"}},
		{"one each", []string{"0", "1", "2", "3"}, []string{"0000:18:00.0", "0000:19:00.0", "0000:1A:00.0", "0000:1B:00.0"}},
		{"one each, reversed", []string{"3", "2", "1", "0"}, []string{"0000:1B:00.0", "0000:1A:00.0", "0000:19:00.0", "0000:18:00.0"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := recordEnv(t, nil)
			buses := make([]string, 4)
			errs, _ := startRanks(t, world{ranks: 4, gpus: 4, visible: c.visible}, checkedAllReduce(buses))
			if err := errors.Join(errs...); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(buses, c.want) {
				t.Errorf("bus ids by rank %v, want %v", buses, c.want)
			}
			if len(env.set) != 0 {
				t.Errorf("set %v without sharing", env.set)
			}
		})
	}
}

// Ranks that would share a GPU without gpu.sharing are refused on every
// rank alike, naming the ranks, the GPU and the fixes: 4 ranks seeing the
// one GPU of the host, and 4 ranks each shown the same GPU of 4. A rank
// seeing 2 GPUs of a host where 4 ranks run is refused for that.
func TestGPUSelectionRefuses(t *testing.T) {
	for _, c := range []struct {
		name    string
		gpus    int
		visible []string
		want    []string
	}{
		{"1 GPU", 1, nil, []string{"NCCL backend: ranks 0-3 on testhost share GPU 0000:18:00.0: NCCL runs one rank per GPU",
			"srun --gpus-per-task=1", "set gpu.sharing = true (-set gpu.sharing=true)", "network transport"}},
		{"the same one shown to each", 4, []string{"2", "2", "2", "2"}, []string{"ranks 0-3 on testhost share GPU 0000:1A:00.0"}},
		{"two pairs", 4, []string{"1", "3", "1", "3"}, []string{
			"ranks 0,2 on testhost share GPU 0000:19:00.0; ranks 1,3 on testhost share GPU 0000:1B:00.0"}},
		{"2 GPUs", 2, nil, []string{"a rank on testhost sees 2 GPUs but 4 ranks run on that node",
			"start at most 2 ranks per node", "gpu.sharing = true"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := recordEnv(t, nil)
			errs, log := startRanks(t, world{ranks: 4, gpus: c.gpus, visible: c.visible}, func(fakeRank, *Backend) error {
				return errors.New("ran")
			})
			for r, err := range errs {
				for _, want := range c.want {
					if err == nil || !strings.Contains(err.Error(), want) {
						t.Errorf("rank %d: %v, want it to say %q", r, err, want)
					}
				}
			}
			var dup *DuplicateGPUError
			if c.gpus != 2 && (!errors.As(errs[0], &dup) || errs[0].Error() != errs[3].Error()) {
				t.Errorf("ranks 0 and 3 differ, or not a *DuplicateGPUError: %v; %v", errs[0], errs[3])
			}
			if inits := filter(log.calls, "ncclCommInitRank"); len(inits) != 0 || len(env.set) != 0 {
				t.Errorf("refused, yet %d communicators made and %v set", len(inits), env.set)
			}
		})
	}
}

// With gpu.sharing, 4 ranks run on 1 or 2 GPUs: each rank takes GPU <local
// rank> modulo those it sees, and gets its own NCCL host id and the
// loopback interface, unless it had them; its collectives run and check.
func TestGPUSharing(t *testing.T) {
	for _, c := range []struct {
		name  string
		gpus  int
		given map[int]map[string]string
		want  []string // bus id by rank
	}{
		{"1 GPU", 1, nil, []string{"0000:18:00.0", "0000:18:00.0", "0000:18:00.0", "0000:18:00.0"}},
		{"2 GPUs", 2, nil, []string{"0000:18:00.0", "0000:19:00.0", "0000:18:00.0", "0000:19:00.0"}},
		{"user's own", 1, map[int]map[string]string{1: {HostIDEnv: "mine"}, 2: {SocketIfnameEnv: "eth0"}},
			[]string{"0000:18:00.0", "0000:18:00.0", "0000:18:00.0", "0000:18:00.0"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := recordEnv(t, c.given)
			buses := make([]string, 4)
			errs, _ := startRanks(t, world{ranks: 4, gpus: c.gpus, opt: Options{ShareGPU: true}}, checkedAllReduce(buses))
			if err := errors.Join(errs...); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(buses, c.want) {
				t.Errorf("bus ids by rank %v, want %v", buses, c.want)
			}
			for r := range 4 {
				want := map[string]string{HostIDEnv: fmt.Sprintf("testhost-rsag-rank%d", r), SocketIfnameEnv: "lo"}
				for k := range c.given[r] {
					delete(want, k)
				}
				if got := env.set[r]; fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("rank %d set %v, want %v", r, got, want)
				}
			}
		})
	}
}

// Sharing asked for but not needed (a GPU for every rank) changes nothing:
// no rank shares, and nothing is set.
func TestGPUSharingUnneeded(t *testing.T) {
	env := recordEnv(t, nil)
	buses := make([]string, 4)
	errs, _ := startRanks(t, world{ranks: 4, gpus: 4, opt: Options{ShareGPU: true}}, checkedAllReduce(buses))
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if len(env.set) != 0 || len(sameGPU([]gpuOf{{"h", buses[0]}, {"h", buses[1]}, {"h", buses[2]}, {"h", buses[3]}})) != 0 {
		t.Errorf("set %v; buses %v", env.set, buses)
	}
}

// Ranks on different hosts with the same bus id do not share a GPU; the
// loopback interface is set only when every rank is on one host.
func TestSameGPU(t *testing.T) {
	got := sameGPU([]gpuOf{{"a", "0000:18:00.0"}, {"b", "0000:18:00.0"}, {"a", "0000:19:00.0"}, {"a", "0000:18:00.0"}})
	if fmt.Sprint(got) != "[[0 3]]" {
		t.Errorf("got %v", got)
	}
	env := recordEnv(t, nil)
	if set, err := shareEnv(5, "b", false); err != nil || fmt.Sprint(set) != "[NCCL_HOSTID=b-rsag-rank5]" || len(env.set[5]) != 1 {
		t.Errorf("two hosts: set %v, %v", set, err)
	}
	if got := rankList([]int{0, 2, 5}); got != "0,2,5" {
		t.Errorf("rankList: %q", got)
	}
}
