package e2e

import (
	"bufio"
	"bytes"

	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"rsag/internal/testkit/outcheck"
	"rsag/outdir"
)

// These tests break a running job the ways clusters do (a stalled rank, a
// killed rank, the launcher's SIGTERM) and assert that it ends within a
// bound, exits non-zero, and leaves no output dir that claims completeness.

// job is rsag started under mpirun with its output streamed, so a test can
// act at a moment of the run.
type job struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	stdout bytes.Buffer
	stderr bytes.Buffer
	lines  chan string // rank 0's stdout, line by line
	done   chan struct{}
	err    error
}

func startJob(t *testing.T, np int, env []string, args ...string) *job {
	t.Helper()
	cmd := exec.Command("../scripts/mpirun.sh", append([]string{strconv.Itoa(np), rsagBin}, args...)...)
	cmd.Env = jobEnv(t, env...)
	return startCmd(t, cmd)
}

// startCmd starts a launcher command as a job.
func startCmd(t *testing.T, cmd *exec.Cmd) *job {
	t.Helper()
	// Its own process group, so a test that fails can end every process.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if cmd.Env == nil {
		cmd.Env = jobEnv(t)
	}
	j := &job{cmd: cmd, lines: make(chan string, 1000), done: make(chan struct{})}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = &lockedWriter{mu: &j.mu, w: &j.stderr}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			j.mu.Lock()
			j.stdout.WriteString(sc.Text() + "\n")
			j.mu.Unlock()
			select {
			case j.lines <- sc.Text():
			default:
			}
		}
		j.err = cmd.Wait()
		close(j.done)
	}()
	t.Cleanup(func() {
		select {
		case <-j.done:
			return
		default:
		}
		// SIGTERM first: mpirun then ends the ranks, which Open MPI puts in
		// process groups of their own, out of reach of a kill of mpirun's.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-j.done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-j.done
		}
	})
	return j
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// output is what the job has said so far: its stdout, and its stderr
// with rsag's folded lines joined again (unfold), as result's stderr.
func (j *job) output() (string, string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.stdout.String(), unfold(j.stderr.String())
}

// rawStderr is the job's stderr as printed, rsag's lines folded at the
// terminal's width.
func (j *job) rawStderr() string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.stderr.String()
}

// waitLine waits for a line of rank 0's stdout containing s.
func (j *job) waitLine(t *testing.T, s string, limit time.Duration) {
	t.Helper()
	deadline := time.After(limit)
	for {
		select {
		case l := <-j.lines:
			if strings.Contains(l, s) {
				return
			}
		case <-j.done:
			out, errOut := j.output()
			t.Fatalf("the job ended before printing %q\nstdout:\n%s\nstderr:\n%s", s, out, errOut)
		case <-deadline:
			out, errOut := j.output()
			t.Fatalf("no %q within %v\nstdout:\n%s\nstderr:\n%s", s, limit, out, errOut)
		}
	}
}

// wait waits at most limit for the job to end and returns its exit code.
func (j *job) wait(t *testing.T, limit time.Duration) int {
	t.Helper()
	select {
	case <-j.done:
	case <-time.After(limit):
		out, errOut := j.output()
		t.Fatalf("the job did not end within %v\nits processes:\n%s\nstdout:\n%s\nstderr:\n%s", limit, j.processes(), out, errOut)
	}
	var exit *exec.ExitError
	if errors.As(j.err, &exit) {
		return exit.ExitCode()
	}
	if j.err != nil {
		t.Fatal(j.err)
	}
	return 0
}

// rankPID finds the rsag process of one of j's ranks: a child of j's
// mpirun (not a job another test runs at the same time, nor rank 0's
// guard, a child of rank 0) whose environment holds the rank Open MPI
// gives it.
func (j *job) rankPID(t *testing.T, rank int) int {
	t.Helper()
	want := []byte(fmt.Sprintf("OMPI_COMM_WORLD_RANK=%d\x00", rank))
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		exe, err := os.Readlink(filepath.Join(p, "exe"))
		if err != nil || filepath.Base(exe) != filepath.Base(rsagBin) || parentPID(p) != j.cmd.Process.Pid {
			continue
		}
		env, err := os.ReadFile(filepath.Join(p, "environ"))
		if err != nil || !bytes.Contains(env, want) {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(p))
		return pid
	}
	t.Fatalf("no rsag process of rank %d found among mpirun %d's children", rank, j.cmd.Process.Pid)
	return 0
}

