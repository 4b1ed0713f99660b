package e2e

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// refusedOnce asserts what every refused input leaves: exit 2, want said
// once by rank 0 for every rank, and no output dir.
func refusedOnce(t *testing.T, r result, out, want string) {
	t.Helper()
	if r.code != 2 {
		t.Errorf("exit %d, want 2 (a bad input)\nstderr:\n%s", r.code, r.stderr)
	}
	saidOnce(t, r.stderr, want)
	if _, err := os.Lstat(out); err == nil {
		entries, _ := os.ReadDir(out)
		t.Errorf("a refused run left %s behind: %v", out, entries)
	}
}

// A FIFO as the config is refused at once by its kind, naming the file:
// opened for reading, it would wait for a writer, rank 0 in the open and
// every other rank in the config's broadcast, until the watchdog.
func TestAFIFOConfigIsRefusedAtOnce(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "config.toml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	r := mpirun(t, 2, 60*time.Second, "-config", fifo, "-backend", "mpi", "-output-dir", out)
	refusedOnce(t, r, out, "cannot read the config: "+fifo+": is a named pipe (FIFO), not a TOML file: give a regular file")
}
