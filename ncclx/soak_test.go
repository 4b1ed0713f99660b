package ncclx

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"rsag/coll"
	"rsag/phases"
)

// AllGather gives every rank what each brought (coll.Gatherer), so that
// the soak's ranks can exchange what they found.
func (r fakeRank) AllGather(data []byte) ([][]byte, error) {
	all := r.w.exchange(r.rank, append([]byte(nil), data...))
	out := make([][]byte, len(all))
	for i, v := range all {
		out[i] = append([]byte(nil), v.([]byte)...)
	}
	return out, nil
}

// soakOnFakes runs the soak phase on 4 ranks of the fake NCCL, the faults
// of the RSAG_FAKE_NCCL_CORRUPT_* variables in env (each set built into a
// library of its own, whose counts start at 0), and returns each rank's
// error.
func soakOnFakes(t *testing.T, spec phases.SoakSpec, env ...string) []error {
	t.Helper()
	var defs []string
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
		defs = append(defs, "-DRSAG_FAKE_BUILD_"+strings.NewReplacer("=", "_", ".", "_").Replace(kv))
	}
	var mu sync.Mutex
	errs := make([]error, 4)
	runRanks(t, 4, func(r fakeRank, b *Backend) error {
		if err := phases.CheckSoak(b, spec, nil); err != nil {
			return err
		}
		_, err := phases.RunSoak(b, r, spec, nil, nil, nil)
		mu.Lock()
		errs[r.rank] = err
		mu.Unlock()
		return nil
	}, defs...)
	return errs
}

func fakeSoakSpec(dtypes []coll.DType, ops []coll.Op) phases.SoakSpec {
	return phases.SoakSpec{Iterations: 12, MinBytes: 1 << 10, MaxBytes: 16 << 10, Seed: 5, FailAfter: 1,
		DTypes: dtypes, Ops: ops, Placements: coll.Placements, Offsets: []int64{0, 16, 4096}}
}

// The soak on the NCCL backend over the fake NCCL: with no fault every
// output of every dtype NCCL has holds, half floats and avg included; each
// fault the fake injects is caught and named with its rank, host and step,
// as the PMPI interposer's are on MPI (e2e).
func TestSoakLocalizesOnTheFakeNCCL(t *testing.T) {
	for _, spec := range []phases.SoakSpec{
		fakeSoakSpec([]coll.DType{coll.Int8, coll.Uint8, coll.Int32, coll.Uint32, coll.Int64, coll.Uint64, coll.Float16, coll.BFloat16, coll.Float32, coll.Float64},
			[]coll.Op{coll.Sum, coll.Prod, coll.Max, coll.Min}),
		fakeSoakSpec([]coll.DType{coll.Float16, coll.BFloat16, coll.Float32, coll.Float64}, []coll.Op{coll.Avg}),
	} {
		for r, err := range soakOnFakes(t, spec) {
			if err != nil {
				t.Errorf("no fault, %v: rank %d: %v", spec.Ops, r, err)
			}
		}
	}
	spec := fakeSoakSpec([]coll.DType{coll.Int32, coll.Float32}, []coll.Op{coll.Sum})
	for _, c := range []struct {
		name    string
		env     []string
		suspect int
		want    []string
	}{
		{"a flipped AllReduce output", []string{"RSAG_FAKE_NCCL_CORRUPT_COLL=ncclAllReduce", "RSAG_FAKE_NCCL_CORRUPT_RANK=1", "RSAG_FAKE_NCCL_CORRUPT_AT=3", "RSAG_FAKE_NCCL_CORRUPT_ELEMENT=5"}, 1,
			[]string{"iteration 2 (", "AllReduce (direct) wrong, ReduceScatter + AllGather right, on the same input. suspect rank 1 on testhost",
				"rank 1 on testhost's AllReduce (direct) output was wrong in chunk 0 while every other rank's was right", "the first is element 5 "}},
		{"one rank's ReduceScatter shard", []string{"RSAG_FAKE_NCCL_CORRUPT_COLL=ncclReduceScatter", "RSAG_FAKE_NCCL_CORRUPT_RANK=2", "RSAG_FAKE_NCCL_CORRUPT_AT=2", "RSAG_FAKE_NCCL_CORRUPT_ELEMENT=1"}, 2,
			[]string{"iteration 1 (", "suspect rank 2 on testhost",
				"ReduceScatter (decomposed, step 1 of 2) output was wrong in chunk 2 while every other rank's was right: a reduction fault on rank 2 on testhost",
				"AllGather (decomposed, step 2 of 2) then was wrong on every rank, in chunk 2"}},
		{"the chunk one rank sends in AllGather", []string{"RSAG_FAKE_NCCL_CORRUPT_COLL=ncclAllGather", "RSAG_FAKE_NCCL_CORRUPT_RANK=3", "RSAG_FAKE_NCCL_CORRUPT_AT=1", "RSAG_FAKE_NCCL_CORRUPT_ELEMENT=2"}, 3,
			[]string{"iteration 0 (", "suspect rank 3 on testhost",
				"in AllGather (decomposed, step 2 of 2) every rank's output was wrong in chunk 3, the part rank 3 on testhost holds"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			errs := soakOnFakes(t, spec, c.env...)
			for r, err := range errs {
				var ce *phases.CheckError
				if !errors.As(err, &ce) || !slices.Equal(ce.Ranks, []int{c.suspect}) || err.Error() != errs[0].Error() {
					t.Fatalf("rank %d: %v, want the same soak CheckError on every rank, naming rank %d", r, err, c.suspect)
				}
			}
			for _, w := range c.want {
				if !strings.Contains(errs[0].Error(), w) {
					t.Errorf("%v\ndoes not say %q", errs[0], w)
				}
			}
		})
	}
}

