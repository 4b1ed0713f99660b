package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"rsag/internal/atomicfile"
	"rsag/internal/testkit/inmem"
	"rsag/outdir"
	"rsag/report"
)

// These tests hold rsag to issue 21's promises about the output dir: it
// never follows a link it did not make there; a full disk at any write
// leaves no summary.json claiming more than run.json; the closing lines
// come once run.json is final; a path that cannot be written is refused
// before the run; and a refused run leaves nothing behind.

// victimFile is a file outside the output dir that a planted link aims at.
func victimFile(t *testing.T) string {
	t.Helper()
	v := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(v, []byte("the victim's own\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return v
}

func victimIntact(t *testing.T, v string) {
	t.Helper()
	if b, err := os.ReadFile(v); err != nil || string(b) != "the victim's own\n" {
		t.Errorf("the victim %s was written through a link: %q, %v", v, b, err)
	}
}

// entryNames lists dir's entries by name.
func entryNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// everyName is every name a smoke run on 2 ranks writes in its output dir:
// run.json's files, the lock, each rank's note, a temporary of each kind
// of file (a rank's, a combined one, a figure, summary.json, run.json),
// and the probe's and write test's kinds of name.
func everyName(t *testing.T) []string {
	t.Helper()
	dir := t.TempDir()
	if r := inproc(t, 2, time.Minute, append([]string{"-output-dir", dir}, smoke...)...); r.code != 0 {
		t.Fatalf("the reference run: exit %d\n%s", r.code, r.stderr)
	}
	run, err := outdir.ReadRecord(dir)
	if err != nil || run.Status != outdir.StatusComplete || len(run.Files) < 20 {
		t.Fatalf("the reference run's %s: %+v, %v; want complete, with its files", outdir.RunFile, run, err)
	}
	names := slices.Clone(run.Files)
	names = append(names, outdir.LockFile, ".rsag-note-rank0", ".rsag-note-rank1", outdir.ProbePrefix+"0123456789abcdef0123456789abcdef",
		outdir.WriteTestPrefix+"0123456789abcdef")
	for _, f := range []string{"rank1_timings.csv", "memory.csv", "time_vs_size.png", report.SummaryFile, "report.html", outdir.RunFile} {
		names = append(names, atomicfile.TempName(f, 1234567))
	}
	return names
}

// A link planted at any name rsag writes is refused before anything runs,
// naming it and what it points to, on every rank alike; the file it points
// to is untouched, the link is left, and nothing else is written. (Ranks
// in this process: the refusal is the run's logic.)
func TestNoPlantedLinkIsFollowed(t *testing.T) {
	t.Parallel()
	for _, name := range everyName(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir, v := t.TempDir(), victimFile(t)
			link := filepath.Join(dir, name)
			if err := os.Symlink(v, link); err != nil {
				t.Fatal(err)
			}
			r := inproc(t, 2, time.Minute, append([]string{"-output-dir", dir}, smoke...)...)
			if r.code != 2 {
				t.Errorf("exit %d, want 2 (a refused output dir)\nstderr:\n%s", r.code, r.stderr)
			}
			saidOnce(t, r.stderr, link+" is a symbolic link to "+v+", which rsag did not make: rsag never follows a link in an output dir")
			victimIntact(t, v)
			if got := entryNames(t, dir); !slices.Equal(got, []string{name}) {
				t.Errorf("the dir holds %v, want the link alone", got)
			}
			if target, err := os.Readlink(link); err != nil || target != v {
				t.Errorf("the link was replaced: %q, %v", target, err)
			}
		})
	}
}

