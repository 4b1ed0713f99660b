package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"rsag/internal/testkit/outcheck"
	"rsag/outdir"
)

// beatWrites counts the heartbeat files renamed into place in dir (every
// heartbeat write is a temporary renamed over its file) from now until
// stop is called, by inotify: what the shared file system's metadata
// server would see, whichever host wrote.
func beatWrites(t *testing.T, dir string) (stop func() (writes int, names map[string]int, took time.Duration)) {
	t.Helper()
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		t.Skipf("inotify: %v", err)
	}
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_MOVED_TO); err != nil {
		unix.Close(fd)
		t.Fatal(err)
	}
	var mu sync.Mutex
	names := map[string]int{}
	var first, last time.Time
	done, quit := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 64<<10)
		for {
			n, err := unix.Read(fd, buf)
			if err == unix.EAGAIN {
				select {
				case <-quit:
					return
				case <-time.After(20 * time.Millisecond): // a close does not wake a blocked read: poll
				}
				continue
			}
			if n <= 0 || err != nil {
				return
			}
			for off := 0; off+unix.SizeofInotifyEvent <= n; {
				ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
				name := strings.TrimRight(string(buf[off+unix.SizeofInotifyEvent:off+unix.SizeofInotifyEvent+int(ev.Len)]), "\x00")
				off += unix.SizeofInotifyEvent + int(ev.Len)
				if strings.HasPrefix(name, outdir.BeatPrefix) {
					mu.Lock()
					if names[name]++; first.IsZero() {
						first = time.Now()
					}
					last = time.Now()
					mu.Unlock()
				}
			}
		}
	}()
	return func() (int, map[string]int, time.Duration) {
		time.Sleep(100 * time.Millisecond) // the last events
		close(quit)
		<-done
		unix.Close(fd)
		mu.Lock()
		defer mu.Unlock()
		writes := 0
		for _, n := range names {
			writes += n
		}
		return writes, names, last.Sub(first)
	}
}

// At 16 ranks on 4 emulated hosts, the heartbeats' writes to the shared
// output dir grow with the hosts, not the ranks: one file a host, about
// one rename a host a second, where one file a rank would take four
// times as many.
func (m *multi) testBeatsGrowWithHosts(t *testing.T) {
	dir := filepath.Join(m.shared, "beats-per-host")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	stop := beatWrites(t, dir)
	// A timing phase of some seconds, at a size 16 ranks divide: 60 cycles
	// take about 8 s here (30 took 4.9 s; 20 took 21 s before the ranks
	// yielded while they wait), where a beat a rank a second would be 16
	// writes a second and a beat a host a second 4.
	r := m.mpirun(t, 3*time.Minute, nil, []string{"-np", "16", "--oversubscribe", "--host", "node1:4,node2:4,node3:4,node4:4", "--map-by", "slot"},
		"-output-dir", dir, "-set", "timing.sizes_bytes=[4096]", "-set", "timing.cycles=60", "-set", "memory.enabled=false")
	writes, names, took := stop()
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if err := outcheck.CheckManifest(dir); err != nil {
		t.Error(err)
	}
	const hosts, ranks = 4, 16
	secs := took.Seconds()
	t.Logf("%d heartbeat writes in %.1f s into %d files: %.1f a second, %.2f a host a second", writes, secs, len(names), float64(writes)/max(secs, 1), float64(writes)/max(secs, 1)/hosts)
	if len(names) != hosts {
		t.Errorf("heartbeat files %v, want one a host (%d)", names, hosts)
	}
	// A beat a host a second, with room for a writer late on this loaded
	// machine and its successor writing too, and the start and end: the
	// first write, and the last beats of ranks that end otherwise than
	// cleanly or last on their host.
	bound := int(float64(hosts)*(1.5*secs+2)) + 2*hosts
	perRank := int(float64(ranks) * secs)
	if writes > bound {
		t.Errorf("%d heartbeat writes in %.1f s, want at most %d (hosts x seconds, with slack); one a rank a second would be %d", writes, secs, bound, perRank)
	}
	if secs < 3 {
		t.Logf("the run took %.1f s: too short to tell a host's rate from a rank's", secs)
	}
}
