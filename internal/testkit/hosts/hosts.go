// Package hosts gives a test emulated cluster nodes on this machine
// (scripts/hosts.sh: a network, UTS, IPC and mount namespace per host) and
// always takes them down again: in t.Cleanup, before the test binary's
// deadline, and on SIGINT or SIGTERM. An instance is owned by the test
// process, so one that a killed test left behind is taken down by the next
// test that starts (hosts.sh gc). The tests need root; without it they skip.
package hosts

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

const (
	upTimeout   = 2 * time.Minute // includes apt-get install of iproute2 on a bare machine
	downTimeout = time.Minute     // the script bounds itself well below this
	// deadlineMargin is how long before the test binary's deadline the hosts
	// are taken down: a test that times out is killed without its cleanups.
	deadlineMargin = 20 * time.Second
)

// Config describes an instance.
type Config struct {
	Nodes int      // node1..nodeN; 0 means 2
	Share []string // directories every host sees, as NFS would give them, beyond the checkout
}

// Hosts is one instance: head and node1..nodeN.
type Hosts struct {
	Name   string   // the instance (RSAG_HOSTS)
	Nodes  []string // "node1", ...
	Repo   string   // the checkout's root
	Script string   // scripts/hosts.sh
	shares []string
	once   sync.Once
	downed error
}

var seq atomic.Int64

// New prepares an instance for t and registers its teardown, without
// bringing it up: Up does, or a script given Env (slurm/local-cluster.sh
// --nodes N). It skips t unless it runs as root.
func New(t testing.TB, cfg Config) *Hosts {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("emulated hosts need root (euid is %d): network, UTS, IPC and mount namespaces; CI runs these tests as root", os.Geteuid())
	}
	h, err := Prepare(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if tt, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if d, ok := tt.Deadline(); ok {
			timer := time.AfterFunc(time.Until(d)-deadlineMargin, func() {
				fmt.Fprintf(os.Stderr, "hosts: the test deadline is near: taking instance %s down\n", h.Name)
				h.Down()
			})
			t.Cleanup(func() { timer.Stop() })
		}
	}
	t.Cleanup(func() {
		t0 := time.Now()
		err := h.Down()
		t.Logf("hosts %s down (%.1f s)", h.Name, time.Since(t0).Seconds())
		if err != nil {
			t.Errorf("taking hosts %s down: %v", h.Name, err)
		}
	})
	return h
}

// Prepare is New for an instance that outlives one test (a package's,
// shared by its tests): it takes down the instances a killed test left and
// guards this one against SIGINT and SIGTERM, and the caller calls Down
// when its tests have ended. It needs root.
func Prepare(cfg Config) (*Hosts, error) {
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("emulated hosts need root (euid is %d): network, UTS, IPC and mount namespaces", os.Geteuid())
	}
	if cfg.Nodes == 0 {
		cfg.Nodes = 2
	}
	repo, err := repoRoot()
	if err != nil {
		return nil, err
	}
	h := &Hosts{Name: fmt.Sprintf("t%d-%d", os.Getpid(), seq.Add(1)), Repo: repo,
		Script: filepath.Join(repo, "scripts", "hosts.sh"), shares: cfg.Share}
	for i := 1; i <= cfg.Nodes; i++ {
		h.Nodes = append(h.Nodes, fmt.Sprintf("node%d", i))
	}
	// Instances left by a test that was killed.
	if out, err := h.run(downTimeout, "gc"); err != nil {
		return nil, fmt.Errorf("hosts.sh gc: %w\n%s", err, out)
	}
	guard(h)
	return h, nil
}

// Start is New and Up.
func Start(t testing.TB, cfg Config) *Hosts {
	t.Helper()
	h := New(t, cfg)
	h.Up(t)
	return h
}

// Up brings the hosts up (seconds: more on a loaded machine).
func (h *Hosts) Up(t testing.TB) {
	t.Helper()
	t0 := time.Now()
	out, err := h.run(upTimeout, "up", "--nodes", strconv.Itoa(len(h.Nodes)))
	if err != nil {
		t.Fatalf("hosts.sh up: %v\n%s", err, out)
	}
	t.Logf("hosts %s up: head, %s (%.1f s)", h.Name, strings.Join(h.Nodes, ", "), time.Since(t0).Seconds())
}

// Down ends every process on the hosts and removes them, once; later calls
// return the first call's result. It checks that nothing is left.
func (h *Hosts) Down() error {
	h.once.Do(func() {
		unguard(h)
		out, err := h.run(downTimeout, "down")
		if err != nil {
			h.downed = fmt.Errorf("hosts.sh down: %w\n%s", err, out)
			return
		}
		h.downed = h.leftovers()
	})
	return h.downed
}

