// Package e2e runs the real rsag binary under mpirun on the MPI backend and
// checks what a user gets: files, rows, values, messages and exit codes.
package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"rsag/internal/fold"
	"rsag/internal/testkit/mpitesting"
	"rsag/internal/testkit/outcheck"
)

var rsagBin string

// TestMain uses the binary the Makefile built (RSAG_BIN), or builds one.
func TestMain(m *testing.M) {
	if _, err := exec.LookPath("mpirun"); err != nil {
		fmt.Println("e2e: mpirun not found; install Open MPI (make deps) to run the end-to-end tests")
		os.Exit(1)
	}
	// Open MPI's session directory races between jobs that start at once
	// (go test runs packages in parallel): this package's jobs get their own.
	removeSessionDir, err := mpitesting.IsolateSessionDir()
	if err != nil {
		panic(err)
	}
	defer removeSessionDir()
	// Jobs run side by side here (t.Parallel, and other packages' tests).
	if err := mpitesting.YieldWhenIdle(); err != nil {
		panic(err)
	}
	rsagBin = os.Getenv("RSAG_BIN")
	if rsagBin == "" {
		dir, err := os.MkdirTemp("", "rsag-e2e")
		if err != nil {
			panic(err)
		}
		defer os.RemoveAll(dir)
		rsagBin = filepath.Join(dir, "rsag")
		out, err := exec.Command("go", "build", "-o", rsagBin, "..").CombinedOutput()
		if err != nil {
			fmt.Printf("e2e: building rsag: %v\n%s", err, out)
			os.Exit(1)
		}
	}
	// Tests of behaviour (refusals, signals, the output dir, the hangs and
	// stopped ranks) call t.Parallel: most of their time is mpirun
	// starting and ending, or a deadline passing, which several at a time
	// share (make test runs four at once, -parallel 4). They hold on a
	// loaded machine, which is what the others beside them make. Those
	// that measure (locate's medians, the fits, the history's planted
	// step) run alone.
	code := m.Run()
	removeInterposers()
	closeBrowser()
	removeFastRsag()
	removeSessionDir()
	os.Exit(code)
}

type result struct {
	stdout string
	// stderr is what the job said, rsag's folded lines joined again
	// (unfold): the assertions read a message whole, as run.json holds it.
	// rawStderr is as printed, folded at the terminal's width.
	stderr, rawStderr string
	code              int
	took              time.Duration
}

// unfold joins the lines rsag folded to the terminal's width (each
// continuation indented two columns past the line it continues), so that
// a pattern can span them; other lines are left as they are.
func unfold(text string) string { return fold.Unfold(text, fold.Width) }

// mpirun starts rsag on np ranks and fails the test if it outlives limit:
// a hang is a failure, never a stuck CI.
func mpirun(t *testing.T, np int, limit time.Duration, args ...string) result {
	t.Helper()
	return launchEnv(t, limit, []string{killAtOnce}, append([]string{"../scripts/mpirun.sh", fmt.Sprint(np), rsagBin}, args...)...)
}

// launch runs a command line that starts rsag, within limit.
func launch(t *testing.T, limit time.Duration, argv ...string) result {
	t.Helper()
	return launchEnv(t, limit, nil, argv...)
}

// launchEnv is launch with extra environment for the job.
func launchEnv(t *testing.T, limit time.Duration, env []string, argv ...string) result {
	t.Helper()
	return runWithin(t, limit, fmt.Sprintf("%q", argv), func(ctx context.Context) *exec.Cmd {
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Env = jobEnv(t, env...)
		cmd.WaitDelay = 10 * time.Second
		return cmd
	})
}

// killAtOnce turns off Open MPI's grace (odls_base_sigkill_timeout, 1 s)
// between the SIGTERM and the SIGKILL it sends the rest of a job once one
// rank has exited non-zero: a 2-rank refusal took a median of 2.58 s with
// it and 0.46 s without. The jobs mpirun runs end by themselves, each rank
// having said what it had to (a refusal, a check agreed on). Jobs with a
// fault injected (launchWith, startJob) keep the grace: rank 0 names a
// rank that vanished, or a signal, within it.
const killAtOnce = "OMPI_MCA_odls_base_sigkill_timeout=0"

// jobEnv is the environment of a job a test starts: this process's, a
// session directory of the job's own (parallel tests' jobs would race
// creating Open MPI's under the package's one, as seen in CI), and extra.
func jobEnv(t *testing.T, extra ...string) []string {
	t.Helper()
	return append(append(os.Environ(), mpitesting.JobSessionDir(t)), extra...)
}