// processes lists the job's launcher and every process below it, with
// its state and where the kernel has it wait: what a job that does not
// end was doing (a rank stuck in MPI_Finalize, a launcher that never
// reaped one).
func (j *job) processes() string {
	children := map[int][]int{}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		pid, _ := strconv.Atoi(filepath.Base(p))
		parent := parentPID(p)
		children[parent] = append(children[parent], pid)
	}
	var b strings.Builder
	var walk func(pid, depth int)
	walk = func(pid, depth int) {
		p := fmt.Sprintf("/proc/%d", pid)
		comm, _ := os.ReadFile(p + "/comm")
		wchan, _ := os.ReadFile(p + "/wchan")
		fmt.Fprintf(&b, "%s%d %s state %s wchan %s\n", strings.Repeat("  ", depth), pid, strings.TrimSpace(string(comm)),
			outdir.ProcState(pid), wchan)
		for _, c := range children[pid] {
			walk(c, depth+1)
		}
	}
	walk(j.cmd.Process.Pid, 0)
	return b.String()
}

// parentPID is the parent of the process at procDir (/proc/PID), 0 when
// it cannot be read: stat's fourth field, after the name in parentheses.
func parentPID(procDir string) int {
	b, err := os.ReadFile(filepath.Join(procDir, "stat"))
	if err != nil {
		return 0
	}
	fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(fields) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(fields[1])
	return ppid
}

// notComplete fails t when dir's run.json claims the run completed.
func notComplete(t *testing.T, dir string) outdir.Record {
	t.Helper()
	run, err := outdir.ReadRecord(dir)
	if err == nil && run.Status == outdir.StatusComplete {
		t.Errorf("%s says complete after a failed run: %+v", outdir.RunFile, run)
	}
	return run
}

// longTiming keeps the job in its timing phase for minutes: one small size,
// millions of cycles.
var longTiming = []string{"-config", "../configs/smoke.toml", "-backend", "mpi", "-set", "timing.cycles=50000000",
	"-set", "timing.sizes_bytes=[4096]", "-set", "memory.enabled=false"}

// One rank stalls in the timing phase, inside MPI_Allreduce at 215040
// bytes (testdata/stall.c, from outside rsag); the watchdog ends the job
// after timeout_s with a message naming the phase, the collective and its
// size. MPI's start-up has a minute of its own (startup_timeout_s): a
// loaded machine's MPI_Init once overran the 2 s. On the product binary,
// with timeout_s = 2 and rank 1's linger of a second: the real cadence of
// the watchdog and its linger (cadence_test.go).
func TestWatchdogEndsAStalledRankRealCadence(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	began := time.Now()
	j := startStalled(t, 2, stall(t, 1, "Allreduce", 215040),
		"-config", "../configs/smoke.toml", "-backend", "mpi", "-output-dir", dir, "-set", "timeout_s=2", "-set", "startup_timeout_s=60")
	code := j.wait(t, 2*time.Minute)
	took := time.Since(began)
	stdout, stderr := j.output()
	if code == 0 {
		t.Fatalf("exit 0 after a stall\n%s", stderr)
	}
	if !strings.Contains(stderr, "stall.c: rank 1 stalls in MPI_Allreduce (215040 bytes) for 600 s") {
		t.Errorf("the stall was not injected:\n%s", stderr)
	}
	// Whichever rank's deadline passes first speaks. Rank 0 names every
	// rank's part from the heartbeats before "aborting"; rank 1 does not.
	re := regexp.MustCompile(`rsag: rank ([01]) \([^)]+\): watchdog: timing all-reduce at 215040 bytes did not finish within 2s \(waited [0-9.]+s\)` +
		`(; hang: [^\n]+)?; aborting the job`)
	if m := re.FindStringSubmatch(stderr); m == nil {
		t.Errorf("no watchdog message matching %s:\n%s", re, stderr)
	} else if (m[1] == "0") != (m[2] != "") {
		t.Errorf("rank %s's watchdog message; want the hang named by rank 0 alone:\n%s", m[1], stderr)
	} else {
		t.Logf("rank %s spoke first", m[1])
	}
	// Rank 0's watchdog, when it spoke, ends its run with the verdict.
	// Rank 1's deadline passes about then too, and it waits a second
	// (watchdogLinger) before it exits and the launcher ends rank 0: on a
	// loaded machine rank 0 can take longer than that from its message to
	// its verdict. So a run without the verdict must be one where rank 1
	// said its own watchdog's message, and ended first.
	rank1 := regexp.MustCompile(`rsag: rank 1 \([^)]+\): watchdog: timing all-reduce at 215040 bytes did not finish within 2s`)
	if m := re.FindStringSubmatch(stderr); m != nil && m[1] == "0" {
		last := stdout[strings.LastIndexByte(strings.TrimRight(stdout, "\n"), '\n')+1:]
		switch {
		case !verdictRe.MatchString(strings.TrimSpace(last)) && rank1.MatchString(stderr):
			t.Logf("rank 0 was ended before its verdict: rank 1's watchdog ended it first, as it may on a loaded machine")
		default:
			if v := verdict(t, stdout); v != nil && (v[1] != "FAILED (exit 3)" || v[2] != "results in "+dir) {
				t.Errorf("the verdict of a run the watchdog ended: %q", v[0])
			}
		}
	}
	run := notComplete(t, dir)
	if run.Status != outdir.StatusFailed || !strings.Contains(run.Reason, "watchdog: timing all-reduce at 215040 bytes") {
		t.Errorf("%s: %+v; want failed with the watchdog's reason", outdir.RunFile, run)
	}
	t.Logf("the stalled job ended after %v with exit %d", took.Round(time.Millisecond), code)
}

