package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"rsag/coll"
	"rsag/internal/cadence"
	"rsag/internal/testkit/inmem"
	"rsag/internal/testkit/outcheck"
	"rsag/outdir"
)

// Wrong results come from outside rsag (STYLE.md): testdata/corrupt.c, a
// PMPI interposer the tests build with mpicc and load into the ranks with
// mpirun -x LD_PRELOAD, flips one bit of a collective's result on the rank
// its environment names.

// preload builds testdata/<name>.c into a shared library in the test's
// temporary dir and returns its path.
func preload(t *testing.T, name string) string {
	t.Helper()
	return preloadIn(t, name, t.TempDir())
}

// preloadIn is preload into dir (one every emulated host sees).
func preloadIn(t *testing.T, name, dir string) string {
	t.Helper()
	mpicc, err := exec.LookPath("mpicc")
	if err != nil {
		t.Fatalf("mpicc not found, to build testdata/%s.c: install Open MPI's development files (make deps)", name)
	}
	lib := filepath.Join(dir, "lib"+name+".so")
	if out, err := exec.Command(mpicc, "-shared", "-fPIC", "-Wall", "-Werror", "-o", lib, filepath.Join("testdata", name+".c")).CombinedOutput(); err != nil {
		t.Fatalf("building testdata/%s.c: %v\n%s", name, err, out)
	}
	return lib
}

// corrupt is mpirun's arguments that load testdata/corrupt.c with its
// settings (CORRUPT_CALL=Allreduce, ...).
func corrupt(t *testing.T, settings ...string) []string {
	args := []string{"-x", "LD_PRELOAD=" + preload(t, "corrupt")}
	for _, s := range settings {
		args = append(args, "-x", "CORRUPT_"+s)
	}
	return args
}

// launchWith runs rsag on np ranks under mpirun with extra mpirun
// arguments before the binary, within limit.
func launchWith(t *testing.T, np int, limit time.Duration, mpirunArgs []string, args ...string) result {
	t.Helper()
	argv := append(append(append([]string{"../scripts/mpirun.sh", strconv.Itoa(np)}, mpirunArgs...), rsagBin), args...)
	return launch(t, limit, argv...)
}

// failedWith asserts a run that found a wrong result: exit 1, want said
// once on stderr, run.json failed with want in its reason.
func failedWith(t *testing.T, r result, dir string, want ...string) outdir.Record {
	t.Helper()
	if r.code != 1 {
		t.Errorf("exit %d, want 1 (a check failed)\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	run, err := outdir.ReadRecord(dir)
	if err != nil || run.Status != outdir.StatusFailed {
		t.Fatalf("%s: %+v, %v; want failed", outdir.RunFile, run, err)
	}
	for _, w := range want {
		if n := strings.Count(r.stderr, w); n != 1 {
			t.Errorf("stderr says %q %d times, want once:\n%s", w, n, r.stderr)
		}
		if !strings.Contains(run.Reason, w) {
			t.Errorf("%s's reason does not say %q: %s", outdir.RunFile, w, run.Reason)
		}
	}
	return run
}

// A bit flipped in rank 1's output of one per-op sample of the timing
// phase (the smoke config's 210K AllReduce: call 1 is the warm-up, call
// k+2 cycle k), the first or one in the middle, fails the run, naming the
// rank, its host, the case, the mode and the cycle; that sample's row
// alone says False. The ranks are in this process and the flip is the
// interposer's in memory (inmem.Flip: the same call of the same rank at
// the same size, the same element); the PMPI-corrupted sample's
// representative under mpirun, with testdata/corrupt.c, is
// TestAFlipInASampleTakenInOneCallFailsTheRun.
func TestAFlipInAnyTimingSampleFailsTheRun(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ at, cycle int }{{2, 0}, {4, 2}} {
		t.Run(fmt.Sprintf("cycle %d", c.cycle), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			fault := inmem.Flip{Collective: coll.AllReduce.Name, Rank: 1, Bytes: 215040, Calls: func(n int) bool { return n == c.at }}
			r := inprocWith(t, 2, inmem.Faults{Flip: &fault}, 2*time.Minute, "-config", "../configs/smoke.toml", "-backend", "mpi", "-output-dir", dir)
			failedWith(t, r, dir, fmt.Sprintf("timing check failed on rank(s) [1]: rank 1 (%s): default 210K float32 sum out-of-place per-op, direct output at cycle %d: element 0 is 3.0000002, want 3", hostname(t), c.cycle))
			rows := readCSV(t, filepath.Join(dir, "rank1_timings.csv"))
			for _, row := range rows[1:] {
				wrong := row[1] == "215040" && row[2] == "direct" && row[3] == strconv.Itoa(c.cycle)
				if want := map[bool]string{true: "False", false: "True"}[wrong]; row[5] != want {
					t.Errorf("rank 1's row %v: correct %s, want %s", row, row[5], want)
				}
			}
		})
	}
}

