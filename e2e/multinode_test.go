package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"rsag/coll"
	"rsag/internal/testkit/hosts"
	"rsag/internal/testkit/outcheck"
	"rsag/outdir"
	"rsag/report"
)

// TestMultiNode runs rsag under mpirun across hosts emulated on this
// machine (internal/testkit/hosts: each host its own network, hostname, IPC, /tmp
// and /dev/shm; no memory shared between them). mpirun runs on head, the
// login node, and reaches node1 and node2 through scripts/hosts.sh as it
// would through ssh. It needs root, which CI has.
func TestMultiNode(t *testing.T) {
	t.Parallel()
	shared := t.TempDir() // the output dirs: on "NFS", seen by every host
	t0 := time.Now()
	// Both builds, the product and its short-cadence twin (fastRsag, which
	// the hangs run), are on every host.
	m := &multi{h: hosts.Start(t, hosts.Config{Nodes: 4, Share: []string{shared, filepath.Dir(rsagBin), filepath.Dir(fastRsag(t))}}), shared: shared}
	m.smoke = filepath.Join(m.h.Repo, "configs", "smoke.toml")
	m.env = m.h.MPIEnv(t)
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		// Each host has its own /tmp, so the session dir race that
		// IsolateSessionDir avoids cannot happen; the network variables
		// are the subtests' to set.
		if k != "OMPI_MCA_orte_tmpdir_base" && !strings.HasPrefix(k, "NCCL_") && !strings.HasPrefix(k, "UCX_") {
			m.env = append(m.env, kv)
		}
	}
	t.Logf("hosts up in %.1f s", time.Since(t0).Seconds())

	// The subtests run side by side on the four hosts, each its own job
	// and output dir: what they wait for is mpirun and TCP, not processors.
	// The placement table and the block hierarchy are the full tier's;
	// make test runs the cyclic ones, whose node-local ranks interleave.
	for _, p := range []struct {
		name  string
		full  bool
		args  []string // mpirun's
		hosts []string // of ranks 0..3
	}{
		{"block 2+2", true, []string{"--host", "node1:2,node2:2", "--map-by", "slot"}, []string{"node1", "node1", "node2", "node2"}},
		{"uneven 3+1", true, []string{"--host", "node1:3,node2:1"}, []string{"node1", "node1", "node1", "node2"}},
	} {
		t.Run(p.name, func(t *testing.T) {
			onlyInFullTier(t, "TestMultiNode/cyclic_2+2")
			t.Parallel()
			m.testPlacement(t, p.args, p.hosts, nil)
		})
	}
	// The cyclic placement also carries the network variables: rank 0's
	// summary.json shows only what mpirun forwarded (-x), as over ssh.
	t.Run("cyclic 2+2", func(t *testing.T) {
		t.Parallel()
		m.testPlacement(t, []string{"--host", "node1:2,node2:2", "--map-by", "node", "-x", "NCCL_SOCKET_IFNAME"},
			[]string{"node1", "node2", "node1", "node2"}, []string{"NCCL_SOCKET_IFNAME=eth0", "NCCL_DEBUG=WARN"})
	})
	for _, c := range []struct {
		name string
		test func(*testing.T)
	}{
		{"no shared memory between nodes", m.testNoSharedMemory},
		{"node-local output dir is refused", m.testNodeLocalOutputDir},
		{"hangs name who they wait for", m.testHangsAcrossHosts},
		{"a stuck rank is named early and ends the job", m.testStuckAcrossHosts},
		{"heartbeats grow with hosts, not ranks", m.testBeatsGrowWithHosts},
		{"a killed node ends the job", m.testKilledNode},
		{"hierarchy 2+2 block", func(t *testing.T) {
			onlyInFullTier(t, "TestMultiNode/hierarchy_2+2_cyclic")
			m.testHierarchy(t, "slot")
		}},
		{"hierarchy 2+2 cyclic", func(t *testing.T) { m.testHierarchy(t, "node") }},
		{"hierarchy refuses 3+1", m.testHierarchyUneven},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.test(t)
		})
	}
}