// leftovers names what of the instance still exists.
func (h *Hosts) leftovers() error {
	var left []string
	if m, _ := filepath.Glob("/run/netns/" + h.Name + "-*"); len(m) > 0 {
		left = append(left, m...)
	}
	if _, err := os.Stat(filepath.Join("/run/rsag-hosts", h.Name)); err == nil {
		left = append(left, filepath.Join("/run/rsag-hosts", h.Name))
	}
	// The hosts' holders (hosts.sh names them rsag-host-NAME-HOST).
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		if b, err := os.ReadFile(p); err == nil && bytes.HasPrefix(b, []byte("rsag-host-"+h.Name+"-")) {
			left = append(left, fmt.Sprintf("process %s (%s)", filepath.Base(filepath.Dir(p)), bytes.TrimRight(b, "\x00")))
		}
	}
	if len(left) > 0 {
		return fmt.Errorf("left behind: %s", strings.Join(left, ", "))
	}
	return nil
}

// Env is the environment that selects and owns this instance, for
// hosts.sh and the scripts that call it: RSAG_HOSTS, RSAG_HOSTS_OWNER (this
// process) and RSAG_HOSTS_SHARE.
func (h *Hosts) Env() []string {
	return []string{"RSAG_HOSTS=" + h.Name, "RSAG_HOSTS_OWNER=" + strconv.Itoa(os.Getpid()),
		"RSAG_HOSTS_SHARE=" + strings.Join(h.shares, ":")}
}

// MPIEnv is what makes an mpirun on head reach the nodes through hosts.sh
// instead of ssh (`hosts.sh env`), with Env.
func (h *Hosts) MPIEnv(t testing.TB) []string {
	t.Helper()
	out, err := h.run(10*time.Second, "env")
	if err != nil {
		t.Fatalf("hosts.sh env: %v\n%s", err, out)
	}
	env := h.Env()
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		kv, ok := strings.CutPrefix(line, "export ")
		k, v, ok2 := strings.Cut(kv, "=")
		if !ok || !ok2 {
			t.Fatalf("hosts.sh env: unexpected line %q", line)
		}
		env = append(env, k+"="+strings.Trim(v, "'"))
	}
	return env
}

// Command runs name with args on host (hosts.sh exec): exactly these
// arguments, in the working directory, with this process's environment and
// the instance's Env (append to cmd.Env for more).
func (h *Hosts) Command(ctx context.Context, host, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, h.Script, append([]string{"exec", host, name}, args...)...)
	cmd.Env = append(os.Environ(), h.Env()...)
	return cmd
}

// Output runs a command on host, bounded by timeout, and returns its
// combined output.
func (h *Hosts) Output(host string, timeout time.Duration, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := h.Command(ctx, host, name, args...)
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		err = fmt.Errorf("%s on %s: timed out after %v: %w", name, host, timeout, err)
	}
	return string(out), err
}

// PIDs returns every process on host.
func (h *Hosts) PIDs(t testing.TB, host string) []int {
	t.Helper()
	out, err := h.run(30*time.Second, "pids", host)
	if err != nil {
		t.Fatalf("hosts.sh pids %s: %v\n%s", host, err, out)
	}
	var pids []int
	for _, f := range strings.Fields(out) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("hosts.sh pids %s: %q", host, out)
		}
		pids = append(pids, pid)
	}
	return pids
}

// run runs hosts.sh with this instance's environment.
func (h *Hosts) run(timeout time.Duration, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, h.Script, args...)
	cmd.Env = append(os.Environ(), h.Env()...)
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		err = fmt.Errorf("hosts.sh %s: timed out after %v: %w", strings.Join(args, " "), timeout, err)
	}
	return string(out), err
}

// repoRoot is the directory above the working directory that holds go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			if _, err := os.Stat(filepath.Join(dir, "scripts", "hosts.sh")); err != nil {
				return "", fmt.Errorf("%s has no scripts/hosts.sh: %w", dir, err)
			}
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// Instances still up, taken down on SIGINT or SIGTERM (a test binary killed
// by a signal runs no cleanups).
var (
	liveMu sync.Mutex
	live   = map[*Hosts]bool{}
	sigs   chan os.Signal
)

func guard(h *Hosts) {
	liveMu.Lock()
	defer liveMu.Unlock()
	live[h] = true
	if sigs != nil {
		return
	}
	sigs = make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func(c chan os.Signal) {
		s, ok := <-c
		if !ok {
			return
		}
		liveMu.Lock()
		var all []*Hosts
		for h := range live {
			all = append(all, h)
		}
		liveMu.Unlock()
		for _, h := range all {
			fmt.Fprintf(os.Stderr, "hosts: %v: taking instance %s down\n", s, h.Name)
			h.Down()
		}
		os.Exit(1)
	}(sigs)
}

func unguard(h *Hosts) {
	liveMu.Lock()
	defer liveMu.Unlock()
	delete(live, h)
	if len(live) == 0 && sigs != nil {
		signal.Stop(sigs)
		close(sigs)
		sigs = nil
	}
}
