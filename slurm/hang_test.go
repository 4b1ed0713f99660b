package slurm_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"rsag/internal/cadence"
	"rsag/outdir"
)

// testStoppedRank stops rank 2 (on node2) of a job that times for minutes
// under srun on 2+2 ranks with a 1.5 s deadline: the job ends within the
// deadline and a few seconds, and rank 0, on node1, names rank 2, its host
// and pid, says it is stopped (seen by rank 3, its neighbour on node2),
// and what the others wait in, in the job's log and in run.json.
//
// It runs the short cadence (c.fastBin: beats of 0.2 s, a rank silent
// after 0.6 s, lingers of 0.2 s) with timeout_s 1.5, so that it waits on
// no product deadline for more than 2 s. The real cadence of the same
// proof is e2e's TestAStoppedRankIsNamedRealCadence (one test per
// deadline, issue 56), under mpirun: nothing of Slurm's (srun's kill of
// the step, KillWait) depends on the cadence's length, only on the
// lingers fitting in Slurm's grace, which both builds' do. The full tier
// runs it on the product binary (c.fastBin is then RSAG_BIN).
func (c *cluster) testStoppedRank(t *testing.T) {
	dir := c.submitDir(t)
	// timeout_s scales with the cadence: on the product binary (the full
	// tier) a stopped rank is seen as such only after its neighbour's next
	// beats, and 1.5 s would fire first, naming it by its step alone.
	beat, timeout := cadence.RealBeatEvery, 1.5*cadence.FastBy
	if c.fastBin != c.rsagBin {
		beat, timeout = beat/cadence.FastBy, 1.5
	}
	id := c.startTiming(t, dir, c.fastBin, fmt.Sprintf("timeout_s=%g", timeout))
	time.Sleep(3 * beat) // into the timing phase, a few beats
	pid := 0
	for _, p := range c.hosts.PIDs(t, "node2") {
		exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", p))
		env, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", p))
		if filepath.Base(exe) == filepath.Base(c.rsagBin) && bytes.Contains(env, []byte("SLURM_PROCID=2\x00")) {
			pid = p
		}
	}
	if pid == 0 || syscall.Kill(pid, syscall.SIGSTOP) != nil {
		t.Fatalf("no rank 2 to stop on node2 (pid %d)", pid)
	}
	t.Cleanup(func() {
		if outdir.ProcState(pid) == "T" {
			syscall.Kill(pid, syscall.SIGKILL)
			syscall.Kill(pid, syscall.SIGCONT)
		}
	})
	at := time.Now()
	j := c.waitJob(t, dir, id, time.Minute)
	// timeout_s, srun's kill of the step and a few seconds, which a loaded
	// machine stretches; without the watchdog the job would time for
	// minutes (50 million cycles, rank 2 stopped till the test's end).
	if took := time.Since(at); j.fields["JobState"] != "FAILED" || took > 40*time.Second {
		t.Errorf("JobState=%s %.1f s after the stop, want FAILED within timeout_s (%g s) and some seconds", j.fields["JobState"], took.Seconds(), timeout)
	}
	t.Logf("the job ended %.1f s after rank 2 was stopped", time.Since(at).Seconds())
	// Stopped, as rank 3 sees it in /proc, or, when slurmstepd woke it
	// before rank 0 looked, as it says itself; or, when rank 3 was itself
	// starved on a loaded machine (seen beside a second make test), silent
	// with the step of its last heartbeat, and no one on node2 to say why;
	// that beat may predate the others' wait, and then says by how much.
	re := regexp.MustCompile(fmt.Sprintf(`hang: ranks? [0-9,]+ waits? in timing .*rank 2 on node2 \(pid %d\) `+
		`(is stopped \(state T, seen by rank 3 on node2 [0-9.]+ s ago\)|did not run for [0-9.]+ s \(stopped, e.g. by SIGSTOP, or frozen\) until it was woken|`+
		`has written no heartbeat for [0-9.]+ s, and no rank on node2 can say why \(stopped, killed, or its node gone\); its last heartbeat, [0-9.]+ s ago, (written [0-9.]+ s before ranks? [0-9,]+ began to wait, )?had it [^;]*in timing )`, pid))
	if n := len(re.FindAllString(j.log, -1)); n != 1 || !strings.Contains(j.log, "rsag: rank 0 (node1): ") {
		t.Errorf("the log says the hang %d times, want once, by rank 0, matching %s", n, re)
	}
	run, err := outdir.ReadRecord(filepath.Join(dir, "results", id))
	if err != nil || run.Status != outdir.StatusFailed || !re.MatchString(run.Reason) {
		t.Errorf("%s: %+v, %v; want failed, matching %s", outdir.RunFile, run, err, re)
	}
}
