// Package slurm_test runs slurm/ch7.sbatch and slurm/healthcheck.sbatch on
// a real Slurm cluster that slurm/local-cluster.sh brings up on this
// machine (and tears down again): four nodes emulated by scripts/hosts.sh
// (each its own network, hostname, IPC, /tmp and /dev/shm; munged and
// slurmctld on head). One cluster serves the whole package (issue 56): the
// first test that needs it starts it, TestMain stops it once every test has
// ended. Each test has its own submit dirs, and leaves the cluster as it
// found it: a node it drains is resumed and a slurmd it kills is started
// anew when it ends (restore). TestSlurm runs on one node, TestSlurmTwoNodes
// on two, TestSlurmHealth (health_test.go) on all four, one of them slowed
// with a rate limit.
//
// The tests are off unless RSAG_SLURM_TESTS=1 (make test sets it). When on,
// anything missing is a failure, not a skip. They need:
//   - root (the script starts munged, slurmctld and slurmd; it installs
//     slurm-wlm and munge with apt-get when they are missing);
//   - RSAG_BIN: absolute path of an rsag binary (the Makefile builds it);
//   - RSAG_FAST_BIN: absolute path of its short-cadence twin, built with
//     -tags rsag_fastcadence (the Makefile builds .build/fast/rsag), which
//     the stopped rank runs; the full tier (RSAG_TEST_FULL=1) runs RSAG_BIN
//     there instead and needs none;
//   - configs/smoke.toml in the repository root.
//
// Optional: RSAG_LAUNCHER / RSAG_LAUNCHER_ARGS (passed on to ch7.sbatch by
// the one-node tests; the two-node tests run both launchers).
//
//	sudo RSAG_SLURM_TESTS=1 RSAG_BIN=$PWD/rsag RSAG_FAST_BIN=$PWD/.build/fast/rsag go test -v -count=1 ./slurm/
package slurm_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
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

	"rsag/internal/fold"
	"rsag/internal/testkit/hosts"
	"rsag/internal/testkit/mpitesting"
	"rsag/internal/testkit/outcheck"
	"rsag/outdir"
)

// TestMain: the jobs' ranks, which reach them through the clients'
// environment (env), yield their cores while they wait, as e2e's do: both
// packages' jobs run side by side. The package's one cluster, if a test
// started it, is stopped once every test has ended.
func TestMain(m *testing.M) {
	if err := mpitesting.YieldWhenIdle(); err != nil {
		fmt.Fprintln(os.Stderr, "slurm tests:", err)
		os.Exit(1)
	}
	code := m.Run()
	if err := stopShared(); err != nil {
		fmt.Fprintln(os.Stderr, "slurm tests: stopping the cluster:", err)
		code = max(code, 1)
	}
	os.Exit(code)
}

const (
	startTimeout  = 5 * time.Minute // includes apt-get install on a bare machine
	stopTimeout   = 2 * time.Minute // the script bounds itself well below this
	submitTimeout = 180 * time.Second
	ranks         = 4 // ch7.sbatch default: 1 node x --ntasks-per-node=4
	// clusterNodes is the package's cluster: locate needs three nodes or
	// more to tell which of a slow pair is slow (docs/locate.md), and four
	// is what e2e's TestLocateFindsTheBadNode uses; the other tests use
	// the first one or two.
	clusterNodes = 4
)

// cluster is what the tests share: one running local cluster.
type cluster struct {
	repo      string // repository root
	sbatch    string // the real slurm/ch7.sbatch
	script    string // slurm/local-cluster.sh
	scriptEnv []string
	rsagBin   string // absolute path from RSAG_BIN
	// fastBin is RSAG_FAST_BIN, rsag built with -tags rsag_fastcadence
	// (beats, silences and lingers cadence.FastBy times shorter), which
	// the tests that wait on a product deadline run; RSAG_BIN in the full
	// tier.
	fastBin   string
	slurmConf string // SLURM_CONF for client commands
	slurmDir  string // the cluster's state (RSAG_SLURM_DIR)
	nodes     int    // --nodes the cluster was started with
	// hosts are the emulated hosts; every client runs on head.
	hosts      *hosts.Hosts
	submitRoot string // where submit dirs are made: shared with every host
}