// A link planted once the run's checks are past, at a file a rank writes
// or at summary.json, is refused by the writer itself: the run fails
// naming it, once, on every rank alike, run.json says failed, and the
// victim is untouched. The lock file swapped for a link while held is
// neither touched nor removed.
func TestALinkPlantedMidRunIsNotFollowed(t *testing.T) {
	t.Parallel()
	// One of each stage's (a rank's, a combined one, a figure, a last one),
	// and the lock.
	// And a node's heartbeat file, which every beat rewrites (issue 34
	// class 15: it was once met by a beat and passed over silently).
	for _, name := range []string{"rank1_timings.csv", "timings.csv", "time_vs_size.png", report.SummaryFile, outdir.LockFile, outdir.NodeBeatName(0)} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir, v := t.TempDir(), victimFile(t)
			link := filepath.Join(dir, name)
			// Rank 0's 3360-byte AllReduces each sleep 20 ms first
			// (testdata/slow.c's, in memory: slowIn): the timing phase lasts
			// 2 s at least, asleep, whatever the machine's pace, and beats
			// and writes meet the link. The ranks are in this process: the
			// writers' refusal is the run's logic.
			var plantErr error
			planted := false
			plant := func(stdout string) {
				// Once the contracts have run, the checks are long past;
				// rank 0 waits here until the link is in place.
				if planted || !strings.Contains(stdout, "contracts: ") {
					return
				}
				planted = true
				if name == outdir.LockFile {
					os.Remove(link)
				}
				plantErr = os.Symlink(v, link)
				// A heartbeat is there already, rewritten every beat: take
				// its place between two beats.
				for i := 0; name == outdir.NodeBeatName(0) && plantErr != nil && i < 50; i++ {
					os.Remove(link)
					plantErr = os.Symlink(v, link)
				}
			}
			r := inprocWatching(t, 2, inmem.Faults{Slow: slowIn(0, "Allreduce:3360:20000")}, plant, 3*time.Minute,
				append(append([]string{"-output-dir", dir}, smoke...), "-set", "timing.cycles=100")...)
			if !planted || plantErr != nil {
				t.Fatalf("the link was not planted (contracts line seen: %v): %v\nstdout:\n%s", planted, plantErr, r.stdout)
			}
			code, stderr := r.code, r.stderr
			victimIntact(t, v)
			if target, err := os.Readlink(link); err != nil || target != v {
				t.Errorf("the link was replaced or removed: %q, %v", target, err)
			}
			run, err := outdir.ReadRecord(dir)
			if name == outdir.LockFile {
				// The run holds the lock by its descriptor: it goes on, and
				// leaves the link that is not its own.
				if code != 0 || err != nil || run.Status != outdir.StatusComplete {
					t.Errorf("exit %d, %s %+v, %v; want complete\n%s", code, outdir.RunFile, run, err, stderr)
				}
				return
			}
			want := link + " is a symbolic link to " + v
			if code == 0 || !strings.Contains(stderr, want) {
				t.Errorf("exit %d; want a failure naming %q\nstderr:\n%s", code, want, stderr)
			}
			// Every rank learns of rank 0's failed write and ends alike,
			// rather than by rank 0's abort while the others finalize.
			saidOnce(t, stderr, want)
			if err != nil || run.Status != outdir.StatusFailed || !strings.Contains(run.Reason, want) {
				t.Errorf("%s: %+v, %v; want failed, naming the link", outdir.RunFile, run, err)
			}
		})
	}
}