// A bit flipped in one middle per-op sample of the timing phase on the
// fake NCCL fails the run on every rank, naming the rank and the cycle.
func TestEveryTimingSampleIsCheckedOnTheFakeNCCL(t *testing.T) {
	t.Setenv("RSAG_FAKE_NCCL_CORRUPT_COLL", "ncclAllReduce")
	t.Setenv("RSAG_FAKE_NCCL_CORRUPT_RANK", "1")
	t.Setenv("RSAG_FAKE_NCCL_CORRUPT_AT", "3") // the warm-up is call 1, cycle k call k+2
	run := coll.Sweep{Name: "one", SizesBytes: []int64{4 << 10}, DTypes: []coll.DType{coll.Float32}, Ops: []coll.Op{coll.Sum},
		Placements: []coll.Placement{coll.OutOfPlace}, Methods: []coll.Method{coll.PerOp}, Warmups: 1, Cycles: 4}
	var mu sync.Mutex
	errs := make([]error, 2)
	runRanks(t, 2, func(r fakeRank, b *Backend) error {
		_, err := phases.RunTiming(b, r, []coll.Sweep{run}, nil, nil)
		mu.Lock()
		errs[r.rank] = err
		mu.Unlock()
		return nil
	}, "-DRSAG_FAKE_BUILD_TIMING")
	for r, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "timing check failed on rank(s) [1]: rank 1 (testhost): one 4K float32 sum out-of-place per-op, direct output at cycle 1: element 0") {
			t.Errorf("rank %d: %v", r, err)
		}
	}
}

// testdata/ncclfault.c, the fault injector that stands in for libnccl.so.2
// on a GPU machine, over the fake NCCL: it passes every call on, and the
// soak names the one ReduceScatter output it corrupts exactly as it names
// the fake's own fault; with NCCL_FAULT unset nothing is named.
func TestFaultInjectorOnTheFakes(t *testing.T) {
	spec := fakeSoakSpec([]coll.DType{coll.Int32, coll.Float32}, []coll.Op{coll.Sum})
	soak := func(errs []error) rankBody {
		return func(r fakeRank, b *Backend) error {
			if err := phases.CheckSoak(b, spec, nil); err != nil {
				return err
			}
			_, errs[r.rank] = phases.RunSoak(b, r, spec, nil, nil, nil)
			return nil
		}
	}
	clean := make([]error, 4)
	if errs, _ := startRanks(t, world{ranks: 4, gpus: 4, faults: true}, soak(clean)); errors.Join(errs...) != nil {
		t.Fatal(errors.Join(errs...))
	}
	if err := errors.Join(clean...); err != nil {
		t.Errorf("no fault asked for: %v", err)
	}
	for k, v := range map[string]string{"NCCL_FAULT": "corrupt", "NCCL_FAULT_COLL": "ncclReduceScatter",
		"NCCL_FAULT_RANK": "2", "NCCL_FAULT_AT": "2", "NCCL_FAULT_ELEMENT": "1"} {
		t.Setenv(k, v)
	}
	errs := make([]error, 4)
	if started, _ := startRanks(t, world{ranks: 4, gpus: 4, faults: true}, soak(errs)); errors.Join(started...) != nil {
		t.Fatal(errors.Join(started...))
	}
	for r, err := range errs {
		var ce *phases.CheckError
		if !errors.As(err, &ce) || !slices.Equal(ce.Ranks, []int{2}) || err.Error() != errs[0].Error() {
			t.Fatalf("rank %d: %v, want the same soak CheckError on every rank, naming rank 2", r, err)
		}
	}
	for _, w := range []string{"iteration 1 (", "suspect rank 2 on testhost",
		"ReduceScatter (decomposed, step 1 of 2) output was wrong in chunk 2 while every other rank's was right: a reduction fault on rank 2 on testhost",
		"the first is element 1 "} {
		if !strings.Contains(errs[0].Error(), w) {
			t.Errorf("%v\ndoes not say %q", errs[0], w)
		}
	}
}