func slurmTestsOn(t *testing.T) {
	if os.Getenv("RSAG_SLURM_TESTS") != "1" {
		t.Skip("Slurm tests are off: set RSAG_SLURM_TESTS=1, RSAG_BIN=/abs/path/to/rsag and RSAG_FAST_BIN (make test " +
			"builds both) and run as root (they start a local Slurm cluster with slurm/local-cluster.sh)")
	}
	if os.Geteuid() != 0 {
		t.Fatalf("RSAG_SLURM_TESTS=1 needs root (euid is %d): local-cluster.sh starts munged, slurmctld and slurmd", os.Geteuid())
	}
}

// shared is the package's one cluster, started by the first test that
// asks for it (theCluster) and stopped by TestMain.
var shared struct {
	once sync.Once
	c    *cluster
	log  string // local-cluster.sh start's output
	err  error
	stop struct {
		once sync.Once
		err  error
	}
}

// stopMargin is how long before the test binary's deadline the cluster is
// stopped: a binary that times out runs neither its cleanups nor the rest
// of TestMain (the next test run's hosts.sh gc would take the hosts down,
// not remove the cluster's files).
const stopMargin = 30 * time.Second

// theCluster is the package's running cluster, started on the first call;
// a start that failed fails every test that asks. When t ends, the cluster
// is restored: every node idle and undrained, every slurmd running.
func theCluster(t *testing.T) *cluster {
	t.Helper()
	slurmTestsOn(t)
	shared.once.Do(func() {
		t0 := time.Now()
		shared.c, shared.log, shared.err = startCluster(clusterNodes)
		t.Logf("local-cluster.sh start (%.1f s), for the package:\n%s", time.Since(t0).Seconds(), shared.log)
		if d, ok := t.Deadline(); ok && time.Until(d) > stopMargin { // the binary's, the same for every test
			time.AfterFunc(time.Until(d)-stopMargin, func() {
				fmt.Fprintln(os.Stderr, "slurm tests: the test deadline is near: stopping the cluster")
				stopShared()
			})
		}
	})
	if shared.err != nil {
		t.Fatalf("the package's cluster did not start: %v\n%s", shared.err, shared.log)
	}
	c := shared.c
	t.Cleanup(func() { c.restore(t) })
	return c
}

// stopShared stops the package's cluster, if a test started one, and
// checks that nothing of its hosts is left; once, whoever asks first.
func stopShared() error {
	shared.stop.once.Do(func() { shared.stop.err = stopCluster(shared.c) })
	return shared.stop.err
}

func stopCluster(c *cluster) error {
	if c == nil {
		return nil
	}
	var errs []error
	t0 := time.Now()
	out, err := runCmd(context.Background(), stopTimeout, "", c.scriptEnv, "bash", c.script, "stop")
	if err != nil {
		errs = append(errs, fmt.Errorf("local-cluster.sh stop: %w\n%s", err, out))
	}
	if err := c.hosts.Down(); err != nil {
		errs = append(errs, err)
	}
	if err := os.RemoveAll(c.submitRoot); err != nil {
		errs = append(errs, err)
	}
	if testing.Verbose() {
		fmt.Printf("slurm tests: local-cluster.sh stop (%.1f s):\n%s", time.Since(t0).Seconds(), out)
	}
	return errors.Join(errs...)
}