// A directory, a FIFO or a too-long name where rsag will write a file is
// refused before anything runs (a run that checked only at the end would
// time for minutes here), naming the path and the fix, and the dir is as
// it was.
func TestUnwritableOutputPathsAreRefusedFirst(t *testing.T) {
	t.Parallel()
	cfgs := t.TempDir()
	longRun := strings.Repeat("r", 300)
	long := writeFile(t, cfgs, "long.toml", fmt.Sprintf("[timing]\nsizes_bytes = [4096]\ncycles = 50000000\n[[run]]\nname = %q\n", longRun))
	for _, c := range []struct {
		name  string
		plant func(dir string) error
		args  []string
		want  string
	}{
		{"summary.json is a directory", func(dir string) error { return os.Mkdir(filepath.Join(dir, "summary.json"), 0o755) }, longTiming,
			"/summary.json is a directory, where rsag writes a file of its own: move it away, or choose another -output-dir"},
		{"a figure is a directory", func(dir string) error { return os.Mkdir(filepath.Join(dir, "time_vs_size.png"), 0o755) }, longTiming,
			"/time_vs_size.png is a directory, where rsag writes a file of its own"},
		{"a rank's file is a FIFO", func(dir string) error { return syscall.Mkfifo(filepath.Join(dir, "rank1_timings.csv"), 0o644) }, longTiming,
			"/rank1_timings.csv is a named pipe (FIFO), where rsag writes a file of its own"},
		{"a [[run]] name too long for a file name", nil, []string{"-config", long, "-backend", "mpi"},
			fmt.Sprintf("the file time_vs_size_%s... (317 bytes) would need a name of 332 bytes (with the suffix of its temporary file), "+
				"above the 255 bytes a name may have on the file system of", longRun[:67])},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if c.plant != nil {
				if err := c.plant(dir); err != nil {
					t.Fatal(err)
				}
			}
			before := entryNames(t, dir)
			r := inproc(t, 2, time.Minute, append([]string{"-output-dir", dir}, c.args...)...)
			if r.code != 2 {
				t.Errorf("exit %d, want 2\nstderr:\n%s", r.code, r.stderr)
			}
			saidOnce(t, r.stderr, c.want)
			if strings.Contains(r.stdout, "contracts: ") {
				t.Errorf("the run started before it was refused:\n%s", r.stdout)
			}
			if after := entryNames(t, dir); !slices.Equal(after, before) {
				t.Errorf("the dir holds %v, was %v", after, before)
			}
		})
	}
	t.Run("the fix a too-long name is given fits", func(t *testing.T) {
		r := inproc(t, 2, time.Minute, "-output-dir", filepath.Join(t.TempDir(), "out"), "-config", long, "-backend", "mpi")
		m := regexp.MustCompile(`give that \[\[run\]\] a name of at most ([0-9]+) bytes`).FindStringSubmatch(r.stderr)
		if m == nil {
			t.Fatalf("no fix named:\n%s", r.stderr)
		}
		n, _ := strconv.Atoi(m[1])
		dir := t.TempDir()
		fits := writeFile(t, cfgs, "fits.toml", fmt.Sprintf("[timing]\nsizes_bytes = [3360, 215040, 1075200]\ncycles = 2\n[memory]\nenabled = false\n[[run]]\nname = %q\n", longRun[:n]))
		if r := inproc(t, 2, time.Minute, "-output-dir", dir, "-config", fits, "-backend", "mpi"); r.code != 0 {
			t.Errorf("a run named as the fix says: exit %d\n%s", r.code, r.stderr)
		}
		if run, err := outdir.ReadRecord(dir); err != nil || run.Status != outdir.StatusComplete {
			t.Errorf("%+v, %v", run, err)
		}
	})
}

// A run refused for any reason leaves nothing behind: not the output dir,
// nor any parent of it that it made, whether the refusal came from the
// backend's checks or from the path itself. (A dir that is not shared, made
// by each node for itself, is multinode_test's.) All of it is the run's
// logic, in this process, whose backend refuses the dtype as MPI's does
// (inprocMPI).
func TestARefusedRunLeavesNoDirectory(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		sub  string
		args []string
		want string
	}{
		{"a dtype the backend lacks", "a/b/out", []string{"-set", `timing.dtypes=["float16"]`}, "the MPI backend cannot run collectives on float16"},
		{"a payload above memory", "a/b/out", []string{"-set", "memory.payload_bytes=1024G"}, "of host memory at once on each rank"},
		{"a path past PATH_MAX", strings.Repeat(strings.Repeat("d", 200)+"/", 21), nil, "above Linux's limit of 4096 bytes on a path (PATH_MAX"},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			out := filepath.Join(root, c.sub)
			r := inprocMPI(t, 2, time.Minute, append(append([]string{"-output-dir", out}, smoke...), c.args...)...)
			if r.code != 2 {
				t.Errorf("exit %d, want 2\nstderr:\n%s", r.code, r.stderr)
			}
			saidOnce(t, r.stderr, c.want)
			if left := entryNames(t, root); len(left) > 0 {
				t.Errorf("a refused run left %v in %s", left, root)
			}
		})
	}
}

