package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// A process of the job that exits before MPI_Init (an MPMD part that is
// not rsag) left rank 0 waiting in MPI_Init with no word, past the 180 s
// default: the watchdog starts only once MPI has. Start-up has its own
// deadline (timeout_s from -set, else the default): rank 0 says what it
// waited for, once, and the job ends non-zero within it, writing nothing.
// A deadline of a second, on the test build's cadence (fastRsag).
func TestARankThatNeverJoinsMPIEndsTheJob(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "out")
	start := time.Now()
	// It fails cleanly, rank 0 having said why: no grace for the launcher.
	r := launchEnv(t, time.Minute, []string{killAtOnce}, append(append([]string{"../scripts/mpirun.sh", "1", fastRsag(t), "-output-dir", out, "-set", "timeout_s=1"}, smoke...),
		":", "-np", "1", "sh", "-c", "exit 0")...)
	took := time.Since(start)
	if r.code == 0 {
		t.Fatalf("exit 0 with a rank that never started\n%s", r.stderr)
	}
	re := regexp.MustCompile(`(?m)^rsag: MPI start-up: waited 1(\.[0-9])?s for the other ranks of the job to join MPI_Init \(rank 0 of 2, on [^)]+\); ` +
		`a process of the job exited before it or was never started .*: ending the job\. The deadline is (startup_timeout_s or )?timeout_s when -set gives it, else 180 s$`)
	// Open MPI may notice the process that never called MPI_Init first,
	// on a loaded machine, and end the job itself with its own message
	// naming that rank: the job still ends, non-zero and said.
	launcher := regexp.MustCompile(`(?s)process rank 1 with PID \d+ on\s+node \S+ exiting\s+improperly`)
	switch n := len(re.FindAllString(r.stderr, -1)); {
	case n == 0 && launcher.MatchString(r.stderr):
		t.Logf("mpirun ended the job before rsag's start-up deadline, naming rank 1")
	case n != 1:
		t.Errorf("the start-up message %d times, want once, matching %s (or mpirun's, naming rank 1):\n%s", n, re, r.stderr)
	}
	if took > 40*time.Second {
		t.Errorf("the job took %v to end with a 1 s start-up deadline", took.Round(time.Millisecond))
	}
	if _, err := os.Lstat(out); err == nil {
		t.Errorf("a job that never started left %s behind", out)
	}
	t.Logf("ended after %v with exit %d", took.Round(time.Millisecond), r.code)
}

// A rank that joined MPI_Init but never reaches rsag's first collective
// (here it stalls in it: testdata/stall.c) is waited for under the
// start-up's deadline, -set timeout_s, not the default 180 s, and named as
// that first agreement. On a loaded machine MPI_Init itself can overrun
// the 1 s: then the same deadline ends the job at MPI's start-up, before
// the stall, which is what is asserted either way: a start-up bounded by
// -set timeout_s, and said. On the test build's cadence (fastRsag).
func TestAStalledFirstAgreementIsBounded(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "out")
	start := time.Now()
	// It fails cleanly, the rank whose deadline passed having said why: no
	// grace for the launcher.
	j := startStalledOf(t, fastRsag(t), 2, []string{killAtOnce}, stall(t, 1, "Allgather", -1), append([]string{"-output-dir", out, "-set", "timeout_s=1"}, smoke...)...)
	code := j.wait(t, time.Minute)
	took := time.Since(start)
	_, stderr := j.output()
	if code == 0 {
		t.Fatalf("exit 0 with a stalled rank\n%s", stderr)
	}
	// Both ranks' start-up deadlines pass at about the same time (rank 1's
	// watchdog runs beside its stalled call): whichever speaks first ends
	// the job, and the launcher may end the other before it says a word.
	agreement := regexp.MustCompile(`rsag: rank [01] \([^)]+\): watchdog: startup first agreement between ranks after MPI start-up \(every rank of the job must reach it\) did not finish within 1s`)
	mpiInit := regexp.MustCompile(`(?m)^rsag: MPI start-up: waited 1(\.[0-9])?s for the other ranks of the job to join MPI_Init`)
	switch m := agreement.FindString(stderr); {
	case m != "":
		if !strings.Contains(stderr, "stall.c: rank 1 stalls in MPI_Allgather") {
			t.Errorf("the stall was not injected:\n%s", stderr)
		}
		t.Logf("%.12s spoke first", strings.TrimPrefix(m, "rsag: "))
	case mpiInit.MatchString(stderr):
		t.Logf("MPI_Init overran the 1 s on this loaded machine: the start-up deadline ended the job before the stall")
	default:
		t.Errorf("no message matching %s (or %s):\n%s", agreement, mpiInit, stderr)
	}
	if took > 40*time.Second {
		t.Errorf("the job took %v to end with a 1 s start-up deadline", took.Round(time.Millisecond))
	}
	if _, err := os.Lstat(out); err == nil {
		t.Errorf("a job stopped at its first agreement left %s behind", out)
	}
}

// -set startup_timeout_s bounds MPI's start-up apart from timeout_s: a
// rank that never joins is waited for half a second (a fraction), though
// timeout_s is a day.
func TestStartupHasADeadlineOfItsOwn(t *testing.T) {
	t.Parallel()
	r := launchEnv(t, time.Minute, []string{killAtOnce}, append(append([]string{"../scripts/mpirun.sh", "1", fastRsag(t), "-output-dir", filepath.Join(t.TempDir(), "out"),
		"-set", "timeout_s=86400", "-set", "startup_timeout_s=0.5"}, smoke...), ":", "-np", "1", "sh", "-c", "exit 0")...)
	if r.code == 0 {
		t.Fatalf("exit 0 with a rank that never started\n%s", r.stderr)
	}
	// As in TestARankThatNeverJoinsMPIEndsTheJob, Open MPI may end the job
	// first, naming rank 1; what must never be is a wait of a day.
	re := regexp.MustCompile(`(?m)^rsag: MPI start-up: waited ([5-9]00ms|[1-9](\.[0-9])?s) for the other ranks`)
	launcher := regexp.MustCompile(`(?s)process rank 1 with PID \d+ on\s+node \S+ exiting\s+improperly`)
	if !re.MatchString(r.stderr) && !launcher.MatchString(r.stderr) {
		t.Errorf("no start-up message matching %s (or mpirun's, naming rank 1):\n%s", re, r.stderr)
	}
}