// startCluster checks the prerequisites and starts a cluster of nodes
// emulated hosts. On an error, what it had started is stopped.
func startCluster(nodes int) (c *cluster, log string, err error) {
	repo, err := filepath.Abs("..")
	if err != nil {
		return nil, "", err
	}
	c = &cluster{repo: repo, sbatch: filepath.Join(repo, "slurm", "ch7.sbatch"), script: filepath.Join(repo, "slurm", "local-cluster.sh"), nodes: nodes}
	for _, f := range []string{c.sbatch, c.script, filepath.Join(repo, "configs", "smoke.toml")} {
		if fi, err := os.Stat(f); err != nil || !fi.Mode().IsRegular() {
			return nil, "", fmt.Errorf("missing %s (%v)", f, err)
		}
	}
	if c.rsagBin, err = binFrom("RSAG_BIN"); err != nil {
		return nil, "", err
	}
	c.fastBin = c.rsagBin
	if os.Getenv("RSAG_TEST_FULL") != "1" {
		if c.fastBin, err = binFrom("RSAG_FAST_BIN"); err != nil {
			return nil, "", err
		}
		// Its ranks are found by the name of their executable, as the
		// product's are.
		if filepath.Base(c.fastBin) != filepath.Base(c.rsagBin) {
			return nil, "", fmt.Errorf("RSAG_FAST_BIN=%s: want a file named %s, as RSAG_BIN is", c.fastBin, filepath.Base(c.rsagBin))
		}
	}
	// Its own state directory (and so its own job ids, which
	// local-cluster.sh picks per cluster), so that another test binary's
	// cluster on this machine, a second make test's, is never this one;
	// the script shares it with the hosts. munged runs as munge, which
	// must reach its socket in it.
	if c.submitRoot, err = os.MkdirTemp("", "rsag-slurm-"); err != nil {
		return nil, "", err
	}
	if err := os.Chmod(c.submitRoot, 0o755); err != nil {
		return nil, "", err
	}
	c.slurmDir = filepath.Join(c.submitRoot, "cluster")
	share := []string{c.submitRoot}
	for _, bin := range []string{c.rsagBin, c.fastBin} {
		if d := filepath.Dir(bin); !strings.HasPrefix(bin, repo+"/") && !slices.Contains(share, d) {
			share = append(share, d)
		}
	}
	if c.hosts, err = hosts.Prepare(hosts.Config{Nodes: nodes, Share: share}); err != nil {
		os.RemoveAll(c.submitRoot)
		return nil, "", err
	}
	// A slurmd that stops answering fails its node after 10 s.
	c.scriptEnv = append(append(os.Environ(), "RSAG_SLURM_DIR="+c.slurmDir, "RSAG_SLURM_NODES="+strconv.Itoa(nodes), "RSAG_SLURMD_TIMEOUT=10"),
		c.hosts.Env()...)
	// From here on, whatever fails stops what was started (the stop
	// tolerates a half-failed start).
	shared.c = c
	out, err := runCmd(context.Background(), 10*time.Second, "", c.scriptEnv, "bash", c.script, "env")
	if err != nil || !strings.HasPrefix(out, "SLURM_CONF=") {
		return c, out, fmt.Errorf("local-cluster.sh env: %v", err)
	}
	c.slurmConf = strings.TrimPrefix(strings.Fields(out)[0], "SLURM_CONF=")
	out, err = runCmd(context.Background(), startTimeout, "", c.scriptEnv, "bash", c.script, "start")
	if err != nil {
		return c, out, fmt.Errorf("local-cluster.sh start: %w", err)
	}
	return c, out, nil
}

// binFrom is the executable the environment variable name gives, by its
// absolute path.
func binFrom(name string) (string, error) {
	bin := os.Getenv(name)
	switch fi, err := os.Stat(bin); {
	case bin == "":
		return "", fmt.Errorf("%s is not set: set it to the absolute path of the rsag binary (make test builds it)", name)
	case !filepath.IsAbs(bin):
		return "", fmt.Errorf("%s=%q is not an absolute path", name, bin)
	case err != nil:
		return "", fmt.Errorf("%s: %v", name, err)
	case !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0:
		return "", fmt.Errorf("%s=%s is not an executable file", name, bin)
	}
	return bin, nil
}

// restore gives the cluster back as the next test expects it
// (local-cluster.sh restore): a slurmd that a test killed is started anew,
// a node drained or down is resumed, and every node is idle.
func (c *cluster) restore(t *testing.T) {
	t0 := time.Now()
	out, err := runCmd(context.Background(), 2*time.Minute, "", c.scriptEnv, "bash", c.script, "restore")
	if err != nil {
		t.Errorf("local-cluster.sh restore: %v\n%s", err, out)
		return
	}
	if strings.TrimSpace(out) != "" {
		t.Logf("local-cluster.sh restore (%.1f s):\n%s", time.Since(t0).Seconds(), out)
	}
}

func TestSlurm(t *testing.T) {
	c := theCluster(t)
	t.Run("Smoke", func(t *testing.T) { testSmoke(t, c) })
	t.Run("BadConfig", func(t *testing.T) { testBadConfig(t, c) })
}