// runWithin runs the command newCmd makes and collects its output and exit
// code; one that outlives limit fails the test, named by what.
func runWithin(t *testing.T, limit time.Duration, what string, newCmd func(context.Context) *exec.Cmd) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := newCmd(ctx)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: unfold(stderr.String()), rawStderr: stderr.String(), took: time.Since(start)}
	if ctx.Err() != nil {
		t.Fatalf("%s did not finish within %v (hang?)\nstdout:\n%s\nstderr:\n%s", what, limit, r.stdout, r.stderr)
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		r.code = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return r
}

// The smoke config on 2, 3 and 4 ranks of this process (inproc), whose
// backend says inmem. The same config under mpirun on the MPI backend is
// the README's command (TestTheREADMESmokeCommandRunsTwice, 4 ranks,
// twice); the MPI backend's 2-rank run is the sweep's.
func TestSmokeOnTwoThreeAndFourRanks(t *testing.T) {
	t.Parallel()
	for _, np := range []int{2, 3, 4} {
		t.Run(fmt.Sprintf("np%d", np), func(t *testing.T) {
			dir := t.TempDir()
			run, backend := inproc, "backend inmem"
			r := run(t, np, 2*time.Minute, "-config", "../configs/smoke.toml", "-output-dir", dir, "-backend", "mpi")
			if r.code != 0 {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
			}
			if err := outcheck.Check(dir, outcheck.Smoke(np)); err != nil {
				t.Fatalf("%v\nstdout:\n%s", err, r.stdout)
			}
			if np == 2 {
				// report.html, in a real browser, and again from its summary.
				checkPage(t, dir, "smoke")
				samePageAgain(t, dir)
			}
			for _, s := range []string{"contracts_per_rank=5 timings_per_rank=24 memory_modes_per_rank=5",
				"Contracts", "Timings", "Memory", fmt.Sprintf("%d/%d", np, np), backend} {
				if !strings.Contains(r.stdout, s) {
					t.Errorf("stdout lacks %q:\n%s", s, r.stdout)
				}
			}
		})
	}
}

// The seed's own run on the MPI backend: 4 ranks, its five sizes up to
// 256 MiB, the 256 MiB memory study. One cycle, not the config's ten
// (config_test holds the file to the seed's): on two cores each 256 MiB
// cycle takes 7 s, and the checks see every row of one as of ten (the
// runs with more cycles are the smaller configs' tests). No
// warm-ups, not the config's three: they are untimed passes of the same
// calls (checked in every other run here), and each costs 4 s at 256 MiB.
func TestCh7OnFourRanks(t *testing.T) {
	onlyInFullTier(t, "TestCh7ShapeOnFourRanks")
	dir := t.TempDir()
	r := mpirun(t, 4, 8*time.Minute, "-config", "../configs/ch7.toml", "-output-dir", dir, "-backend", "mpi",
		"-set", "timing.warmups=0", "-set", "timing.cycles=1")
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	want := outcheck.Expect{World: 4, SizesBytes: []int64{1024, 65536, 1048576, 16777216, 268435456}, Cycles: 1,
		PayloadBytes: 268435456, MemoryModes: outcheck.AllMemoryModes}
	if err := outcheck.Check(dir, want); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.stdout, "contracts_per_rank=5 timings_per_rank=10 memory_modes_per_rank=5") {
		t.Errorf("closing line missing:\n%s", r.stdout)
	}
	t.Logf("ch7 on 4 MPI ranks took %v", r.took)
}

// The fast twin of TestCh7OnFourRanks: the seed's config, its phases,
// contracts, modes and memory modes, at sizes of 1 KiB to 1 MiB and a
// 1 MiB payload, on 4 ranks of this process (inprocMPI: the files, rows and
// checks are the run's logic; the MPI backend's own runs are the sweep's
// and smoke's). What 256 MiB adds (the memory study's real payload) is the
// full tier's to prove, under mpirun.
func TestCh7ShapeOnFourRanks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := inprocMPI(t, 4, 2*time.Minute, "-config", "../configs/ch7.toml", "-output-dir", dir, "-backend", "mpi",
		"-set", "timing.sizes_bytes=[1024, 65536, 1048576]", "-set", "memory.payload_bytes=1048576",
		"-set", "timing.warmups=0", "-set", "timing.cycles=2")
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	want := outcheck.Expect{World: 4, SizesBytes: []int64{1024, 65536, 1048576}, Cycles: 2,
		PayloadBytes: 1048576, MemoryModes: outcheck.AllMemoryModes}
	if err := outcheck.Check(dir, want); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.stdout, "contracts_per_rank=5 timings_per_rank=12 memory_modes_per_rank=5") {
		t.Errorf("closing line missing:\n%s", r.stdout)
	}
}