// The same, for samples taken in one C call (configs/bench-imb.toml:
// direct AllReduce alone, x100 out of place, 5 warm-ups), batched and with
// a barrier before each operation: a flip in what cycle 1's batch left
// (rank 1's call 500 + 200) fails the run naming that cycle, and its row
// alone says False. Batched is the PMPI-corrupted sample's representative
// under mpirun (testdata/corrupt.c in MPI's C loop); with a barrier, the
// ranks are in this process and the flip is corrupt.c's in memory
// (inmem.Flip: the same call of the same rank at the same size, the same
// element), through the same path of the phases (coll.SampleTimer).
func TestAFlipInASampleTakenInOneCallFailsTheRun(t *testing.T) {
	t.Parallel()
	for _, method := range []string{"batched", "barrier"} {
		t.Run(method, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			args := []string{"-config", "../configs/bench-imb.toml", "-set", "timing.sizes_bytes=[4096]", "-set", "timing.cycles=4",
				"-set", fmt.Sprintf("timing.methods=[%q]", method), "-output-dir", dir}
			var r result
			if method == "batched" {
				r = launchWith(t, 2, 2*time.Minute, corrupt(t, "RANK=1", "CALL=Allreduce", "BYTES=4096", "AT=700"), args...)
				if !strings.Contains(r.stderr, "corrupt.c: rank 1 flips a bit of element 0 of its output in MPI_Allreduce call 700 (4096 bytes)") {
					t.Fatalf("the fault was not injected:\n%s", r.stderr)
				}
			} else {
				fault := inmem.Flip{Collective: coll.AllReduce.Name, Rank: 1, Bytes: 4096, Calls: func(n int) bool { return n == 700 }}
				r = inprocWith(t, 2, inmem.Faults{Flip: &fault, Refusals: mpiRefusals}, 2*time.Minute, args...)
			}
			failedWith(t, r, dir, fmt.Sprintf("timing check failed on rank(s) [1]: rank 1 (%s): default 4K float32 sum out-of-place %s, direct output at cycle 1: element 0 is 3.0000002, want 3", hostname(t), method))
			rows := readCSV(t, filepath.Join(dir, "rank1_timings.csv"))
			for _, row := range rows[1:] {
				if want := map[bool]string{true: "False", false: "True"}[row[3] == "1"]; row[5] != want {
					t.Errorf("rank 1's row %v: correct %s, want %s", row, row[5], want)
				}
			}
		})
	}
}