// testSmoke: the smoke config runs to completion on 4 ranks and leaves the
// expected files in the default output directory results/$SLURM_JOB_ID.
func testSmoke(t *testing.T, c *cluster) {
	dir := c.submitDir(t)
	j := c.submit(t, dir, "configs/smoke.toml", nil, nil)
	if got := j.fields["JobState"]; got != "COMPLETED" {
		t.Errorf("JobState=%s, want COMPLETED", got)
	}
	if got := j.fields["ExitCode"]; got != "0:0" {
		t.Errorf("ExitCode=%s, want 0:0", got)
	}
	if got := j.fields["NumTasks"]; got != fmt.Sprint(ranks) {
		t.Errorf("NumTasks=%s, want %d (ch7.sbatch default)", got, ranks)
	}
	if t.Failed() {
		t.FailNow()
	}
	assertOutputDir(t, filepath.Join(dir, "results", j.id), ranks)
}

// testBadConfig: a config with an unknown key makes rsag, and so the job, fail
// with a message naming the key.
func testBadConfig(t *testing.T, c *cluster) {
	dir := c.submitDir(t)
	if err := os.WriteFile(filepath.Join(dir, "bad.toml"), []byte("[timing]\nsizes_byte = [1024]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	j := c.submit(t, dir, "bad.toml", nil, nil)
	if got := j.fields["JobState"]; got != "FAILED" {
		t.Errorf("JobState=%s, want FAILED", got)
	}
	if got := j.fields["ExitCode"]; got == "" || strings.HasPrefix(got, "0:") {
		t.Errorf("ExitCode=%q, want a non-zero exit code", got)
	}
	if !strings.Contains(j.log, "sizes_byte") {
		t.Errorf("job log does not name the unknown key sizes_byte")
	}
}

// TestSlurmTwoNodes runs the real ch7.sbatch and srun on two nodes that
// share no memory (emulated hosts): every rank on its node with node-local
// ranks 0..1, under srun and under mpirun, and a node that dies ends the job.
func TestSlurmTwoNodes(t *testing.T) {
	c := theCluster(t)
	want := []string{"node1", "node1", "node2", "node2"} // -N 2 --ntasks-per-node=2, block
	t.Run("srun", func(t *testing.T) {
		dir := c.submitDir(t)
		out := filepath.Join(dir, "out")
		r, err := c.clientRun(dir, 2*time.Minute, "srun", "--mpi=pmix", "--kill-on-bad-exit=1", "-N", "2",
			"--ntasks-per-node=2", "--gpus-per-node=0", c.rsagBin, "-config", "configs/smoke.toml", "-backend", "mpi",
			"-output-dir", out)
		inconclusiveOnMPIInitCrash(t, "srun", r, err != nil)
		if err != nil {
			t.Fatalf("srun: %v\n%s", err, r)
		}
		assertOutputDir(t, out, 4)
		assertHosts(t, out, want)
		if !strings.Contains(r, "across 2 nodes") {
			t.Errorf("the timings table does not say the run spans nodes:\n%s", r)
		}
	})
	for _, launcher := range []string{"srun", "mpirun"} {
		t.Run("sbatch "+launcher, func(t *testing.T) {
			dir := c.submitDir(t)
			j := c.submit(t, dir, "configs/smoke.toml", []string{"-N", "2", "--ntasks-per-node=2"},
				[]string{"RSAG_LAUNCHER=" + launcher})
			for k, want := range map[string]string{"JobState": "COMPLETED", "ExitCode": "0:0", "NumNodes": "2", "NumTasks": "4"} {
				if got := j.fields[k]; got != want {
					t.Errorf("%s=%s, want %s", k, got, want)
				}
			}
			if t.Failed() {
				t.FailNow()
			}
			out := filepath.Join(dir, "results", j.id)
			assertOutputDir(t, out, 4)
			assertHosts(t, out, want)
		})
	}
	t.Run("a stopped rank is named", c.testStoppedRank)
	// The node-death tests come last: the second leaves node2 down.
	t.Run("killed ranks of a node end the job", func(t *testing.T) {
		c.testNodeDies(t, "node2's ranks (SIGKILL)", func(t *testing.T) {
			var killed []int
			for _, pid := range c.hosts.PIDs(t, "node2") {
				if exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); filepath.Base(exe) == filepath.Base(c.rsagBin) {
					if syscall.Kill(pid, syscall.SIGKILL) == nil {
						killed = append(killed, pid)
					}
				}
			}
			if len(killed) != 2 {
				t.Fatalf("killed %v on node2, want its 2 ranks", killed)
			}
		}, time.Minute, []string{"FAILED"}, regexp.MustCompile(`node2: tasks? (2-3|2|3): Killed`)) // srun says the two at once, or one by one
	})
	t.Run("a dead slurmd ends the job", func(t *testing.T) {
		c.testNodeDies(t, "node2's slurmd (SIGKILL)", func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(c.slurmDir, "run", "slurmd-node2.pid"))
			pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil || pid <= 0 {
				t.Fatalf("slurmd-node2.pid: %q, %v", b, err)
			}
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			// slurmctld fails the node after SlurmdTimeout=10 s, and kills
			// its job.
		}, 2*time.Minute, []string{"NODE_FAIL"}, regexp.MustCompile(`srun: error: Node failure on node2`))
	})
}