// A second run into the same directory refuses to touch the first one's
// results unless -overwrite, which replaces them and nothing else. (Ranks
// in this process: -overwrite's representative under mpirun is
// TestNothingIsLost's.)
func TestExistingResultsNeedOverwrite(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	args := []string{"-config", "../configs/smoke.toml", "-backend", "mpi", "-output-dir", dir}
	if r := inproc(t, 2, time.Minute, args...); r.code != 0 {
		t.Fatalf("first run: exit %d\n%s", r.code, r.stderr)
	}
	first, err := outdir.ReadRecord(dir)
	// run.json, 9 CSVs, a heartbeat (one node), summary.json, 5 figures as PNG and SVG, report.html.
	if err != nil || first.Status != outdir.StatusComplete || len(first.Files) != 25 || first.Files[0] != outdir.RunFile {
		t.Fatalf("first run's %s: %+v, %v; want complete with 25 files, itself first", outdir.RunFile, first, err)
	}
	for _, f := range first.Files {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("%s lists %s: %v", outdir.RunFile, f, err)
		}
	}
	notes := filepath.Join(dir, "notes.txt")
	os.WriteFile(notes, []byte("mine"), 0o644)

	r := inproc(t, 2, time.Minute, args...)
	if r.code == 0 {
		t.Fatal("a second run overwrote the first without -overwrite")
	}
	saidOnce(t, r.stderr, "already holds results of an earlier run (run.json, ")
	if !strings.Contains(r.stderr, "pass -overwrite") {
		t.Errorf("the refusal does not say how to replace them:\n%s", r.stderr)
	}
	if again, _ := outdir.ReadRecord(dir); again.Started != first.Started {
		t.Errorf("the refused run touched %s: %+v", outdir.RunFile, again)
	}

	// A larger earlier run's file that this run.json does not list could be
	// anyone's: -overwrite refuses it (TestNothingIsLost); once it is gone,
	// -overwrite replaces the earlier run's files, and the user's stays.
	// run.json tells runs apart by their start, in whole seconds: the
	// next run starts in a second of its own.
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second)))
	r = inproc(t, 2, time.Minute, append(args, "-overwrite", "-set", "memory.enabled=false")...)
	if r.code != 0 {
		t.Fatalf("-overwrite: exit %d\n%s", r.code, r.stderr)
	}
	second, err := outdir.ReadRecord(dir)
	if err != nil || second.Status != outdir.StatusComplete || second.Started == first.Started {
		t.Fatalf("after -overwrite: %+v, %v", second, err)
	}
	// The first run's memory files, which the second does not write, are gone.
	for _, f := range first.Files {
		_, err := os.Stat(filepath.Join(dir, f))
		if listed := slices.Contains(second.Files, f); listed != (err == nil) {
			t.Errorf("%s: listed by the second run %v, present %v", f, listed, err == nil)
		}
	}
	if b, err := os.ReadFile(notes); err != nil || string(b) != "mine" {
		t.Errorf("-overwrite touched a file that is not rsag's: %q, %v", b, err)
	}
}