func hostname(t *testing.T) string {
	h, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// soakArgs is a soak of n iterations of 4K to 64K (every shard above the
// interposer's 64 bytes), the contracts off so that only the soak's
// collectives are counted.
func soakArgs(dir string, n int, more ...string) []string {
	return append([]string{"-config", "../configs/soak.toml", "-backend", "mpi", "-output-dir", dir,
		"-set", "contracts.enabled=false", "-set", "soak.duration_s=0", "-set", fmt.Sprintf("soak.iterations=%d", n),
		"-set", "soak.min_bytes=4096", "-set", `soak.max_bytes="64K"`}, more...)
}

// Each fault the interposer injects into a soak on 4 ranks is caught at
// the iteration it strikes and named: the rank, its host, the step and the
// element, with the verdict in run.json and soak.csv. Every soak iteration
// calls MPI_Allreduce once (direct), then MPI_Reduce_scatter_block and
// MPI_Allgather (decomposed). The ranks are in this process, the fault the
// interposer's in memory (inmem.Flip: the same call of the same rank, the
// same element); the soak fault's representative under mpirun, with the
// interposer, is TestTheSoakCountsTheInjectedRate.
func TestTheSoakLocalizesInjectedFaults(t *testing.T) {
	t.Parallel()
	host := hostname(t)
	at := func(n int) func(int) bool { return func(call int) bool { return call == n } }
	for _, c := range []struct {
		name      string
		fault     inmem.Flip
		iteration int
		suspect   int
		rank      int // the first wrong element's
		step      string
		want      []string
	}{
		{"a flipped AllReduce output", inmem.Flip{Collective: coll.AllReduce.Name, Rank: 1, Element: 5, Calls: at(3)}, 2, 1, 1, "direct AllReduce",
			[]string{"AllReduce (direct) wrong, ReduceScatter + AllGather right, on the same input. suspect rank 1 on " + host,
				"rank 1 on " + host + "'s AllReduce (direct) output was wrong in chunk 0 while every other rank's was right",
				"the first is element 5 (byte "}},
		{"one rank's ReduceScatter shard", inmem.Flip{Collective: coll.ReduceScatter.Name, Rank: 2, Element: 1, Calls: at(2)}, 1, 2, 2, "decomposed ReduceScatter",
			[]string{"ReduceScatter + AllGather wrong, AllReduce (direct) right, on the same input. suspect rank 2 on " + host,
				"ReduceScatter (decomposed, step 1 of 2) output was wrong in chunk 2 while every other rank's was right: a reduction fault on rank 2 on " + host,
				"AllGather (decomposed, step 2 of 2) then was wrong on every rank, in chunk 2", "the first is element 1 (byte "}},
		{"one rank's chunk sent by AllGather", inmem.Flip{Collective: coll.AllGather.Name, Rank: 3, Element: 2, Send: true, Calls: at(1)}, 0, 3, 0, "decomposed AllGather",
			[]string{"ReduceScatter + AllGather wrong, AllReduce (direct) right, on the same input. suspect rank 3 on " + host,
				"in AllGather (decomposed, step 2 of 2) every rank's output was wrong in chunk 3, the part rank 3 on " + host + " holds",
				"a transfer from that chunk's owner"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			r := inprocWith(t, 4, inmem.Faults{Flip: &c.fault}, 2*time.Minute, soakArgs(dir, 20)...)
			run := failedWith(t, r, dir, append([]string{fmt.Sprintf("soak check failed on rank(s) [%d]: iteration %d (", c.suspect, c.iteration)}, c.want...)...)
			rows := readCSV(t, filepath.Join(dir, "soak.csv"))
			if len(rows) != c.iteration+2 { // the header, and each iteration up to the failed one
				t.Fatalf("soak.csv has %d rows, want %d (fail_after = 1)", len(rows), c.iteration+2)
			}
			col := func(name string) string {
				for i, h := range rows[0] {
					if h == name {
						return rows[len(rows)-1][i]
					}
				}
				t.Fatalf("soak.csv has no %s column: %v", name, rows[0])
				return ""
			}
			if col("first_rank") != strconv.Itoa(c.rank) || col("first_host") != host || col("first_step") != c.step ||
				!strings.Contains(run.Reason, col("verdict")) {
				t.Errorf("soak.csv's failed row %v: want rank %d on %s, %s, and run.json's verdict", rows[len(rows)-1], c.rank, host, c.step)
			}
		})
	}
}

// With fail_after = 0 the soak runs to its end and counts: a flip in
// every 4th AllReduce of rank 1 fails a quarter of the iterations, no
// more, no fewer, in summary.json and soak.csv.
func TestTheSoakCountsTheInjectedRate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := launchWith(t, 2, 2*time.Minute, corrupt(t, "RANK=1", "CALL=Allreduce", "EVERY=4"), soakArgs(dir, 40, "-set", "soak.fail_after=0")...)
	failedWith(t, r, dir, "(10 of 40 iterations found a wrong element)")
	var sum struct {
		Soak struct {
			Iterations       int     `json:"iterations"`
			FailedIterations int     `json:"failed_iterations"`
			FailureRate      float64 `json:"failure_rate"`
			Failures         []struct {
				Iteration int `json:"iteration"`
			} `json:"failures"`
		} `json:"soak"`
	}
	data, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil || json.Unmarshal(data, &sum) != nil {
		t.Fatalf("summary.json: %v", err)
	}
	s := sum.Soak
	if s.Iterations != 40 || s.FailedIterations != 10 || s.FailureRate != 0.25 || len(s.Failures) != 10 {
		t.Fatalf("summary.json's soak: %+v, want 10 of 40 failed", s)
	}
	for i, f := range s.Failures {
		if f.Iteration != 4*i+3 {
			t.Errorf("failure %d at iteration %d, want %d", i, f.Iteration, 4*i+3)
		}
	}
	if rows := readCSV(t, filepath.Join(dir, "soak.csv")); len(rows) != 41 {
		t.Errorf("soak.csv has %d rows, want a header and 40", len(rows))
	}
}

