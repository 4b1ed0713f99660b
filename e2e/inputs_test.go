package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
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
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "config.toml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	r := inproc(t, 2, 60*time.Second, "-config", fifo, "-backend", "mpi", "-output-dir", out)
	refusedOnce(t, r, out, "cannot read the config: "+fifo+": is a named pipe (FIFO), not a TOML file: give a regular file")
}

// A small config nested deep (inline tables 5,000 and 100,000 levels, 20 KB
// and 400 KB) took the TOML decoder minutes and gigabytes on every rank; a
// -set 3,000 deep took seconds and its 18 KB came back in the message. The
// shape is bounded by a scan before decoding: refused at once, named, and
// the value clipped.
func TestANestedConfigIsRefusedBeforeDecoding(t *testing.T) {
	t.Parallel()
	nested := func(n int) string { return strings.Repeat("{a = ", n) + "1" + strings.Repeat("}", n) }
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"5,000 deep", []string{"-config", writeFile(t, dir, "deep.toml", "[timing]\nx = "+nested(5000)+"\n")}, "deep.toml: line 2: nests 33 levels deep, above rsag's bound of 32"},
		{"100,000 deep", []string{"-config", writeFile(t, dir, "deeper.toml", "x = "+nested(100_000)+"\n")}, "deeper.toml: line 1: nests 33 levels deep"},
		{"by -set", append(smoke, "-set", "timing.cycles="+nested(3000)), "-set timing.cycles={a = {a = {a = {a = {a = {a = {a = {a = {a = {a = {a = {a = {a = {... (18015 bytes): line 2: nests 33 levels deep"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			args := append([]string{"-backend", "mpi", "-output-dir", out}, c.args...)
			if !slices.Contains(c.args, "-config") {
				args = append([]string{"-output-dir", out}, c.args...)
			}
			r := inproc(t, 2, time.Minute, args...)
			refusedOnce(t, r, out, c.want)
			if len(r.stderr) > 4000 {
				t.Errorf("stderr is %d bytes: the input is echoed\n%.2000s", len(r.stderr), r.stderr)
			}
		})
	}
}

// A mode that runs in the hierarchy's groups, asked for with [hierarchy]
// off, is refused with the config, before any collective: it used to be
// found by the memory phase, after the contracts and the timings had run
// and written their files, with exit 1.
func TestModesWithoutGroupsAreRefusedUpFront(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, set, want string }{
		{"memory", `memory.modes=["hierarchical-lifetime"]`, `memory.modes: "hierarchical-lifetime" runs within and across the hierarchy's groups, but [hierarchy] is off: set [hierarchy] enabled = true (-set hierarchy.enabled=true), or drop it`},
		{"timing", `timing.modes=["direct","hierarchical"]`, `timing.modes: "hierarchical" runs within and across the hierarchy's groups, but [hierarchy] is off`},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			r := inproc(t, 2, time.Minute, append(append([]string{"-output-dir", out}, smoke...), "-set", c.set)...)
			refusedOnce(t, r, out, c.want)
			if strings.Contains(r.stdout, "contracts:") {
				t.Errorf("the contracts ran before the refusal:\n%s", r.stdout)
			}
		})
	}
}

// A value of RSAG_WAIT that is not one of its own is refused on every
// rank, before any collective, naming the variable and its values: any
// value but "block" used to mean poll, unseen. One rank alone with a bad
// value (mpirun -x for one part of an MPMD line) is named. Each rank reads
// its own environment (job.EnvWorld), given here as mpirun's -x gives it:
// the ranks are in this process; a refusal said once by ranks that are
// processes is TestBadInputsFailOnEveryRank's.
func TestABadWaitModeIsRefused(t *testing.T) {
	t.Parallel()
	want := `RSAG_WAIT="bogus" is not a way to wait: use poll (the default: poll the device and NCCL's errors, spinning for the first 100 ms) or block (wait in the driver, no core spinning), or unset it`
	t.Run("every rank", func(t *testing.T) {
		t.Parallel()
		out := filepath.Join(t.TempDir(), "out")
		r := inprocEnv(t, 2, []string{"RSAG_WAIT=bogus"}, time.Minute, append([]string{"-output-dir", out}, smoke...)...)
		refusedOnce(t, r, out, "bad environment on every rank (")
		saidOnce(t, r.stderr, want)
	})
	t.Run("one rank", func(t *testing.T) {
		t.Parallel()
		out := filepath.Join(t.TempDir(), "out")
		rank := append([]string{"-output-dir", out}, smoke...)
		r := inprocMPMD(t, time.Minute, mpmdPart{np: 1, args: rank}, mpmdPart{np: 1, env: []string{"RSAG_WAIT=bogus"}, args: rank})
		refusedOnce(t, r, out, "bad environment on rank 1 (")
		saidOnce(t, r.stderr, want)
	})
}