// The closing lines come once run.json says complete, every file listed
// there present, with the time the run took to get there; with many runs,
// whose figures take seconds to write, a line printed before them would
// find run.json still running. A run that fails says so instead, once
// run.json does. The ranks are in this process, and run.json is read as
// rank 0 writes the line, rank 0 waiting (inprocWatching).
func TestClosingLinesComeLast(t *testing.T) {
	t.Parallel()
	cfg := "[timing]\nsizes_bytes = [3360, 215040, 1075200]\ncycles = 2\n[memory]\nenabled = false\n"
	for i := range 6 {
		cfg += fmt.Sprintf("[[run]]\nname = \"run%d\"\n", i)
	}
	path := writeFile(t, t.TempDir(), "runs.toml", cfg)
	t.Run("complete", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		var run outdir.Record
		var err error
		var missing []error
		seen := false
		r := inprocWatching(t, 2, inmem.Faults{}, func(stdout string) {
			if seen || !strings.Contains(stdout, "results in ") {
				return
			}
			seen = true
			run, err = outdir.ReadRecord(dir)
			for _, f := range run.Files {
				if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
					missing = append(missing, err)
				}
			}
		}, 2*time.Minute, "-output-dir", dir, "-config", path, "-backend", "mpi")
		if !seen || err != nil || run.Status != outdir.StatusComplete {
			t.Fatalf("when the closing line came (%v), %s said %+v (%v); want complete\n%s", seen, outdir.RunFile, run, err, r.stdout)
		}
		for _, err := range missing {
			t.Errorf("when the closing line came, a file was missing: %v", err)
		}
		if r.code != 0 {
			t.Errorf("exit %d", r.code)
		}
		stdout := r.stdout
		if v := verdict(t, stdout); v != nil && (v[1] != "PASSED" || v[2] != "results in "+dir) {
			t.Errorf("the verdict of a complete run: %q", v[0])
		}
		m := regexp.MustCompile(`results in \S+ \(([0-9.]+) s since rank 0 started\)\ncontracts_per_rank=5 timings_per_rank=`).FindStringSubmatch(stdout)
		if m == nil {
			t.Fatalf("no closing lines at the end:\n%s", stdout)
		}
		took, _ := strconv.ParseFloat(m[1], 64)
		started, _ := time.Parse(time.RFC3339, run.Started)
		st, _ := os.Stat(filepath.Join(dir, outdir.RunFile))
		// started has whole seconds: the true start is up to 1 s later.
		if atLeast := st.ModTime().Sub(started).Seconds() - 1; took < atLeast {
			t.Errorf("the closing line says %.1f s, but run.json was final %.1f s after the start", took, atLeast+1)
		}
	})
	t.Run("failed", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		var run outdir.Record
		var err error
		seen := false
		r := inprocWatching(t, 2, inmem.Faults{}, func(stdout string) {
			if !seen && strings.Contains(stdout, "are not complete") {
				seen = true
				run, err = outdir.ReadRecord(dir)
			}
		}, 2*time.Minute, "-output-dir", dir, "-config", path, "-backend", "mpi", "-set", "timing.min_busbw_gbps=100000")
		if !seen || err != nil || run.Status != outdir.StatusFailed {
			t.Errorf("when the failure line came (%v), %s said %+v (%v); want failed", seen, outdir.RunFile, run, err)
		}
		if r.code != 1 {
			t.Errorf("exit %d, want 1", r.code)
		}
		stdout := r.stdout
		if !regexp.MustCompile(`results in \S+ are not complete \([0-9.]+ s since rank 0 started; its run.json says failed\): .*bus bandwidth`).MatchString(unfolded(stdout)) {
			t.Errorf("no line saying what failed:\n%s", stdout)
		}
		if strings.Contains(stdout, "contracts_per_rank=") || regexp.MustCompile(`results in \S+ \(`).MatchString(stdout) {
			t.Errorf("a failed run printed the closing lines of a complete one:\n%s", stdout)
		}
		// The verdict comes last, once, naming the exit status and the dir.
		if m := verdict(t, stdout); m != nil && (m[1] != "FAILED (exit 1)" || m[2] != "results in "+dir) {
			t.Errorf("the verdict of a run that failed the gate: %q", m[0])
		}
	})
}

// tmpfs mounts a tmpfs of size bytes and inodes inodes (its root is one)
// under the test's temporary dir, and unmounts it at the end; it skips
// where no file system can be mounted (not root, in a container without
// CAP_SYS_ADMIN).
func tmpfs(t *testing.T, size, inodes int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "fs")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d,nr_inodes=%d,mode=0755", size, inodes)); err != nil {
		t.Skipf("cannot mount a tmpfs to fill: %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmounting %s: %v", dir, err)
		}
	})
	return dir
}