// testNodeDies starts a job that times for minutes on 2+2 ranks, waits
// until it is timing, kills part of node2 and asserts that the job ends
// within limit in one of states, that the job log names the node (logSays),
// and that run.json says failed.
func (c *cluster) testNodeDies(t *testing.T, what string, kill func(*testing.T), limit time.Duration, states []string, logSays *regexp.Regexp) {
	t.Cleanup(func() { c.restore(t) }) // node2's slurmd, if killed, runs anew
	dir := c.submitDir(t)
	id := c.startTiming(t, dir, c.rsagBin, "timeout_s=600")
	time.Sleep(time.Second) // into the timing phase
	kill(t)
	at := time.Now()
	j := c.waitJob(t, dir, id, limit)
	t.Logf("killed %s: job %s ended %.1f s later in %s, ExitCode=%s, Reason=%s", what, id, time.Since(at).Seconds(),
		j.fields["JobState"], j.fields["ExitCode"], j.fields["Reason"])
	if !slices.Contains(states, j.fields["JobState"]) {
		t.Errorf("JobState=%s, want one of %v", j.fields["JobState"], states)
	}
	if !logSays.MatchString(j.log) {
		t.Errorf("the job log does not match %s", logSays)
	}
	run, err := outdir.ReadRecord(filepath.Join(dir, "results", id))
	if err != nil || run.Status != outdir.StatusFailed {
		t.Errorf("%s: %+v, %v; want failed", outdir.RunFile, run, err)
	}
}

// assertOutputDir checks the output directory with the same checker as the
// mpirun end-to-end tests: every file, row and value of a smoke run.
func assertOutputDir(t *testing.T, dir string, ranks int) {
	t.Helper()
	if err := outcheck.Check(dir, outcheck.Smoke(ranks)); err != nil {
		t.Errorf("output dir %s: %v", dir, err)
	}
}

// assertHosts checks every rank's host and node-local rank.
func assertHosts(t *testing.T, dir string, hosts []string) {
	t.Helper()
	if err := outcheck.CheckHosts(dir, hosts); err != nil {
		t.Errorf("output dir %s: %v", dir, err)
	}
}

// submitDir makes a fresh submit directory with configs/ linked in, under
// submitRoot, which every host sees.
func (c *cluster) submitDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp(c.submitRoot, "submit-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(c.repo, "configs"), filepath.Join(dir, "configs")); err != nil {
		t.Fatal(err)
	}
	return dir
}

type job struct {
	id     string
	fields map[string]string // `scontrol show job -o` once the job has ended
	log    string            // the job's output file (%x-%j.out), rsag's folded lines joined again (fold.Unfold)
}

// jobEnv is what ch7.sbatch is given.
func (c *cluster) jobEnv(config string, extra []string) []string {
	return c.env(append([]string{"RSAG_BIN=" + c.rsagBin, "RSAG_BACKEND=mpi", "RSAG_CONFIG=" + config}, extra...))
}