// The hierarchical decomposition on two nodes of two ranks, the groups
// being the nodes whichever way the ranks are placed: its contracts hold,
// every hierarchical output is checked, and hierarchical-lifetime's peak
// is N + N/2, the shard of a node's two ranks.
func (m *multi) testHierarchy(t *testing.T, mapBy string) {
	dir := filepath.Join(m.shared, "hierarchy-"+mapBy)
	// Two cycles of the config's four: over the hosts' TCP each takes
	// seconds, and the checks see every mode in two.
	r := m.mpirun(t, 2*time.Minute, nil, []string{"--host", "node1:2,node2:2", "--map-by", mapBy},
		"-config", filepath.Join(m.h.Repo, "configs", "hierarchy.toml"), "-output-dir", dir, "-set", "timing.cycles=2")
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	s := checkSummary(t, filepath.Join(dir, report.SummaryFile))
	held := map[string]int{}
	for _, c := range s.Contracts {
		held[c.Name] = c.HeldOn
	}
	for _, name := range []string{"hierarchical-sum-equivalence", "hierarchical-wrong-group-rejected", "uneven-groups-rejected"} {
		if held[name] != 4 {
			t.Errorf("%s held on %d of 4 ranks", name, held[name])
		}
	}
	modes := map[coll.Mode]bool{}
	for _, st := range s.Timing {
		modes[st.Mode] = true
		if !st.Correct {
			t.Errorf("not correct: %+v", st)
		}
	}
	for _, mode := range []coll.Mode{"hierarchical", "hierarchical-reduce-scatter", "hierarchical-all-reduce", "hierarchical-all-gather"} {
		if !modes[mode] {
			t.Errorf("no %s statistics", mode)
		}
	}
	const n = 1075200
	for _, mm := range s.Memory {
		if mm.Mode == "hierarchical-lifetime" && (mm.AnalyticPeakBytes != n+n/2 || !mm.MatchesAnalytic || !mm.Correct) {
			t.Errorf("hierarchical-lifetime: %+v, want peak %d measured and checked", mm, n+n/2)
		}
	}
	if len(s.Nodes) != 2 {
		t.Errorf("nodes %+v", s.Nodes)
	}
}

// Three ranks on one node and one on the other cannot split into equal
// groups: refused before any collective, said once, naming both nodes.
func (m *multi) testHierarchyUneven(t *testing.T) {
	dir := filepath.Join(m.shared, "hierarchy-uneven")
	r := m.mpirun(t, time.Minute, nil, []string{"--host", "node1:3,node2:1"},
		"-config", filepath.Join(m.h.Repo, "configs", "hierarchy.toml"), "-output-dir", dir)
	if r.code != 2 {
		t.Fatalf("exit %d, want 2\nstderr:\n%s", r.code, r.stderr)
	}
	saidOnce(t, r.stderr, "the nodes hold different numbers of ranks (node1 3, node2 1)")
}

type multi struct {
	h      *hosts.Hosts
	shared string
	smoke  string
	env    []string
}

// mpirun runs rsag under mpirun on head with mpiArgs, -np 4; a run that
// outlives limit fails the test.
func (m *multi) mpirun(t *testing.T, limit time.Duration, env, mpiArgs []string, rsagArgs ...string) result {
	t.Helper()
	return runWithin(t, limit, "rsag across hosts", func(ctx context.Context) *exec.Cmd {
		return m.command(ctx, env, mpiArgs, rsagArgs...)
	})
}

func (m *multi) command(ctx context.Context, env, mpiArgs []string, rsagArgs ...string) *exec.Cmd {
	return m.commandOf(ctx, rsagBin, env, mpiArgs, rsagArgs...)
}

// commandOf is command with the binary bin (rsagBin or fastRsag's).
func (m *multi) commandOf(ctx context.Context, bin string, env, mpiArgs []string, rsagArgs ...string) *exec.Cmd {
	args := []string{"--allow-run-as-root", "--bind-to", "none"}
	if !slices.Contains(mpiArgs, "-np") {
		args = append(args, "-np", "4")
	}
	args = append(args, mpiArgs...)
	args = append(args, bin, "-backend", "mpi")
	if !slices.Contains(rsagArgs, "-config") {
		args = append(args, "-config", m.smoke)
	}
	args = append(args, rsagArgs...)
	cmd := m.h.Command(ctx, "head", "mpirun", args...)
	cmd.Env = append(append([]string{}, m.env...), env...)
	cmd.WaitDelay = 10 * time.Second
	return cmd
}