// fullDiskRun is one run into a file system that fills at some write, and
// what it must leave whatever that write was: a non-zero exit naming the
// full disk, no summary.json or report.html unless run.json says complete, run.json (if
// any) failed with the reason, never running, and no lock or temporary
// left. It returns whether the run completed. start is mpirun or inproc.
func fullDiskRun(t *testing.T, start func(*testing.T, int, time.Duration, ...string) result, dir string, args []string) bool {
	t.Helper()
	r := start(t, 2, time.Minute, append([]string{"-output-dir", dir}, args...)...)
	run, runErr := outdir.ReadRecord(dir)
	var sum struct{ Status string }
	sumData, sumErr := os.ReadFile(filepath.Join(dir, report.SummaryFile))
	if sumErr == nil {
		json.Unmarshal(sumData, &sum)
	}
	if r.code == 0 {
		if runErr != nil || run.Status != outdir.StatusComplete || sum.Status != outdir.StatusComplete {
			t.Errorf("exit 0 with %s %+v (%v) and summary.json %q", outdir.RunFile, run, runErr, sum.Status)
		}
		return true
	}
	if !strings.Contains(r.stderr, "no space left on device") {
		t.Errorf("exit %d without naming the full disk:\n%s", r.code, r.stderr)
	}
	if sumErr == nil {
		t.Errorf("summary.json (%q) exists beside %s %q of a run that failed", sum.Status, outdir.RunFile, run.Status)
	}
	if _, err := os.Stat(filepath.Join(dir, "report.html")); err == nil {
		t.Errorf("report.html, which states the run's verdict, exists beside %s %q of a run that failed", outdir.RunFile, run.Status)
	}
	if runErr == nil && (run.Status != outdir.StatusFailed || !strings.Contains(run.Reason, "no space left on device")) {
		t.Errorf("%s after a full disk: %+v; want failed, naming it", outdir.RunFile, run)
	}
	if regexp.MustCompile(`results in \S+ \(`).MatchString(r.stdout) {
		t.Errorf("a failed run printed that its results are in:\n%s", r.stdout)
	}
	// rsag compare, which reads run.json beside a summary, finds nothing to
	// compare in what the run left.
	if out, err := exec.Command(rsagBin, "compare", dir, dir).CombinedOutput(); err == nil {
		t.Errorf("rsag compare took the results of a run that failed:\n%s", out)
	}
	for _, name := range entryNames(t, dir) {
		if _, temp := atomicfile.TargetOf(name); temp || name == outdir.LockFile {
			t.Errorf("left behind: %s", name)
		}
	}
	return false
}

// A disk that fills at each of a run's writes in turn (a tmpfs with one
// more inode each time: the write test, the probe, the lock, run.json's
// start and its rewrites, each rank's file, the combined one, each figure,
// summary.json, the final run.json) never leaves summary.json saying more
// than run.json, nor run.json saying running; and one that fills by bytes
// at a figure does the same. That one is the full disk's representative
// under mpirun; the others' ranks run in this process, writing the same
// files in the same order.
func TestAFullDiskAtEachWrite(t *testing.T) {
	t.Parallel()
	// One memory mode alone: every kind of output (a rank's, a combined
	// one, a figure, summary.json), in few files.
	args := append(slices.Clone(smoke), "-set", "contracts.enabled=false", "-set", "timing.enabled=false",
		"-set", `memory.modes=["allreduce-full"]`)
	completed := false
	for inodes := 1; inodes <= 16 && !completed; inodes++ {
		t.Run(fmt.Sprintf("%d inodes", inodes), func(t *testing.T) {
			completed = fullDiskRun(t, inproc, tmpfs(t, 64<<20, inodes), args)
		})
	}
	if !completed {
		t.Error("no run completed even with 16 inodes")
	}
	t.Run("full by bytes at a figure", func(t *testing.T) {
		// 8 pages: the lock, run.json and its rewrites, the CSVs fit; a
		// figure's PNG (about 30 KiB) does not.
		if fullDiskRun(t, mpirun, tmpfs(t, 8*4096, 64), args) {
			t.Error("the run completed in 32 KiB; the test no longer fills the disk at a figure")
		}
	})
}
