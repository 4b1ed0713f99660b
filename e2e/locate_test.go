package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"rsag/internal/testkit/hosts"
	"rsag/internal/testkit/outcheck"
	"rsag/outdir"
	"rsag/report"
)

// TestLocateFindsTheBadNode injects real faults into four emulated hosts
// (internal/testkit/hosts: a network namespace each, veth pairs on a
// bridge) from outside rsag, and checks that the locate phase names
// exactly the culprit and nothing else:
//   - no fault: no suspect, exit 0, even with fail_on_suspect;
//   - a token-bucket rate limit on node3's eth0 (tc tbf): node3, bandwidth;
//   - on node1's eth0 an htb class with a u32 filter on node2's address,
//     so that only node1 -> node2 is limited: the link node1-node2 and
//     neither node; with fail_on_suspect, exit 4 and a complete run.json
//     that lists it;
//   - node2's two ranks in a cgroup with a small CPU quota (cpu.max, or
//     cpu.cfs_quota_us on cgroup v1), set once they are running: node2,
//     from the inside step.
//
// Each fault is removed when its case ends, pass or fail, and the hosts
// with it. The sizes are small (4K latency-bound, 64K bandwidth-bound
// here) and the faults large (10 Mbit/s against a kernel bridge, a few
// hundred times slower at 64K; a twentieth of a core), so that the cases
// are unmistakable and fast.
func TestLocateFindsTheBadNode(t *testing.T) {
	// Alone: beside the other tests (at 2fcd29f) a healthy link,
	// node1-node4, came out at 0.24x latency in all 3 repeats beside
	// node3's slow network, and was named with it.
	l := newLocateRun(t, 4)

	t.Run("no fault", func(t *testing.T) {
		r, s := l.run(t, 1, nil, "locate.fail_on_suspect=true")
		if r.code != 0 {
			t.Fatalf("exit %d with no fault\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
		}
		wantSuspects(t, s, r, nil)
		for _, want := range []string{"locate: no suspect among 4 nodes",
			"inside each node, all nodes at once: not run: every node has one rank",
			"within a node, rank pairs: not run: every node has at most two ranks"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
			}
		}
	})
	t.Run("node3's network", func(t *testing.T) {
		l.tc(t, "node3", "qdisc add dev eth0 root tbf rate 10mbit burst 16kb latency 400ms")
		r, s := l.run(t, 1, []string{"-x", "SLURM_JOB_ID=e2e"})
		if r.code != 0 {
			t.Fatalf("exit %d: suspects are a finding, not a failure, without fail_on_suspect\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
		}
		if namedOrInconclusive(t, s, r, "node node3 bandwidth", nodeVerdict("node3")) &&
			!strings.Contains(r.stdout, ": sbatch --exclude=node3 ...\n") {
			t.Errorf("under Slurm, no line to paste:\n%s", r.stdout)
		}
		// The same suspect beside a failed check (a bus bandwidth gate no
		// run can pass): the run fails, and run.json and the closing
		// lines still name the suspect (issue 34, class 13).
		l.failing = true
		defer func() { l.failing = false }()
		r, s = l.run(t, 1, nil, "timing.enabled=true", `timing.sizes_bytes=["4K"]`, "timing.cycles=1",
			"timing.warmups=1", "timing.min_busbw_gbps=100000")
		if r.code != 1 {
			t.Fatalf("exit %d with a failed gate, want 1\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
		}
		// Named or, on a machine too noisy to judge, inconclusive (as
		// above); either way run.json and the closing lines say the same.
		var texts []string
		if namedOrInconclusive(t, s, r, "node node3 bandwidth", nodeVerdict("node3")) {
			texts = report.SuspectTexts(s.Locate)
			if !strings.Contains(r.stdout, "suspects: "+strings.Join(texts, ", ")) {
				t.Errorf("no suspects: line naming %q beside the failed gate:\n%s", texts, r.stdout)
			}
		}
		run, err := outdir.ReadRecord(r.dir)
		if err != nil || run.Status != outdir.StatusFailed || len(run.Suspects) != len(texts) || !slices.Equal(run.Suspects, texts) && len(texts) > 0 {
			t.Errorf("%s: %+v, %v; want failed, listing %q", outdir.RunFile, run, err, texts)
		}
	})
	t.Run("link node1-node2", func(t *testing.T) {
		l.tc(t, "node1", "qdisc add dev eth0 root handle 1: htb")
		l.tc(t, "node1", "class add dev eth0 parent 1: classid 1:20 htb rate 10mbit")
		l.tc(t, "node1", "filter add dev eth0 parent 1: protocol ip prio 1 u32 match ip dst 10.77.0.2/32 flowid 1:20")
		r, s := l.run(t, 1, nil, "locate.fail_on_suspect=true")
		if !namedOrInconclusive(t, s, r, "link node1-node2 bandwidth", pairVerdict("node1", "node2")) {
			if r.code != 0 {
				t.Errorf("exit %d with no suspect, want 0\nstderr:\n%s", r.code, r.stderr)
			}
			return
		}
		if r.code != 4 {
			t.Fatalf("exit %d with a suspect and fail_on_suspect, want 4\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
		}
		saidOnce(t, r.stderr, "the locate phase found suspects on rank 0 (node1): node1-node2 (link, bandwidth ")
		run, err := outdir.ReadRecord(r.dir)
		if err != nil || run.Status != outdir.StatusComplete || len(run.Suspects) != 1 || !strings.HasPrefix(run.Suspects[0], "node1-node2 (link, bandwidth") {
			t.Errorf("%s: %+v, %v; want complete, listing the link", outdir.RunFile, run, err)
		}
	})
	t.Run("node2's collectives slowed", func(t *testing.T) {
		// The fast twin of node2's processors: node2's only rank sleeps
		// 20 ms before each of its locate AllReduces (testdata/slow.c, from
		// outside rsag), a hundred times what a healthy pair takes at 4K
		// and 64K here, with every partner, in every repeat.
		lib := filepath.Join(l.shared, "libslow.so")
		if err := copyFile(interposer(t, "slow"), lib); err != nil {
			t.Fatal(err)
		}
		r, s := l.run(t, 1, []string{"-x", "LD_PRELOAD=" + lib, "-x", "SLOW_RANK=1",
			"-x", "SLOW_SPEC=Allreduce:4096:20000,Allreduce:65536:20000"})
		if r.code != 0 {
			t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
		}
		namedOrInconclusive(t, s, r, "node node2", nodeVerdict("node2"))
	})
	t.Run("node3 too slow to finish", func(t *testing.T) {
		// node3's only rank sleeps 2.5 s before each locate AllReduce at
		// 64K (testdata/slow.c): past the probe deadline, timeout_s / (2 x
		// 2 probes x 11 operations) = 0.68 s, and far past what a healthy
		// 64K AllReduce takes here however loaded (milliseconds). Each of
		// node3's pairs abandons the probe after one operation, the run
		// ends by itself, and node3 is named unresponsive: a deadline,
		// not a median, so the machine's noise cannot hide it.
		lib := filepath.Join(l.shared, "libslow.so")
		if err := copyFile(interposer(t, "slow"), lib); err != nil {
			t.Fatal(err)
		}
		r, s := l.run(t, 1, []string{"-x", "LD_PRELOAD=" + lib, "-x", "SLOW_RANK=2", "-x", "SLOW_SPEC=Allreduce:65536:2500000"},
			"timeout_s=30")
		if r.code != 0 {
			t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
		}
		wantSuspects(t, s, r, []string{"unresponsive node3 bandwidth"})
		if sp := s.Locate.Suspects[0]; !strings.Contains(sp.Text, "with 3 of 3 partners") || !strings.Contains(sp.Text, "past 682ms") {
			t.Errorf("suspect %q: want its evidence", sp.Text)
		}
		// locate.csv keeps each abandoned operation, on both ranks of each
		// of node3's three pairs, at repeat -1.
		if n := len(regexp.MustCompile(`(?m)^\d+,pairs,\d+,-1,`).FindAllString(readText(filepath.Join(r.dir, "locate.csv")), -1)); n != 6 {
			t.Errorf("locate.csv has %d abandoned rows, want 6", n)
		}
	})
	t.Run("node2's processors", func(t *testing.T) {
		onlyInFullTier(t, "node2's collectives slowed")
		// node2's ranks join the cgroup before they become rsag, and start
		// at full speed; once rank 0 has printed the Nodes table (before
		// the contracts, which come before the locate phase) the cgroup
		// gets 1 ms of CPU per 50 ms for both. A measurement of 10
		// operations at 64K takes more than its share, so it always waits
		// for the next period, in every repeat. (At 1 ms per 20 ms a second
		// make test beside this one slowed the other nodes' ranks so much
		// that one repeat of node2's came above the threshold.)
		cg, limit := cpuCgroup(t)
		wrap := []string{"sh", "-c", `[ "$(hostname)" = node2 ] && echo $$ > "$0"; exec "$@"`, filepath.Join(cg, "cgroup.procs")}
		throttle := func() {
			if err := limit(1000, 50000); err != nil {
				t.Error(err)
			}
		}
		r, s := l.runWith(t, 2, nil, wrap, &trigger{"Nodes", throttle})
		if r.code != 0 {
			t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
		}
		namedOrInconclusive(t, s, r, "node node2", nodeVerdict("node2"))
		// Slow processors slow node2 inside and with every partner: either
		// step names it rightly. Which did depends on the load beside the
		// test (make test runs the Slurm tests at the same time), which can
		// lift one repeat of the inside step above the threshold.
		if len(s.Locate.Suspects) == 1 {
			t.Logf("node2 named by %v", s.Locate.Suspects[0].By)
		}
	})
}

// A bad [locate] value, and sizes too small for the job's sub-communicators
// (known only once every rank's host is), are refused on every rank before
// any collective, said once, with nothing written. One host, two ranks of
// this process (inproc): the refusal is the run's logic; one said once by
// ranks that are processes is TestBadInputsFailOnEveryRank's.
func TestLocateBadInputIsRefusedOnEveryRank(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ set, want string }{
		{"locate.threshold=1.5", "locate.threshold: 1.5 is above rsag's bound of 1"},
		{`locate.sizes_bytes=[4,4096]`, "locate.sizes_bytes: 4 bytes is less than one float32 for each of the 2 ranks of the largest sub-communicator: use at least 8"},
	} {
		dir := filepath.Join(t.TempDir(), "out")
		r := inproc(t, 2, time.Minute, "-config", "../configs/locate.toml", "-backend", "mpi", "-output-dir", dir, "-set", c.set)
		if r.code != 2 {
			t.Fatalf("%s: exit %d, want 2\nstderr:\n%s", c.set, r.code, r.stderr)
		}
		saidOnce(t, r.stderr, c.want)
		if entries, _ := os.ReadDir(dir); len(entries) > 0 {
			t.Errorf("%s: a refused run left files: %v", c.set, entries)
		}
	}
}

// located is a run and its output dir.
type located struct {
	result
	dir string
}

type locateRun struct {
	h      *hosts.Hosts
	shared string
	env    []string
	n      int
	// limit bounds each run (3 minutes when zero): a hang fails the test.
	limit time.Duration
	// failing says the next runs fail a check on purpose: their
	// summary.json is read without asking for a complete run.
	failing bool
}

// newLocateRun brings up nodes emulated hosts, removed when t ends, with
// an output dir shared by all of them and mpirun's environment.
func newLocateRun(t *testing.T, nodes int) *locateRun {
	t.Helper()
	shared := t.TempDir()
	l := &locateRun{h: hosts.Start(t, hosts.Config{Nodes: nodes, Share: []string{shared, filepath.Dir(rsagBin)}}), shared: shared}
	l.env = l.h.MPIEnv(t)
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k != "OMPI_MCA_orte_tmpdir_base" && !strings.HasPrefix(k, "NCCL_") && !strings.HasPrefix(k, "UCX_") && !strings.HasPrefix(k, "SLURM_") {
			l.env = append(l.env, kv)
		}
	}
	return l
}

// lean are the e2e runs' settings: two small sizes, AllReduce, three
// repeats of ten operations (at five, with a load of 15 on 2 cores, the
// healthy pairs spread to 3.6x and 4.3x in 2 of 4 clean runs, which made
// the step inconclusive; at 10 to 40 they stayed within 1.2x to 2.6x in 13
// runs, 2026-12-06). Threshold 0.3: on this machine, shared by
// every rank of the emulated hosts (and by whatever else runs on it), a
// healthy unit is now and then below half the median in all three repeats
// at the latency-bound size, where a millisecond of scheduling is a
// factor of ten; the faults injected leave a tenth of the speed or less.
var lean = []string{`locate.sizes_bytes=["4K","64K"]`, `locate.collectives=["all-reduce"]`,
	"locate.warmups=1", "locate.iterations=10", "locate.threshold=0.3", "timeout_s=60"}

// run starts configs/locate.toml from head on the four nodes, per ranks
// each, and returns the result and its summary (validated against the
// schema); run.json must be complete and list exactly the files there.
func (l *locateRun) run(t *testing.T, per int, mpiArgs []string, sets ...string) (located, report.Summary) {
	return l.runWith(t, per, mpiArgs, nil, nil, sets...)
}

// trigger is something to do once rank 0 prints a line containing line.
type trigger struct {
	line string
	do   func()
}

func (l *locateRun) runWith(t *testing.T, per int, mpiArgs, wrap []string, tr *trigger, sets ...string) (located, report.Summary) {
	t.Helper()
	l.n++
	dir := filepath.Join(l.shared, fmt.Sprintf("locate-%d", l.n))
	var host []string
	for _, n := range l.h.Nodes {
		host = append(host, fmt.Sprintf("%s:%d", n, per))
	}
	// The emulated hosts share this machine's cores: a rank that spins
	// while it waits for a partner without a core slows the other pairs of
	// its round by a scheduler tick, in every repeat. Yielding keeps that
	// to noise; on a cluster every rank has its own core.
	args := append([]string{"--allow-run-as-root", "--bind-to", "none", "--mca", "mpi_yield_when_idle", "1",
		"-np", fmt.Sprint(per * len(l.h.Nodes)), "--host", strings.Join(host, ",")}, mpiArgs...)
	args = append(append(args, wrap...), rsagBin, "-backend", "mpi", "-config", filepath.Join(l.h.Repo, "configs", "locate.toml"), "-output-dir", dir)
	// A set of the test's own replaces lean's of the same key (rsag
	// refuses a key set twice).
	for _, s := range lean {
		key, _, _ := strings.Cut(s, "=")
		if !slices.ContainsFunc(sets, func(x string) bool { return strings.HasPrefix(x, key+"=") }) {
			args = append(args, "-set", s)
		}
	}
	for _, s := range sets {
		args = append(args, "-set", s)
	}
	cmd := l.h.Command(context.Background(), "head", "mpirun", args...)
	cmd.Env = l.env
	cmd.WaitDelay = 10 * time.Second
	start := time.Now()
	j := startCmd(t, cmd)
	if tr != nil {
		j.waitLine(t, tr.line, time.Minute)
		tr.do()
	}
	limit := l.limit
	if limit == 0 {
		limit = 3 * time.Minute
	}
	code := j.wait(t, limit)
	r := located{dir: dir, result: result{code: code, took: time.Since(start)}}
	r.stdout, r.stderr = j.output()
	t.Logf("%d ranks took %.1f s:\n%s", per*len(l.h.Nodes), r.took.Seconds(), locateOutput(r.stdout))
	var s report.Summary
	if l.failing {
		data, err := os.ReadFile(filepath.Join(dir, report.SummaryFile))
		if err == nil {
			s, err = report.ReadSummary(filepath.Join(dir, report.SummaryFile), data)
		}
		if err != nil {
			t.Fatal(err)
		}
	} else {
		s = completeSummary(t, filepath.Join(dir, report.SummaryFile))
	}
	if s.Locate == nil {
		t.Fatalf("summary.json has no locate section\nstdout:\n%s", r.stdout)
	}
	if err := outcheck.CheckManifest(dir); err != nil && !l.failing {
		t.Error(err)
	}
	return r, s
}

// locateOutput is rank 0's Locate table and closing lines.
func locateOutput(stdout string) string {
	if i := strings.Index(stdout, "locate: "); i >= 0 {
		return stdout[i:]
	}
	return stdout
}

// wantSuspects compares the summary's suspects, as "kind nodes problem"
// (problem left out of want when any will do), with want, and checks that
// the table and run.json say the same.
// namedOrInconclusive checks a fault's run the way that holds on any
// machine, the first time: the culprit (want, as wantSuspects spells it) is
// the only suspect; or, where this machine's noise left its step unable to
// judge (the culprit unconfirmed) or the culprit within the noise, nothing
// is named, the phase is inconclusive and so is the culprit's verdict
// (verdict finds it). Never anyone else, never the culprit called healthy.
// It says whether the culprit was named.
func namedOrInconclusive(t *testing.T, s report.Summary, r located, want string, verdict func(report.SummaryLocate) string) bool {
	t.Helper()
	if len(s.Locate.Suspects) > 0 {
		wantSuspects(t, s, r, []string{want})
		return true
	}
	wantSuspects(t, s, r, nil)
	v := verdict(*s.Locate)
	if s.Locate.Verdict != "inconclusive" || !strings.HasPrefix(v, "inconclusive") {
		t.Errorf("no suspect, the phase %s, the culprit %q: want it named, or both inconclusive\n%s", s.Locate.Verdict, v,
			locateOutput(r.stdout))
	} else {
		t.Logf("%s not named: this machine's noise left it %s", want, v)
	}
	return false
}

// nodeVerdict finds node's verdict.
func nodeVerdict(node string) func(report.SummaryLocate) string {
	return func(l report.SummaryLocate) string {
		for _, n := range l.Nodes {
			if n.Host == node {
				return n.Verdict
			}
		}
		return "not listed"
	}
}

// pairVerdict finds the verdict of the pair of nodes a and b.
func pairVerdict(a, b string) func(report.SummaryLocate) string {
	return func(l report.SummaryLocate) string {
		for _, p := range l.Pairs {
			if slices.Equal(p.Nodes, []string{a, b}) {
				return p.Verdict
			}
		}
		return "not listed"
	}
}

func wantSuspects(t *testing.T, s report.Summary, r located, want []string) {
	t.Helper()
	var got []string
	for i, sp := range s.Locate.Suspects {
		g := sp.Kind + " " + strings.Join(sp.Nodes, "-")
		if i < len(want) && strings.Count(want[i], " ") == 2 {
			g += " " + sp.Problem
		}
		got = append(got, g)
		if !strings.Contains(r.stdout, sp.Text) {
			t.Errorf("stdout does not name %q:\n%s", sp.Text, r.stdout)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("suspects %q, want %q\n%s", got, want, locateOutput(r.stdout))
	}
	run, err := outdir.ReadRecord(r.dir)
	if err != nil || len(run.Suspects) != len(want) {
		t.Errorf("%s lists suspects %q (%v), want %d", outdir.RunFile, run.Suspects, err, len(want))
	}
	for _, f := range []string{"locate.csv", "locate_pairs.png", "locate_pairs.svg"} {
		if _, err := os.Stat(filepath.Join(r.dir, f)); err != nil {
			t.Errorf("no %s: %v", f, err)
		}
	}
}

// tc runs tc on host with args, and removes the root qdisc (and whatever
// hangs from it) when the test ends.
func (l *locateRun) tc(t *testing.T, host, args string) {
	t.Helper()
	if strings.HasPrefix(args, "qdisc add") {
		t.Cleanup(func() {
			if out, err := l.h.Output(host, 10*time.Second, "tc", "qdisc", "del", "dev", "eth0", "root"); err != nil {
				t.Errorf("removing %s's qdisc: %v\n%s", host, err, out)
			}
		})
	}
	if out, err := l.h.Output(host, 10*time.Second, "tc", strings.Fields(args)...); err != nil {
		t.Fatalf("tc %s on %s: %v\n%s", args, host, err, out)
	}
}

// cpuCgroup makes a child cgroup, without a limit, removed when the test
// ends, and returns it with a function that limits its processes together
// to quota microseconds of CPU per period (cgroup v2's cpu.max, or v1's
// cpu.cfs_period_us and cpu.cfs_quota_us); it skips where neither can be
// made.
func cpuCgroup(t *testing.T) (string, func(quota, period int) error) {
	t.Helper()
	var parent string
	var limit func(dir string, quota, period int) error
	switch v2 := "/sys/fs/cgroup"; {
	case exists(filepath.Join(v2, "cpu", "cpu.cfs_quota_us")):
		parent = filepath.Join(v2, "cpu")
		limit = func(dir string, quota, period int) error {
			if err := os.WriteFile(filepath.Join(dir, "cpu.cfs_period_us"), []byte(fmt.Sprint(period)), 0o644); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(dir, "cpu.cfs_quota_us"), []byte(fmt.Sprint(quota)), 0o644)
		}
	case strings.Contains(readText(filepath.Join(v2, "cgroup.subtree_control")), "cpu"):
		parent = v2
		limit = func(dir string, quota, period int) error {
			return os.WriteFile(filepath.Join(dir, "cpu.max"), []byte(fmt.Sprintf("%d %d", quota, period)), 0o644)
		}
	default:
		t.Skip("no cpu cgroup controller to make a child in")
	}
	dir := childCgroup(t, parent, "rsag-e2e-locate", "cpu")
	return dir, func(quota, period int) error { return limit(dir, quota, period) }
}