// Many cycles in one job, with a deadline small enough to trip on any step
// that stalls, every sample and output checked: 200 cycles of 3 sizes and
// 2 modes, 1200 samples a rank. The full tier runs 500 under mpirun (4.5 s
// alone, 11 s beside other engineers' builds), where a stall would be
// MPI's; make test's twin runs 200 on goroutine ranks of this process
// (inprocMPI), where the harness's own steps meet the same deadline and
// every output the same checks (the MPI backend on 4 ranks is
// TestCh7ShapeOnFourRanks').
func TestSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	cycles, run := 200, inprocMPI
	if fullTier() {
		cycles, run = 500, mpirun
	} else {
		t.Parallel() // no process of its own: beside the others, as they are
	}
	dir := t.TempDir()
	start := time.Now()
	r := run(t, 4, 4*time.Minute, "-config", "../configs/smoke.toml", "-backend", "mpi", "-output-dir", dir,
		"-set", "timeout_s=20", "-set", fmt.Sprintf("timing.cycles=%d", cycles))
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	want := outcheck.Smoke(4)
	want.Cycles = cycles
	if err := outcheck.Check(dir, want); err != nil {
		t.Fatal(err)
	}
	if run, err := outdir.ReadRecord(dir); err != nil || run.Status != outdir.StatusComplete {
		t.Errorf("%s: %+v, %v", outdir.RunFile, run, err)
	}
	t.Logf("%d cycles x 3 sizes on 4 ranks took %v", cycles, time.Since(start).Round(time.Millisecond))
}

// Bad flags and contradictions fail on every rank before any collective,
// naming the flag, and leave nothing behind. The flags are main's to read
// (cli.go, whose TestContradictoryFlags holds each message): one runs
// under mpirun, where main parses them on every rank (inproc's flagOptions
// does not say "given twice"), and the other contradictions main refuses
// alike only in the full tier; a bad value the config refuses runs in
// this process. A bad environment is TestABadWaitModeIsRefused's.
func TestBadFlagsFailOnEveryRank(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		args []string
		want string
		// full: under mpirun in the full tier only; make test's twin is
		// "output dir twice", the same path from main's parse to every
		// rank's refusal.
		full bool
	}{
		{"output dir twice", []string{"-output-dir", "elsewhere"}, `invalid value "elsewhere" for flag -output-dir: given twice with different values`, false},
		{"backend contradicts -set", []string{"-backend", "mpi", "-set", "backend=nccl"}, "-backend mpi contradicts -set backend=nccl", true},
		{"-set twice", []string{"-set", "timing.cycles=3", "-set", "timing.cycles=5"}, "-set timing.cycles is given twice with different values (3 and 5)", true},
		{"zero timeout", []string{"-set", "timeout_s=0"}, "timeout_s: 0 is not a deadline", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.full {
				onlyInFullTier(t, "TestBadFlagsFailOnEveryRank/output_dir_twice")
			}
			t.Parallel() // refusals, before any collective: nothing here is timed
			out := t.TempDir()
			args := append([]string{"-config", "../configs/smoke.toml", "-output-dir", out}, c.args...)
			var code int
			var stderr string
			if c.name == "zero timeout" {
				r := inproc(t, 2, time.Minute, args...)
				code, stderr = r.code, r.stderr
			} else {
				j := startJob(t, 2, nil, args...)
				code = j.wait(t, time.Minute)
				_, stderr = j.output()
			}
			if code == 0 {
				t.Fatalf("exit 0 for a bad input")
			}
			if code != 2 {
				t.Errorf("exit %d, want 2 (a bad input)", code)
			}
			saidOnce(t, stderr, c.want)
			if entries, _ := os.ReadDir(out); len(entries) > 0 {
				t.Errorf("a refused run left files: %v", entries)
			}
		})
	}
}
