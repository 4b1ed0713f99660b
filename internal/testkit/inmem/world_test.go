package inmem

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"rsag/coll"
)

// A rank's world gathers, broadcasts and names its host and local rank;
// each rank's output is its own and its code its own.
func TestRanksRunAJob(t *testing.T) {
	rs := NewRanks([]string{"a", "a", "b"}, Faults{}, 10*time.Second)
	ended := rs.Run(10*time.Second, func(w *World) int {
		blob, err := w.BcastBlob([]byte(fmt.Sprint("from ", w.Rank())), 1)
		if err != nil {
			return 1
		}
		all, err := w.Gather([]byte(w.Host()), 0)
		if err != nil {
			return 1
		}
		fmt.Fprintf(w.Stdout(), "%s %d/%d %q %q", w.Host(), w.LocalRank(), w.LocalSize(), blob, all)
		return 10 + w.Rank()
	})
	want := []string{`a 0/2 "from 1" ["a" "a" "b"]`, `a 1/2 "from 1" []`, `b 0/1 "from 1" []`}
	for r, e := range ended {
		if e.How != "returned" || e.Code != 10+r || e.Stdout != want[r] {
			t.Errorf("rank %d: %+v, want returned with %d and %q", r, e, 10+r, want[r])
		}
	}
}

// A rank given a variable of its own reads it, and the others read the
// process's, as mpirun's -x on one part of an MPMD line gives it.
func TestARankHasAnEnvironmentOfItsOwn(t *testing.T) {
	t.Setenv("INMEM_TEST_VAR", "process")
	rs := NewRanks([]string{"h", "h"}, Faults{}, 10*time.Second)
	rs.World(1).Setenv("INMEM_TEST_VAR", "rank 1's")
	ended := rs.Run(10*time.Second, func(w *World) int {
		fmt.Fprint(w.Stdout(), w.Getenv("INMEM_TEST_VAR"))
		return 0
	})
	for r, want := range []string{"process", "rank 1's"} {
		if ended[r].Stdout != want {
			t.Errorf("rank %d reads %q, want %q", r, ended[r].Stdout, want)
		}
	}
}

// Under Refusals.NoGraphs a World's backend has no CUDA graphs' stand-in,
// as MPI's has not, and keeps its other abilities; without it, it has one.
func TestAWorldsBackendWithoutGraphs(t *testing.T) {
	for _, noGraphs := range []bool{false, true} {
		rs := NewRanks([]string{"h"}, Faults{Refusals: &Refusals{Supports: func(coll.DType, coll.Op) error { return nil }, NoGraphs: noGraphs}}, 10*time.Second)
		be, err := rs.World(0).OpenBackend("mpi")
		if err != nil {
			t.Fatal(err)
		}
		_, graphs := coll.Find[coll.GraphTimer](be)
		_, samples := coll.Find[coll.SampleTimer](be)
		_, free := coll.Find[coll.FreeMemoryReporter](be)
		if graphs == noGraphs || !samples || !free {
			t.Errorf("NoGraphs %v: graphs %v, samples %v, free memory %v", noGraphs, graphs, samples, free)
		}
	}
}

// A Flip with Comm strikes the world's reductions (MaxFloat64s), counted
// on their own, on its rank alone; one without it leaves them alone.
func TestAFlipInTheWorldsReductions(t *testing.T) {
	for _, comm := range []bool{true, false} {
		f := &Flip{Collective: coll.AllReduce.Name, Comm: comm, Rank: 1, Bytes: 8, Calls: func(n int) bool { return n == 2 }}
		rs := NewRanks([]string{"h", "h"}, Faults{Flip: f}, 10*time.Second)
		ended := rs.Run(10*time.Second, func(w *World) int {
			for range 3 {
				v := []float64{float64(w.Rank())}
				if err := w.MaxFloat64s(v); err != nil {
					return 1
				}
				fmt.Fprint(w.Stdout(), v[0] == 1, " ")
			}
			return 0
		})
		want := []string{"true true true ", "true true true "}
		if comm {
			want[1] = "true false true "
		}
		for r, e := range ended {
			if e.Stdout != want[r] {
				t.Errorf("Comm %v: rank %d's maxima equal 1: %q, want %q", comm, r, e.Stdout, want[r])
			}
		}
	}
}

// Abort ends the job as MPI_Abort does: the other ranks' waits fail at
// once, they are killed (their later output dropped, the abort's code),
// and the aborting rank's goroutine ends there.
func TestAbortKillsTheOtherRanks(t *testing.T) {
	rs := NewRanks([]string{"h", "h", "h"}, Faults{}, time.Minute)
	start := time.Now()
	ended := rs.Run(time.Minute, func(w *World) int {
		if w.Rank() == 1 {
			fmt.Fprint(w.Stderr(), "rank 1 fails alone")
			w.Abort(7)
			t.Error("Abort returned")
		}
		err := w.Barrier()
		fmt.Fprint(w.Stderr(), "after the barrier: ", err) // dropped: the rank was killed
		return 0
	})
	if time.Since(start) > 10*time.Second {
		t.Errorf("the abort took %v to end the job", time.Since(start))
	}
	for r, e := range ended {
		how, stderr := "killed", ""
		if r == 1 {
			how, stderr = "aborted", "rank 1 fails aloneMPI_ABORT was invoked on rank 1 in communicator MPI_COMM_WORLD with errorcode 7\n"
		}
		if e.How != how || e.Code != 7 || e.Stderr != stderr {
			t.Errorf("rank %d: %+v, want %s with 7 and stderr %q", r, e, how, stderr)
		}
	}
}

// Exit ends its rank from any goroutine; a rank waiting for it fails at
// once, and the exited rank's later output is dropped.
func TestExitEndsOneRank(t *testing.T) {
	rs := NewRanks([]string{"h", "h"}, Faults{}, time.Minute)
	ended := rs.Run(time.Minute, func(w *World) int {
		if w.Rank() == 0 {
			done := make(chan struct{})
			go func() { defer close(done); w.Exit(3) }()
			<-done
			fmt.Fprint(w.Stdout(), "dropped")
			return 0
		}
		if err := w.Barrier(); err == nil || !strings.Contains(err.Error(), "exited with code 3") {
			t.Errorf("rank 1's barrier: %v", err)
		}
		return 1
	})
	if e := ended[0]; e.How != "exited" || e.Code != 3 || e.Stdout != "" {
		t.Errorf("rank 0: %+v", e)
	}
	if e := ended[1]; e.How != "returned" || e.Code != 1 {
		t.Errorf("rank 1: %+v", e)
	}
}
