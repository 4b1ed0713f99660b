package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"rsag/outdir"
)

// A hang names who it waits for: every rank keeps its step in memory and
// writes it to a heartbeat file in the output dir about once a second;
// when the watchdog fires or the launcher's signal comes, rank 0 reads
// them all and says, once, what every rank is doing. The faults come from
// outside: SIGSTOP, and testdata/vanish.c, which makes a rank exit inside
// MPI_Allreduce without a word.

// hangTiming is a long timing phase with a 5 s deadline.
func hangTiming(dir string) []string { return hangTimingWithin(dir, "5") }

// hangTimingWithin is a long timing phase with a deadline of timeout
// seconds (fractions too).
func hangTimingWithin(dir, timeout string) []string {
	return append([]string{"-output-dir", dir, "-set", "timeout_s=" + timeout, "-set", "startup_timeout_s=60"}, longTiming...)
}

// hangSaid asserts what rank 0 said, once, and what run.json's reason
// says: the same hang, matching re.
func hangSaid(t *testing.T, stderr, dir string, re *regexp.Regexp) {
	t.Helper()
	var said []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.Contains(l, "hang: ") {
			said = append(said, l)
		}
	}
	if len(said) != 1 || !strings.HasPrefix(said[0], "rsag: rank 0 (") || !re.MatchString(said[0]) {
		t.Errorf("rank 0 said the hang %d times, want once matching %s:\n%s", len(said), re, stderr)
	}
	run := notComplete(t, dir)
	if run.Status != outdir.StatusFailed || !re.MatchString(run.Reason) {
		t.Errorf("%s: %s %q; want failed, matching %s", outdir.RunFile, run.Status, run.Reason, re)
	}
	if t.Failed() {
		beats, _ := filepath.Glob(filepath.Join(dir, outdir.BeatPrefix+"*"))
		for _, b := range beats {
			data, _ := os.ReadFile(b)
			t.Logf("%s: %s", filepath.Base(b), data)
		}
	}
}

// endedSoon asserts that a job whose rank was struck at ` at ` ended
// within limit of it, non-zero.
func endedSoon(t *testing.T, j *job, at time.Time, limit time.Duration) {
	t.Helper()
	code := j.wait(t, time.Minute)
	if took := time.Since(at); code == 0 || took > limit {
		_, stderr := j.output()
		t.Errorf("exit %d %.1f s after the fault, want non-zero within %v\n%s", code, took.Seconds(), limit, stderr)
	}
	t.Logf("ended %.1f s after the fault", time.Since(at).Seconds())
}

// keepStopped SIGSTOPs pid and, at the test's end, lets it go and kills
// it, should the launcher not have.
func keepStopped(t *testing.T, pid int) time.Time {
	t.Helper()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if outdir.ProcState(pid) == "T" {
			syscall.Kill(pid, syscall.SIGKILL)
			syscall.Kill(pid, syscall.SIGCONT)
		}
	})
	return time.Now()
}

// stopRankOne starts a job with start, in a new dir, and stops its rank 1
// once its heartbeat says it is in the timing phase's cycles, and a beat
// (of the job's binary: outdir.BeatEvery, or fastBeat) later; it asserts
// that the job ends within stoppedWithin of it, and returns the dir, the
// rank's pid and what the job said. A job that rsag's start-up deadline
// ended before any cycle fails the test (pastStartup).
func stopRankOne(t *testing.T, beat time.Duration, start func(dir string) *job) (dir string, pid int, stderr string) {
	t.Helper()
	var j *job
	pastStartup(t, func() string {
		dir = t.TempDir()
		j = start(dir)
		if waitTiming(t, j, dir, 1, time.Minute) {
			return ""
		}
		_, stderr := j.output()
		if !startupOverran(stderr) {
			t.Fatalf("the job ended before rank 1's heartbeat said timing, cycle 1 or later\n%s", stderr)
		}
		return stderr
	})
	time.Sleep(beat)
	pid = j.rankPID(t, 1)
	at := keepStopped(t, pid)
	endedSoon(t, j, at, stoppedWithin)
	_, stderr = j.output()
	return dir, pid, stderr
}

// stoppedWithin bounds how long a job with a stopped rank takes to end:
// timeout_s (at most 5 s), the watchdog's check (0.5 s) and a few seconds,
// which a loaded machine stretches. Without the watchdog it would not end at all
// (the rank stays stopped until the test's end), so the bound tells the
// two apart with room to spare.
const stoppedWithin = 30 * time.Second

// waitTiming waits until rank's heartbeat, in dir's heartbeat files, says
// it is in the timing phase's cycles, past the first (not its warm-up),
// and says whether it did before the job ended: a fixed sleep can end
// before the run has even started MPI on a loaded machine (then the fault
// the test means for the timing phase strikes its start-up).
func waitTiming(t *testing.T, j *job, dir string, rank int, limit time.Duration) bool {
	t.Helper()
	var last outdir.Beat
	for deadline := time.Now().Add(limit); ; {
		if run, err := outdir.ReadRecord(dir); err == nil && run.Status == outdir.StatusRunning {
			beats, _ := outdir.ReadBeats(dir, outdir.RunID(run.Host, run.PID, run.Started))
			b, ok := beats[rank]
			if ok && b.Step.Phase == "timing" && strings.HasSuffix(b.Step.Context, "cycle") && b.Step.Round >= 1 {
				return true
			}
			last = b
		}
		select {
		case <-j.done:
			return false
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("rank %d's heartbeat did not say timing, cycle 1 or later, within %v: %+v", rank, limit, last)
		}
	}
}