// testPlacement: every rank on the host the placement puts it, node-local
// ranks 0..k-1 on every host, the host column of the combined CSVs, and
// every contract and check passed.
func (m *multi) testPlacement(t *testing.T, mpiArgs, want, env []string) {
	dir := filepath.Join(m.shared, strings.NewReplacer(" ", "-", "+", "-").Replace(t.Name()))
	r := m.mpirun(t, 2*time.Minute, env, mpiArgs, "-output-dir", dir)
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if err := outcheck.Check(dir, outcheck.Smoke(4)); err != nil {
		t.Fatalf("%v\nstdout:\n%s", err, r.stdout)
	}
	if err := outcheck.CheckHosts(dir, want); err != nil {
		t.Fatalf("%v\nstdout:\n%s", err, r.stdout)
	}
	if run, err := outdir.ReadRecord(dir); err != nil || run.Status != outdir.StatusComplete {
		t.Errorf("%s: %+v, %v; want complete", outdir.RunFile, run, err)
	}
	for _, s := range []string{"Nodes", "| local rank |", "across 2 nodes: the bandwidth is bounded by the network between them"} {
		if !strings.Contains(r.stdout, s) {
			t.Errorf("stdout lacks %q:\n%s", s, r.stdout)
		}
	}
	if env != nil {
		m.forwardedOnly(t, dir)
	}
	t.Logf("%s took %.1f s; header:\n%s", strings.Join(mpiArgs, " "), r.took.Seconds(), header(r.stdout))
}

// header is the Ranks and Nodes tables of rank 0's output.
func header(stdout string) string {
	start := strings.Index(stdout, "Ranks\n")
	end := strings.Index(stdout, "contracts:")
	if start < 0 || end < start {
		return "(no header)"
	}
	return stdout[start:end]
}

// forwardedOnly asserts what ranks on other nodes get of the network
// variables: only what mpirun forwards (-x), as over ssh; docs/multi-node.md
// tells users to forward NCCL_SOCKET_IFNAME and its kind. rank 0 (on node1)
// was given NCCL_SOCKET_IFNAME=eth0 and NCCL_DEBUG=WARN, and -x the first.
func (m *multi) forwardedOnly(t *testing.T, dir string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, report.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Environment map[string]string `json:"environment"`
	}
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	if len(s.Environment) != 1 || s.Environment["NCCL_SOCKET_IFNAME"] != "eth0" {
		t.Errorf("rank 0 (on node1) saw the network variables %v; want only the forwarded NCCL_SOCKET_IFNAME=eth0", s.Environment)
	}
}

// The negative control: with only the shared-memory and self transports,
// ranks on different hosts cannot reach each other, so the hosts really
// share no memory and the placements above went over TCP.
func (m *multi) testNoSharedMemory(t *testing.T) {
	dir := filepath.Join(m.shared, "vader")
	r := m.mpirun(t, time.Minute, nil, []string{"--host", "node1:2,node2:2", "--mca", "btl", "self,vader"}, "-output-dir", dir)
	if r.code == 0 {
		t.Fatalf("exit 0 with --mca btl self,vader across two hosts\nstdout:\n%s", r.stdout)
	}
	if !strings.Contains(r.stderr, "unable to reach each other") {
		t.Errorf("Open MPI did not say the processes cannot reach each other:\n%s", r.stderr)
	}
}