// With no fault, a soak on 2 and on 4 ranks finds nothing, and the run is
// complete; the progress line comes every 5 s, the soak's real cadence.
// make test soaks 11 s on 2 ranks in this process (a progress line at 5 s,
// the one at 10 s unless an iteration ends past 11 s, and the last): a
// clean soak's verdict is the run's logic; the full tier 20 s on 2 and on 4
// ranks under mpirun.
func TestASoakWithoutAFaultFindsNothing(t *testing.T) {
	t.Parallel()
	// make test: goroutine ranks, on the real cadence (this test binary's);
	// the full tier: the real binary under mpirun.
	every := int(cadence.SoakProgress / time.Second)
	nps, seconds, lines := []int{2}, 2*every+1, 2
	if fullTier() {
		nps, seconds, lines = []int{2, 4}, 20, 3
	}
	for _, np := range nps {
		t.Run(fmt.Sprintf("np%d", np), func(t *testing.T) {
			t.Parallel() // the soaks at once: only their checks matter, not their speed
			dir := t.TempDir()
			args := []string{"-config", "../configs/soak.toml", "-backend", "mpi", "-output-dir", dir,
				"-set", fmt.Sprintf("soak.duration_s=%d", seconds)}
			var r result
			if fullTier() {
				r = mpirun(t, np, 2*time.Minute, args...)
			} else {
				r = inproc(t, np, 2*time.Minute, args...)
			}
			if r.code != 0 {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
			}
			if err := outcheck.CheckManifest(dir); err != nil {
				t.Error(err)
			}
			re := regexp.MustCompile(fmt.Sprintf(`(?m)^soak: (\d+) iterations in ([0-9.]+) s of %d s, [0-9.]+ [kMG]?B moved by rank 0, 0 failed \(seed 1\)$`, seconds))
			found := re.FindAllStringSubmatch(r.stdout, -1)
			// A progress line comes at the first iteration's end past each
			// every s: beside a loaded suite an iteration can outlast the
			// mark, so fewer may come, never more, and never two within
			// every s of each other (the last line, at the end, aside).
			if len(found) == 0 || len(found) > lines+1 {
				t.Fatalf("%d progress lines in %d s, want 1 to %d, one every %d s at most:\n%s", len(found), seconds, lines+1, every, r.stdout)
			}
			prev := 0.0
			for _, m := range found[:len(found)-1] {
				at, _ := strconv.ParseFloat(m[2], 64)
				if at-prev < float64(every)*0.9 {
					t.Errorf("a progress line at %.1f s, %.1f s after the one before, want %d s apart:\n%s", at, at-prev, every, r.stdout)
				}
				prev = at
			}
			// How many iterations fit is the machine's business (73 to 101
			// in 20 s in make test, 12 at 2 ranks beside a second make
			// test): the soak must have checked some, and said 0 failed on
			// every line.
			last := found[len(found)-1][1]
			if n, _ := strconv.Atoi(last); n < 1 {
				t.Errorf("%s iterations in %d s: the soak checked nothing", last, seconds)
			}
			t.Logf("%d ranks: %s iterations in %d s", np, last, seconds)
		})
	}
}