// submit runs the real ch7.sbatch with `sbatch --parsable --gpus-per-node=0
// [sbatchArgs]` from dir and returns the job once it has ended, within
// submitTimeout; a job whose rank crashed inside MPI_Init leaves its test
// inconclusive (inconclusiveOnMPIInitCrash). Everything useful for
// debugging is logged. The job's exit status is the controller's record of
// it (ExitCode), which is what `sbatch --wait` exits with; the test does
// not wait with sbatch --wait, which polls every 2 s and, on a loaded
// machine, can poll after the controller has purged the job: it then says
// "no longer found" and exits 0.
func (c *cluster) submit(t *testing.T, dir, config string, sbatchArgs, extraEnv []string) job {
	t.Helper()
	t0 := time.Now()
	id := c.start(t, dir, config, sbatchArgs, extraEnv)
	j := c.waitJob(t, dir, id, submitTimeout)
	t.Logf("job %s ended %.1f s after sbatch", id, time.Since(t0).Seconds())
	inconclusiveOnMPIInitCrash(t, "sbatch", j.log, j.fields["JobState"] != "COMPLETED")
	return j
}

// start submits ch7.sbatch without waiting and returns the job id.
func (c *cluster) start(t *testing.T, dir, config string, sbatchArgs, extraEnv []string) string {
	t.Helper()
	return c.sbatchJob(t, dir, c.jobEnv(config, extraEnv), append(append([]string{"--gpus-per-node=0"}, sbatchArgs...), c.sbatch)...)
}

