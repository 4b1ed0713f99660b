package e2e

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"rsag/internal/testkit/hosts"
)

// A host whose link is cut mid-collective (its eth0 down, inside its own
// network namespace, as `ip link set eth0 down` on a real node): every
// rank then waits in the same collective, none behind, none stopped, and
// every heartbeat stays fresh (the beats go through the shared file
// system, not the cut link). The hang's line says no rank is behind, that
// the collective itself is stuck, names the collective and its size, and
// blames no rank: not rank 3, on the cut host, nor the last in the list.
// Four emulated hosts, one rank each, node4 (rank 3) cut a few beats into
// the timing phase; fastRsag at timeout_s 1.5, as the other hangs across
// hosts. The link comes back once the line is said, so that mpirun can
// reach node4 to end the job; the hosts are taken down at the test's end.
//
// A cut that falls as a step's last messages fly leaves some ranks in
// that step and the others, which received theirs, in the next (seen on
// the first run: ranks 1,3 in #771, ranks 0,2 in #772): no rank is behind
// then either, and the line says so.
func TestACutLinkBlamesNoRank(t *testing.T) {
	t.Parallel()
	bin := fastRsag(t)
	shared := t.TempDir()
	h := hosts.Start(t, hosts.Config{Nodes: 4, Share: []string{shared, filepath.Dir(rsagBin), filepath.Dir(bin)}})
	m := &multi{h: h, shared: shared, smoke: filepath.Join(h.Repo, "configs", "smoke.toml"), env: h.MPIEnv(t)}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k != "OMPI_MCA_orte_tmpdir_base" && !strings.HasPrefix(k, "NCCL_") && !strings.HasPrefix(k, "UCX_") {
			m.env = append(m.env, kv)
		}
	}
	link := func(state string) error {
		out, err := h.Output("node4", 10*time.Second, "ip", "link", "set", "eth0", state)
		if err != nil {
			t.Logf("ip link set eth0 %s on node4: %v\n%s", state, err, out)
		}
		return err
	}
	t.Cleanup(func() { _ = link("up") }) // before the hosts go down (cleanups run last first)

	dir := filepath.Join(shared, "cut-link")
	cmd := m.commandOf(context.Background(), bin, nil, []string{"--host", "node1:1,node2:1,node3:1,node4:1"},
		append([]string{"-output-dir", dir, "-set", "timeout_s=" + within(1.5), "-set", "startup_timeout_s=60"}, longTiming[4:]...)...)
	j := startCmd(t, cmd)
	j.waitLine(t, "contracts: 5 held on every rank", time.Minute)
	time.Sleep(3 * fastBeat) // into the timing phase, a few beats
	if err := link("down"); err != nil {
		t.Fatal(err)
	}
	cut := time.Now()
	var stderr string
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if _, stderr = j.output(); strings.Contains(stderr, "hang: ") {
			break
		}
	}
	said := time.Since(cut)
	if err := link("up"); err != nil {
		t.Error(err)
	}
	code := j.wait(t, time.Minute)
	_, stderr = j.output()
	t.Logf("the line %.1f s after the cut; exit %d", said.Seconds(), code)
	for _, l := range strings.Split(stderr, "\n") {
		if strings.Contains(l, "hang: ") {
			t.Log(l)
		}
	}
	if code == 0 {
		t.Errorf("exit 0 with node4's link cut\n%s", stderr)
	}
	// All in one step, or (the cut fell as a step's last messages flew)
	// some still in it and the rest, having left it, in the next.
	want := regexp.MustCompile(`hang: no rank is behind: the collective itself is stuck \(a link, the fabric or the library\): ` +
		`all 4 ranks (wait in|reached) timing (all-reduce|reduce-scatter \+ all-gather) #\d+ \(4096 bytes, (direct|decomposed), cycle \d+\)` +
		`( for [0-9.]+ s|; ranks? [0-9,-]+ waits? in it for [0-9.]+ s, and ranks? [0-9,-]+, having left it, in the next \([a-z +-]+ #\d+\))`)
	hangSaid(t, stderr, dir, want)
	blamesOnly(t, "stderr", unfold(stderr), -1)
	if strings.Contains(stderr, "stuck rank") {
		t.Errorf("a rank named stuck, with none behind:\n%s", stderr)
	}
	// MPI has no word of its own on the link: the line quotes none.
	if strings.Contains(stderr, "ncclCommGetAsyncError") {
		t.Errorf("an MPI run quotes NCCL:\n%s", stderr)
	}
}