// A rank stopped mid-timing on one host: the job ends within timeout_s
// and a few seconds, and rank 0 names the rank, its host and pid, says it
// is stopped (its state, read from /proc), and what rank 0 waits in. On
// the product binary, with beats a second apart and timeout_s = 5: the
// real cadence of the beats and the hang they name (cadence_test.go).
func TestAStoppedRankIsNamedRealCadence(t *testing.T) {
	t.Parallel()
	dir, pid, stderr := stopRankOne(t, outdir.BeatEvery, func(dir string) *job { return startJob(t, 2, nil, hangTiming(dir)...) })
	host := regexp.QuoteMeta(hostname(t))
	// Stopped, as /proc says, or, when the launcher woke it before rank 0
	// looked, as it says itself.
	hangSaid(t, stderr, dir, regexp.MustCompile(`hang: ranks? [0-9,]+ waits? in timing (all-reduce|reduce-scatter \+ all-gather) #\d+ \(4096 bytes, (direct|decomposed), cycle \d+\) for [0-9.]+ s; `+
		fmt.Sprintf(`rank 1 on %s \(pid %d\) (is stopped \(state T\)|did not run for [0-9.]+ s \(stopped, e.g. by SIGSTOP, or frozen\)); its last heartbeat, [0-9.]+ s ago, `, host, pid)))
}

// The same, for samples taken in one C call (configs/bench-imb.toml):
// every sample is a step of its own, and the hang names the cycle. On the
// test build's cadence (fastRsag), with timeout_s = 2 (at 1, beside a
// second suite, a starved rank 1 overran it before the stop).
func TestAStoppedRankIsNamedInSamplesTakenInOneCall(t *testing.T) {
	t.Parallel()
	bin := fastRsag(t)
	dir, pid, stderr := stopRankOne(t, beatOf(bin), func(dir string) *job {
		// Samples of 2 operations, one warm-up: a sample is a step of its
		// own, and 5 warm-ups of bench-imb's 100 once overran timeout_s on
		// a loaded machine, before the fault, as did one warm-up of 10
		// (2.4 s) beside a second suite.
		return startJobOf(t, bin, 2, nil, "-output-dir", dir, "-set", "timeout_s="+within(2), "-set", "startup_timeout_s=60",
			"-config", "../configs/bench-imb.toml", "-set", "timing.sizes_bytes=[4096]", "-set", "timing.cycles=1000000",
			"-set", "timing.batch=2", "-set", "timing.warmups=1")
	})
	host := regexp.QuoteMeta(hostname(t))
	hangSaid(t, stderr, dir, regexp.MustCompile(`hang: rank 0 waits in timing all-reduce #\d+ \(4096 bytes, direct, cycle [1-9]\d*\) for [0-9.]+ s; `+
		fmt.Sprintf(`rank 1 on %s \(pid %d\) (is stopped \(state T\)|did not run for [0-9.]+ s \(stopped, e.g. by SIGSTOP, or frozen\)); its last heartbeat, [0-9.]+ s ago, `, host, pid)))
}

// A rank that exits inside MPI_Allreduce without a word (status 0, no
// message, no note, no last heartbeat: testdata/vanish.c) is named the
// same way once the launcher ends the job (fastRsag, timeout_s = 2: at 1,
// a rank 0 starved by the tests beside it overran it before the fault).
func TestARankThatExitsWithoutAWordIsNamed(t *testing.T) {
	t.Parallel()
	bin := fastRsag(t)
	var dir string
	args := []string{"-x", "LD_PRELOAD=" + preload(t, "vanish"), "-x", "VANISH_RANK=1", "-x", "VANISH_CALL=Allreduce",
		"-x", "VANISH_BYTES=4096", "-x", "VANISH_AFTER=300"}
	var at time.Time
	var r result
	pastStartup(t, func() string {
		dir = t.TempDir()
		at = time.Now()
		// The rank exits at its 301st AllReduce, which a loaded machine
		// reaches late (its 3001st took over 3 minutes beside busy loops
		// on both cores): the limit bounds a hang, not the run's pace.
		r = launchWithOf(t, bin, 2, 2*time.Minute, args, hangTimingWithin(dir, within(2))...)
		if startupOverran(r.stderr) {
			return r.stderr
		}
		return ""
	})
	if r.code == 0 || !strings.Contains(r.stderr, "vanish.c: rank 1 exits in MPI_Allreduce (4096 bytes), call 301") {
		t.Fatalf("exit %d; the fault was not injected:\n%s", r.code, r.stderr)
	}
	host := regexp.QuoteMeta(hostname(t))
	hangSaid(t, r.stderr, dir, regexp.MustCompile(`hang: rank 0 waits in timing all-reduce #\d+ \(4096 bytes, direct, cycle 299\) for [0-9.]+ s; `+
		`rank 1 on `+host+` \(pid \d+\) exited without a word: its process is gone and it wrote no last heartbeat; its last heartbeat`))
	t.Logf("ended %.1f s after it started", time.Since(at).Seconds())
}