// sbatchJob runs `sbatch --parsable args...` from dir with env and returns
// the job id; the job is cancelled at the test's end, should it still run.
func (c *cluster) sbatchJob(t *testing.T, dir string, env []string, args ...string) string {
	t.Helper()
	args = append([]string{"--parsable"}, args...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := c.client(ctx, "sbatch", args...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	id, _, _ := strings.Cut(strings.TrimSpace(string(out)), ";")
	if err != nil || id == "" {
		t.Fatalf("sbatch %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Cleanup(func() { c.clientRun("", 10*time.Second, "scancel", id) }) // a no-op once it ended
	return id
}

// startTiming starts ch7.sbatch on 2+2 ranks, running bin, for a timing
// phase of minutes (4 KiB, 50 million cycles, with -set timeoutSet) and
// returns its id once its log says it is timing; a job whose rank crashed
// inside MPI_Init leaves its test inconclusive.
func (c *cluster) startTiming(t *testing.T, dir, bin, timeoutSet string) string {
	t.Helper()
	env := []string{"RSAG_ARGS=-set timing.cycles=50000000 -set timing.sizes_bytes=[4096] -set memory.enabled=false -set " + timeoutSet,
		"RSAG_BIN=" + bin}
	id := c.start(t, dir, "configs/smoke.toml", []string{"-N", "2", "--ntasks-per-node=2"}, env)
	logFile := filepath.Join(dir, "rsag-ch7-"+id+".out")
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		b, _ := os.ReadFile(logFile)
		if bytes.Contains(b, []byte("contracts: 5 held on every rank")) {
			return id
		}
		if mpiInitCrash(string(b)) {
			j := c.waitJob(t, dir, id, time.Minute)
			inconclusiveOnMPIInitCrash(t, "sbatch", j.log, true)
		}
		if time.Now().After(deadline) {
			c.dumpJob(t, dir, id, "rsag-ch7-"+id+".out")
			c.clientRun("", 10*time.Second, "scancel", id)
			t.Fatalf("job %s did not reach the timing phase within a minute", id)
		}
	}
}

// inconclusiveOnMPIInitCrash ends t as inconclusive (a skip that says
// why) when a launch failed because a rank crashed inside MPI_Init
// (mpiInitCrash): Open MPI's fault, before rsag ran a line, which the test
// cannot prove anything of rsag through; Slurm's part, a job that fails
// and names the task, held. Launching once more would hide how often it
// comes; a skip shows it on every run that meets it. Any other failure is
// the test's to judge.
func inconclusiveOnMPIInitCrash(t testing.TB, what, log string, failed bool) {
	t.Helper()
	if failed && mpiInitCrash(log) {
		t.Skipf("inconclusive: %s: a rank crashed inside MPI_Init (Open MPI 4.1.4 under srun --mpi=pmix, "+
			"docs/multi-node.md), before rsag ran; the job failed, as it should. Its output:\n%s", what, log)
	}
}

// mpiInitCrash says whether a launch failed because a rank crashed inside
// MPI_Init, before a line of rsag's own ran. Open MPI 4.1.4 under Slurm
// 22.05's srun --mpi=pmix does so about once in 40 to 150 launches on a
// loaded machine, and a plain C program that only starts MPI does too:
// inside MPI_Init's progress loop, the TCP BTL hands a peer's first
// message (ob1's MATCH) to a callback ob1 has not registered yet, at
// address 0 (docs/multi-node.md). The job then fails as it should.
func mpiInitCrash(log string) bool {
	return strings.Contains(log, "SIGSEGV") && strings.Contains(log, "rsag/mpi._Cfunc_rsag_init")
}

// waitJob waits up to limit for the job to have ended and returns it,
// with its log (dir/rsag-ch7-ID.out).
func (c *cluster) waitJob(t *testing.T, dir, id string, limit time.Duration) job {
	t.Helper()
	j := job{id: id, fields: c.waitEnded(t, dir, id, "rsag-ch7-"+id+".out", limit)}
	b, rerr := os.ReadFile(filepath.Join(dir, "rsag-ch7-"+id+".out"))
	if rerr != nil {
		t.Errorf("job log: %v", rerr)
	}
	// rsag folds what it says on stderr at the terminal's width; a
	// pattern reads a message whole, as run.json holds it.
	j.log = fold.Unfold(string(b), fold.Width)
	t.Logf("job %s: JobState=%s ExitCode=%s NodeList=%s SubmitTime=%s StartTime=%s EndTime=%s; log:\n%s",
		id, j.fields["JobState"], j.fields["ExitCode"], j.fields["NodeList"], j.fields["SubmitTime"], j.fields["StartTime"], j.fields["EndTime"], b)
	return j
}

// waitEnded polls the controller every 200 ms, up to limit, until job id
// has ended (past COMPLETING), and returns its record; logName is its log
// in dir, shown when it does not end. A query that fails (on a loaded
// machine scontrol can time out, and once in many CI runs the controller
// answered "Invalid job id" for a job it had just failed) is a poll that
// saw nothing: each is logged, and the last one's error is the test's if
// the limit passes.
func (c *cluster) waitEnded(t *testing.T, dir, id, logName string, limit time.Duration) map[string]string {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		fields, err := c.showJob(id)
		if err != nil {
			t.Logf("%v", err)
			if time.Now().Before(deadline) {
				time.Sleep(500 * time.Millisecond)
				continue
			}
			t.Fatalf("%v\nwhat slurmctld logged of it:\n%s", err, c.controllerLog(id))
		}
		switch fields["JobState"] {
		case "PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "":
			if time.Now().Before(deadline) {
				time.Sleep(200 * time.Millisecond)
				continue
			}
			c.dumpJob(t, dir, id, logName)
			t.Fatalf("job %s still %s after %v", id, fields["JobState"], limit)
		}
		return fields
	}
}

// showJob parses `scontrol show job -o ID` (sacct needs slurmdbd, which the
// local cluster does not run; MinJobAge keeps finished jobs visible for an
// hour).
func (c *cluster) showJob(id string) (map[string]string, error) {
	out, err := c.clientRun("", 10*time.Second, "scontrol", "show", "job", "-o", id)
	if err != nil && strings.Contains(out, "Invalid job id") && strings.Contains(c.controllerLog(id), "Killing JobId="+id+" on failed node") {
		// The controller has forgotten a job it failed with its node (seen
		// under load: 2 of 3 make test runs beside another); its own log
		// says how the job ended.
		return map[string]string{"JobState": "NODE_FAIL"}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("scontrol show job %s: %v: %s", id, err, strings.TrimSpace(out))
	}
	fields := map[string]string{}
	for _, f := range strings.Fields(out) {
		if k, v, ok := strings.Cut(f, "="); ok {
			if _, dup := fields[k]; !dup {
				fields[k] = v
			}
		}
	}
	return fields, nil
}

// controllerLog is what slurmctld logged of job id, and its last lines:
// enough to say why the controller no longer knows a job.
func (c *cluster) controllerLog(id string) string {
	b, err := os.ReadFile(filepath.Join(c.slurmDir, "log", "slurmctld.log"))
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	var of []string
	for _, l := range lines {
		if strings.Contains(l, "JobId="+id+" ") || strings.HasSuffix(l, "JobId="+id) {
			of = append(of, l)
		}
	}
	return strings.Join(of, "\n") + "\n... its last lines:\n" + strings.Join(lines[max(len(lines)-20, 0):], "\n")
}

func (c *cluster) dumpJob(t *testing.T, dir, id, logName string) {
	t.Helper()
	out, _ := c.clientRun("", 10*time.Second, "scontrol", "show", "job", id)
	t.Logf("scontrol show job %s:\n%s", id, out)
	b, _ := os.ReadFile(filepath.Join(dir, logName))
	t.Logf("job log so far:\n%s", b)
}

// client is a Slurm client command: on head when the nodes are emulated
// hosts (only there is the controller reachable), here otherwise.
func (c *cluster) client(ctx context.Context, name string, args ...string) *exec.Cmd {
	if c.hosts != nil {
		return c.hosts.Command(ctx, "head", name, args...)
	}
	return exec.CommandContext(ctx, name, args...)
}

// clientRun runs a client command in dir (none: here) with c.env, bounded
// by timeout, and returns its combined output.
func (c *cluster) clientRun(dir string, timeout time.Duration, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := c.client(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = c.env(nil)
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		err = fmt.Errorf("%s %s: timed out after %v: %w", name, strings.Join(args, " "), timeout, err)
	}
	return string(out), err
}

// env is the environment for Slurm clients and jobs: this process's, without
// Slurm's own variables (the test may run inside a job) or rsag's job
// settings, plus SLURM_CONF, the hosts' instance and extra.
func (c *cluster) env(extra []string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(k, "SLURM_"), strings.HasPrefix(k, "SBATCH_"), strings.HasPrefix(k, "SRUN_"):
			continue
		case strings.HasPrefix(k, "RSAG_") && k != "RSAG_LAUNCHER" && k != "RSAG_LAUNCHER_ARGS" && k != "RSAG_SLURM_DIR":
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "SLURM_CONF="+c.slurmConf)
	if c.hosts != nil {
		env = append(env, c.hosts.Env()...)
	}
	return append(env, extra...)
}

// runCmd runs a command bounded by timeout and returns its combined output.
func runCmd(ctx context.Context, timeout time.Duration, dir string, env []string, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		err = fmt.Errorf("%s %s: timed out after %v: %w", name, strings.Join(args, " "), timeout, err)
	}
	return string(out), err
}