// Every bad input ends every rank quickly with a non-zero exit and a message
// that names the problem, before any collective runs. The first case runs
// under mpirun, the proof that a refusal is said once for ranks that are
// processes, and so does the MPI backend's refusal of an NCCL sweep,
// whose advice names the backend by its Info (inmem in this process); the
// rest are the same logic, on ranks in this process (inproc), whose
// backend refuses what MPI's does (inprocMPI).
func TestBadInputsFailOnEveryRank(t *testing.T) {
	t.Parallel()
	bad := filepath.Join(t.TempDir(), "bad.toml")
	if err := os.WriteFile(bad, []byte("[timing]\nsizes_byte = [1024]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	notDir := filepath.Join(t.TempDir(), "file")
	os.WriteFile(notDir, nil, 0o644)
	cases := []struct {
		name string
		np   int
		args []string
		want string
		real bool // under mpirun
	}{
		{"unknown key", 4, []string{"-config", bad}, `timing.sizes_byte: unknown key: did you mean "timing.sizes_bytes"?`, true},
		{"missing file", 3, []string{"-config", "no/such.toml"}, "cannot read the config", false},
		{"required ranks", 2, []string{"-config", "../configs/ch7.toml", "-backend", "mpi"}, "requires exactly 4 ranks but the job has 2", false},
		{"not divisible", 3, []string{"-config", "../configs/ch7.toml", "-set", "required_ranks=3"}, "1024 bytes does not divide by 3 ranks", false},
		{"bad backend", 2, []string{"-config", "../configs/smoke.toml", "-backend", "gloo"}, `"gloo" is not a backend`, false},
		{"nccl without GPU", 2, []string{"-config", "../configs/smoke.toml", "-backend", "nccl"}, "; run on a GPU node (rank(s) [0 1]); fix that, or use -backend mpi", false}, // the advice once
		{"an NCCL sweep on MPI", 2, []string{"-config", "../configs/sweep.toml", "-backend", "mpi"},
			"drop float16; the MPI backend cannot run collectives on bfloat16: MPI has no bfloat16 type; use the nccl backend or drop bfloat16; " +
				"or run configs/sweep-mpi.toml, the same for the mpi backend", true}, // the advice names the backend's Info (inmem in-process)
		{"unwritable output", 2, []string{"-config", "../configs/smoke.toml", "-output-dir", filepath.Join(notDir, "out")}, "is not writable on every rank", false},
		{"bad -set", 2, []string{"-config", "../configs/smoke.toml", "-set", "timing.cycles=0"}, "timing.cycles: 0: use at least 1", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // refusals, before any collective: nothing here is timed
			out := t.TempDir()
			args := c.args
			if !slices.Contains(args, "-output-dir") { // given twice it is a contradiction of its own
				args = append([]string{"-output-dir", out}, args...)
			}
			run := inprocMPI
			if c.real {
				run = mpirun
			}
			r := run(t, c.np, 60*time.Second, args...)
			if r.code == 0 {
				t.Fatalf("exit 0 for a bad input\n%s", r.stdout)
			}
			if r.code != 2 {
				t.Errorf("exit %d, want 2 (a bad input)", r.code)
			}
			saidOnce(t, r.stderr, c.want)
			if entries, _ := os.ReadDir(out); len(entries) > 0 {
				t.Errorf("a failed run left files in the output dir: %v", entries)
			}
		})
	}
}

// saidOnce checks that a problem every rank shares was said once, by rank
// 0 for all of them ("rsag: ..." without a rank of its own), and that no
// rank had to abort the job alone, which is what a rank that disagrees
// with the others does.
func saidOnce(t *testing.T, stderr, want string) {
	t.Helper()
	var lines []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.Contains(l, want) {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "rsag: ") || strings.HasPrefix(lines[0], "rsag: rank ") {
		t.Errorf("want %q said once, as a shared error; stderr:\n%s", want, stderr)
	}
	if strings.Contains(stderr, "MPI_ABORT") {
		t.Errorf("a rank aborted the job instead of agreeing with the others; stderr:\n%s", stderr)
	}
}

func lineWith(text, prefix string) string {
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}
