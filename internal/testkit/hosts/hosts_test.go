package hosts

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// listenEnv makes the test binary, started on a host, a one-shot TCP server
// that answers with its hostname.
const listenEnv = "RSAG_HOSTS_TEST_LISTEN"

func TestMain(m *testing.M) {
	if addr := os.Getenv(listenEnv); addr != "" {
		os.Exit(serveHostname(addr))
	}
	os.Exit(m.Run())
}

func serveHostname(addr string) int {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Println("listen:", err)
		return 1
	}
	fmt.Println("listening")
	l.(*net.TCPListener).SetDeadline(time.Now().Add(30 * time.Second))
	c, err := l.Accept()
	if err != nil {
		fmt.Println("accept:", err)
		return 1
	}
	name, _ := os.Hostname()
	fmt.Fprintf(c, "%s from %s\n", name, c.RemoteAddr())
	c.Close()
	return 0
}

// The hosts are separate machines in every way the tests rely on, and share
// only what is shared on purpose.
func TestHostsAreSeparate(t *testing.T) {
	shared := t.TempDir()
	bin, _ := os.Executable()
	h := Start(t, Config{Nodes: 2, Share: []string{shared, filepath.Dir(bin)}})
	out := func(host string, args ...string) string {
		t.Helper()
		o, err := h.Output(host, 20*time.Second, args[0], args[1:]...)
		if err != nil {
			t.Fatalf("%s on %s: %v\n%s", strings.Join(args, " "), host, err, o)
		}
		return strings.TrimSpace(o)
	}
	ns := map[string]map[string]string{}
	for i, host := range []string{"head", "node1", "node2"} {
		if got := out(host, "hostname"); got != host {
			t.Errorf("hostname on %s: %q", host, got)
		}
		addr := map[string]string{"head": "10.77.0.254", "node1": "10.77.0.1", "node2": "10.77.0.2"}[host]
		if a := out(host, "ip", "-o", "-4", "addr", "show"); !strings.Contains(a, "inet "+addr+"/24") {
			t.Errorf("%s has no address %s:\n%s", host, addr, a)
		}
		if e := out(host, "cat", "/etc/hosts"); !strings.Contains(e, "10.77.0.2 node2") || !strings.Contains(e, "10.77.0.254 head") {
			t.Errorf("/etc/hosts on %s:\n%s", host, e)
		}
		ns[host] = map[string]string{}
		for _, k := range []string{"net", "uts", "ipc", "mnt"} {
			ns[host][k] = out(host, "readlink", "/proc/self/ns/"+k)
			self, _ := os.Readlink("/proc/self/ns/" + k)
			if ns[host][k] == self {
				t.Errorf("%s shares this machine's %s namespace", host, k)
			}
		}
		// Node-local /tmp and /dev/shm: a file written here is seen nowhere else.
		for _, d := range []string{"/tmp", "/dev/shm"} {
			f := fmt.Sprintf("%s/rsag-hosts-test-%s-%d", d, h.Name, i)
			out(host, "touch", f)
			if _, err := os.Stat(f); err == nil {
				os.Remove(f)
				t.Errorf("%s written on %s is on this machine too", f, host)
			}
		}
		// The shared directory: written on one host, read on the others.
		out(host, "sh", "-c", "echo "+host+" > "+filepath.Join(shared, host))
	}
	if ns["node1"]["ipc"] == ns["node2"]["ipc"] || ns["node1"]["net"] == ns["node2"]["net"] || ns["node1"]["mnt"] == ns["node2"]["mnt"] {
		t.Errorf("node1 and node2 share namespaces: %v", ns)
	}
	for _, host := range []string{"head", "node1", "node2"} {
		if got := out("node2", "cat", filepath.Join(shared, host)); got != host {
			t.Errorf("the shared dir on node2 shows %s's file as %q", host, got)
		}
		if ls := out(host, "ls", "/tmp"); strings.Contains(ls, "rsag-hosts-test-") && strings.Count(ls, "rsag-hosts-test-") != 1 {
			t.Errorf("/tmp on %s holds other hosts' files: %s", host, ls)
		}
	}
	// This machine's own network is untouched.
	if b, err := exec.Command("ip", "-o", "addr", "show").CombinedOutput(); err != nil || strings.Contains(string(b), "10.77.0.") {
		t.Errorf("this machine's namespace has a 10.77.0.x address (%v):\n%s", err, b)
	}

	// TCP from node2 to node1 by name, over the bridge.
	srv := h.Command(t.Context(), "node1", bin)
	srv.Env = append(srv.Env, listenEnv+"=10.77.0.1:7777")
	var srvOut strings.Builder
	srv.Stdout, srv.Stderr = &srvOut, &srvOut
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer srv.Process.Kill()
	var got string
	for i := 0; i < 50; i++ {
		o, err := h.Output("node2", 10*time.Second, "bash", "-c", "exec 3<>/dev/tcp/node1/7777 && cat <&3")
		if err == nil {
			got = strings.TrimSpace(o)
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	srv.Wait()
	if !strings.HasPrefix(got, "node1 from 10.77.0.2:") {
		t.Errorf("node2 -> node1:7777 got %q; server said:\n%s", got, srvOut.String())
	}
}

// `on` is ssh: the words joined for a shell, a fresh login environment, $HOME.
func TestOnIsLikeSSH(t *testing.T) {
	h := Start(t, Config{Nodes: 1})
	cmd := exec.Command(h.Script, "on", "node1", "echo", "$(hostname)", "\"$RSAG_HOSTS_TEST_MARK\"", "$PWD")
	cmd.Env = append(os.Environ(), append(h.Env(), "RSAG_HOSTS_TEST_MARK=leaked")...)
	b, err := cmd.CombinedOutput()
	home := os.Getenv("HOME")
	if home == "" {
		home = "/root"
	}
	// The mark, set here, is empty there: two spaces.
	if got := strings.TrimSpace(string(b)); err != nil || got != "node1  "+home {
		t.Errorf("on node1: %q, %v; want %q: the remote hostname, no caller variables, $HOME", got, err, "node1  "+home)
	}
	cmd = exec.Command(h.Script, "on", "node9", "true")
	cmd.Env = append(os.Environ(), h.Env()...)
	b, err = cmd.CombinedOutput()
	var exit *exec.ExitError
	if !(asExit(err, &exit) && exit.ExitCode() == 255) || !strings.Contains(string(b), "no host node9") {
		t.Errorf("on an unknown host: %v %s; want exit 255 (ssh's) naming it", err, b)
	}
}

func asExit(err error, exit **exec.ExitError) bool {
	e, ok := err.(*exec.ExitError)
	*exit = e
	return ok
}

// Down ends what runs on the hosts and leaves nothing; a second down and a
// down of an instance never made succeed too.
func TestDownEndsEverythingAndLeavesNothing(t *testing.T) {
	h := Start(t, Config{Nodes: 2})
	sleeper := h.Command(t.Context(), "node2", "sleep", "600")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- sleeper.Wait() }()
	deadline := time.Now().Add(10 * time.Second)
	for len(h.PIDs(t, "node2")) == 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if len(h.PIDs(t, "node2")) == 0 {
		t.Fatal("the sleep on node2 is not among node2's processes")
	}
	t0 := time.Now()
	if err := h.Down(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("down left the sleep on node2 running")
	}
	t.Logf("down with a process running took %.1f s", time.Since(t0).Seconds())
	if err := h.Down(); err != nil {
		t.Errorf("a second down: %v", err)
	}
	never := New(t, Config{Nodes: 1})
	if err := never.Down(); err != nil {
		t.Errorf("down of an instance never brought up: %v", err)
	}
}

// An up that fails (a share that does not exist) leaves nothing behind.
func TestFailedUpLeavesNothing(t *testing.T) {
	h := New(t, Config{Nodes: 1, Share: []string{filepath.Join(t.TempDir(), "missing")}})
	out, err := h.run(upTimeout, "up", "--nodes", "1")
	if err == nil || !strings.Contains(out, "no such directory") {
		t.Errorf("up with a missing share: %v\n%s", err, out)
	}
	if err := h.leftovers(); err != nil {
		t.Error(err)
	}
}

// An instance whose owner died is taken down by the next New (hosts.sh gc).
func TestInstancesOfDeadOwnersAreCollected(t *testing.T) {
	owner := exec.Command("sleep", "600")
	if err := owner.Start(); err != nil {
		t.Fatal(err)
	}
	orphan := New(t, Config{Nodes: 1})
	cmd := exec.Command(orphan.Script, "up", "--nodes", "1")
	cmd.Env = append(os.Environ(), "RSAG_HOSTS="+orphan.Name, "RSAG_HOSTS_OWNER="+strconv.Itoa(owner.Process.Pid))
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("up: %v\n%s", err, b)
	}
	New(t, Config{Nodes: 1}) // the owner lives: the instance stays
	if orphan.leftovers() == nil {
		t.Fatal("gc took down an instance whose owner is alive")
	}
	owner.Process.Signal(syscall.SIGKILL)
	owner.Wait()
	New(t, Config{Nodes: 1})
	if err := orphan.leftovers(); err != nil {
		t.Errorf("gc left the dead owner's instance: %v", err)
	}
}