// Only a crash inside MPI_Init makes a test inconclusive: a crash anywhere
// else, or any other failure, is rsag's to answer for, and a launch that
// succeeded is judged whatever its output says.
func TestOnlyACrashInsideMPIInitIsInconclusive(t *testing.T) {
	trace := func(frame string) string {
		return "SIGSEGV: segmentation violation\nPC=0x0 m=0 sigcode=1 addr=0x0\nsignal arrived during cgo execution\n\n" +
			"goroutine 1 gp=0xc000002380 m=0 mp=0x14bcc40 [syscall, locked to thread]:\n" +
			"runtime.cgocall(0xa20d00, 0xc00019f9e8)\n\t/usr/local/go/src/runtime/cgocall.go:167 +0x4b\n" +
			frame + "(0xc0001801b8)\n\t_cgo_gotypes.go:456 +0x45\n"
	}
	for _, c := range []struct {
		name   string
		log    string
		failed bool
		want   bool
	}{
		{"a crash inside MPI_Init (this subtest skips, as it should)", trace("rsag/mpi._Cfunc_rsag_init"), true, true},
		{"its trace in a launch that succeeded", trace("rsag/mpi._Cfunc_rsag_init"), false, false},
		{"a crash in the timed loop", trace("rsag/mpi._Cfunc_rsag_samples"), true, false}, // rsag's run, not start-up
		{"MPI_Init_thread's error", "rsag: rank 2 (node2): MPI_Init_thread: MPI_ERR_OTHER (code 16)\nsrun: error: node2: task 2: Exited with exit code 1", true, false},
		{"a failed check", "rsag: timing check failed on rank(s) [1]: rank 1 (node1): 1024 B", true, false},
	} {
		var ran bool
		sub := t.Run(c.name, func(t *testing.T) {
			inconclusiveOnMPIInitCrash(t, "test", c.log, c.failed)
			ran = true
		})
		if skipped := sub && !ran; skipped != c.want {
			t.Errorf("inconclusive = %v, want %v, for a launch that failed=%v with:\n%s", skipped, c.want, c.failed, c.log)
		}
	}
}