// startupOverran says a job's stderr is rsag's start-up deadline ending it
// (job.startMPI): MPI_Init did not return on every rank within timeout_s.
func startupOverran(stderr string) bool {
	return strings.Contains(stderr, "rsag: MPI start-up: waited ")
}

// pastStartup runs try once and fails the test when it returns the stderr
// of a job that rsag's start-up deadline ended before the fault it
// carries had its chance; "" is a job that got past start-up. The jobs
// give start-up a minute of its own (startup_timeout_s) beside their
// short timeout_s, which a loaded machine's MPI_Init once overran.
func pastStartup(t testing.TB, try func() (overran string)) {
	t.Helper()
	if stderr := try(); stderr != "" {
		t.Fatalf("MPI start-up overran its deadline, before the fault:\n%s", stderr)
	}
}

// Across two emulated hosts (TestMultiNode's), ranks 0,1 on node1 and
// 2,3 on node2: rank 2 stopped mid-timing is named by rank 0 on node1,
// which cannot see node2's processes, through rank 3's heartbeat, which
// can; and a rank that exits without a word there is named too. On the
// short cadence (fastRsag: beats of 0.2 s, a rank silent after 0.6 s) with
// timeout_s 1.5; TestAStoppedRankIsNamedRealCadence keeps the real one.
func (m *multi) testHangsAcrossHosts(t *testing.T) {
	bin := fastRsag(t)
	beat := beatOf(bin)
	for _, c := range []struct {
		name   string
		mpirun []string
		fault  func(t *testing.T) time.Time
		want   string
	}{
		{"a stopped rank", nil, func(t *testing.T) time.Time { return keepStopped(t, m.rankPIDOn(t, "node2", 2, "hang-a-stopped-rank")) },
			// Or, when rank 3 was itself starved on a loaded machine, silent with no
			// one on node2 to say why (as TestSlurmTwoNodes allows).
			`rank 2 on node2 \(pid \d+\) (is stopped \(state T, seen by rank 3 on node2 [0-9.]+ s ago\)|did not run for [0-9.]+ s \(stopped, e.g. by SIGSTOP, or frozen\) until it was woken|` +
				`has written no heartbeat for [0-9.]+ s, and no rank on node2 can say why \(stopped, killed, or its node gone\); its last heartbeat, [0-9.]+ s ago, ` +
				`(written [0-9.]+ s before ranks? [0-9,]+ began to wait, )?had it [^;]*in timing )`},
		{"a rank that exits without a word", []string{"-x", "LD_PRELOAD=" + preloadIn(t, "vanish", m.shared), "-x", "VANISH_RANK=2",
			"-x", "VANISH_CALL=Allreduce", "-x", "VANISH_BYTES=4096", "-x", "VANISH_AFTER=50"}, nil,
			`rank 2 on node2 \(pid \d+\) exited without a word: its process is gone, seen by rank 3 on node2 [0-9.]+ s ago and it wrote no last heartbeat`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(m.shared, "hang-"+strings.ReplaceAll(c.name, " ", "-"))
			cmd := m.commandOf(context.Background(), bin, nil, append([]string{"--host", "node1:2,node2:2", "--map-by", "slot"}, c.mpirun...),
				append([]string{"-output-dir", dir, "-set", "timeout_s=" + within(1.5), "-set", "startup_timeout_s=60"}, longTiming[4:]...)...)
			j := startCmd(t, cmd)
			at, limit := time.Now(), time.Minute // from its start: the rank exits at its 51st AllReduce
			if c.fault != nil {
				j.waitLine(t, "contracts: 5 held on every rank", time.Minute)
				time.Sleep(3 * beat) // into the timing phase, a few beats
				at, limit = c.fault(t), stoppedWithin
			}
			endedSoon(t, j, at, limit)
			_, stderr := j.output()
			hangSaid(t, stderr, dir, regexp.MustCompile(`hang: ranks? [0-9,]+ waits? in timing .*`+c.want))
		})
	}
}

// rankPIDOn finds rank's rsag process among host's, of the job whose
// output dir's name is dir.
func (m *multi) rankPIDOn(t *testing.T, host string, rank int, dir string) int {
	t.Helper()
	want := []byte(fmt.Sprintf("OMPI_COMM_WORLD_RANK=%d\x00", rank))
	for _, pid := range m.h.PIDs(t, host) {
		exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		env, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		args, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if filepath.Base(exe) == filepath.Base(rsagBin) && bytes.Contains(env, want) && bytes.Contains(args, []byte(dir)) {
			return pid
		}
	}
	t.Fatalf("no rsag process of rank %d on %s", rank, host)
	return 0
}