// A node's own /tmp as output dir: refused before any collective, on every
// rank, naming the ranks that cannot see rank 0's probe and their host.
func (m *multi) testNodeLocalOutputDir(t *testing.T) {
	// Each host's own /dev/shm: never among the shared directories (the
	// binary's, which may well be under /tmp, is).
	local := "/dev/shm/rsag-node-local"
	exists := func(node string) string {
		t.Helper()
		out, err := m.h.Output(node, 10*time.Second, "sh", "-c", `if [ -e "$0" ]; then ls -A "$0"; else echo absent; fi`, local)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(out)
	}
	before := map[string]string{"node1": exists("node1"), "node2": exists("node2")}
	r := m.mpirun(t, time.Minute, nil, []string{"--host", "node1:2,node2:2"}, "-output-dir", local)
	if r.code != 2 { // rsag's exit code for a bad input
		t.Fatalf("exit %d, want 2 for a node-local output dir\nstderr:\n%s", r.code, r.stderr)
	}
	msg := "output dir " + local + " is not shared by every rank: the file rank 0 (node1) wrote there is not visible to " +
		"ranks 2, 3 on node2; the output directory must be on a file system all nodes share"
	saidOnce(t, r.stderr, msg)
	// Each node made its own dir there, and removed it as it was refused.
	for _, node := range []string{"node1", "node2"} {
		if after := exists(node); after != before[node] || (after != "absent" && after != "") {
			t.Errorf("%s:%s after the refused run: %q, before it %q; want it as it was, and nothing in it", node, local, after, before[node])
		}
	}
}

// SIGKILL to every rank on node2 mid-timing ends the job within seconds:
// mpirun names the node and ends the ranks on node1, and rank 0 marks the
// run failed.
func (m *multi) testKilledNode(t *testing.T) {
	dir := filepath.Join(m.shared, "killed")
	cmd := m.command(context.Background(), nil, []string{"--host", "node1:2,node2:2"},
		append([]string{"-output-dir", dir, "-set", "timeout_s=600"}, longTiming[4:]...)...) // its -sets
	j := startCmd(t, cmd)
	j.waitLine(t, "contracts: 5 held on every rank", time.Minute)
	time.Sleep(time.Second) // into the timing phase
	var killed []int
	// This job's ranks only: the other subtests run beside it on node2.
	// Both found before either is killed: mpirun ends the second at once.
	pids := []int{m.rankPIDOn(t, "node2", 2, dir), m.rankPIDOn(t, "node2", 3, dir)}
	for _, pid := range pids {
		// ESRCH: the launcher ended it first, as it ends the rest.
		if err := syscall.Kill(pid, syscall.SIGKILL); err == nil || err == syscall.ESRCH {
			killed = append(killed, pid)
		}
	}
	if len(killed) != 2 {
		t.Fatalf("killed %v on node2, want its 2 ranks", killed)
	}
	at := time.Now()
	code := j.wait(t, 30*time.Second)
	_, stderr := j.output()
	if code == 0 {
		t.Fatalf("exit 0 after node2's ranks were killed\n%s", stderr)
	}
	if !strings.Contains(stderr, "on node node2 exited on signal 9") {
		t.Errorf("mpirun did not name node2:\n%s", stderr)
	}
	run := notComplete(t, dir)
	if run.Status != outdir.StatusFailed {
		t.Errorf("%s: %+v; want failed", outdir.RunFile, run)
	}
	t.Logf("ended %.1f s after node2's ranks were killed, exit %d; %s: %s (%s)",
		time.Since(at).Seconds(), code, outdir.RunFile, run.Status, run.Reason)
}

// Ranks given different -output-dir values (an MPMD launch) are refused by
// the same check, on every rank, saying what each was given. One host.
func TestRanksGivenDifferentOutputDirsAreRefused(t *testing.T) {
	t.Parallel()
	a, b := t.TempDir(), t.TempDir()
	var args []string
	if os.Geteuid() == 0 {
		args = append(args, "--allow-run-as-root")
	}
	common := []string{rsagBin, "-config", "../configs/smoke.toml", "-backend", "mpi"}
	args = append(append(append(args, "-np", "1"), common...), "-output-dir", a, ":", "-np", "1")
	args = append(append(args, common...), "-output-dir", b)
	r := launch(t, time.Minute, append([]string{"mpirun"}, args...)...)
	if r.code == 0 {
		t.Fatal("exit 0 with two -output-dir values")
	}
	// The ranks' inputs are agreed before anything touches a directory.
	saidOnce(t, r.stderr, "the ranks were started with different inputs: -output-dir differs from rank 0's on rank 1")
	for _, d := range []string{a, b} {
		if entries, _ := os.ReadDir(d); len(entries) > 0 {
			t.Errorf("a refused run left files in %s: %v", d, entries)
		}
	}
}
