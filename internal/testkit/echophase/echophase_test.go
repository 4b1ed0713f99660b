package echophase_test

import (
	"encoding/csv"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"rsag/coll"
	_ "rsag/internal/testkit/echophase" // the phase under test, registered as -tags rsag_testphase registers it
	"rsag/internal/testkit/inmem"
	"rsag/internal/testkit/schemacheck"
	"rsag/job"
	"rsag/outdir"
)

// root is the module's root: this package is internal/testkit/echophase.
var root = filepath.Join("..", "..", "..")

// A phase is one package and one registration: the test-only echo phase,
// linked into this test as -tags rsag_testphase links it into rsag and
// touching no other file, is in run.json's files, writes echo.csv, is in
// summary.json's phases and the terminal's tables, its checks in the
// verdict line, junit.xml and rsag.prom, has its section and banner line
// on the page, is removed by -overwrite through the earlier run's
// manifest, and rsag report (the product binary, which has no echo phase)
// shows it again from summary.json. The runs are job.Main on goroutine
// ranks of this process, as e2e's inproc runs them: what a phase reaches is
// the run's logic, not the launch (STYLE.md, rule 20); rsag report is the
// product binary, launched.
func TestATestOnlyPhaseReachesEveryOutput(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "out")
	r := run(t, inmem.Faults{}, dir, false)
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "Echo (test-only) (phase echo: every row held)") || !strings.Contains(r.stdout, "rsag: PASSED: contracts 5/5 held, echo 2/2 held") {
		t.Errorf("the terminal lacks the echo phase's table or its part of the verdict line:\n%s", r.stdout)
	}
	rec, err := outdir.ReadRecord(dir)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != outdir.StatusComplete || !slices.Contains(rec.Files, "echo.csv") {
		t.Errorf("run.json: status %q, files %v: want complete, with echo.csv", rec.Status, rec.Files)
	}
	f, err := os.Open(filepath.Join(dir, "echo.csv"))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"rank", "host", "largest_rank", "held"}}
	if len(rows) != 3 || !slices.Equal(rows[0], want[0]) || rows[1][0] != "0" || rows[2][0] != "1" || rows[1][2] != "1" || rows[2][3] != "true" {
		t.Errorf("echo.csv: %q, want its header and one row per rank, each saying the largest rank is 1", rows)
	}
	data := readFile(t, filepath.Join(dir, "summary.json"))
	sch, err := schemacheck.Load(filepath.Join(root, "docs", "summary.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := sch.Validate(data); err != nil {
		t.Errorf("summary.json: %v", err)
	}
	var sum struct {
		Phases []struct {
			Name  string
			Table *struct {
				Rows   [][]string
				Checks bool
				Failed []int
			}
		}
	}
	if err := json.Unmarshal(data, &sum); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range sum.Phases {
		names = append(names, p.Name)
		if p.Name == "echo" && (p.Table == nil || len(p.Table.Rows) != 2 || !p.Table.Checks || len(p.Table.Failed) != 0) {
			t.Errorf("summary.json's echo phase: %+v, want its 2 rows, checked, none failed", p.Table)
		}
	}
	if !slices.Equal(names, []string{"contracts", "echo"}) {
		t.Errorf("summary.json's phases: %v, want contracts then echo", names)
	}
	// junit.xml and rsag.prom have its checks, a row each, from the run's
	// list of verdicts: no file of theirs names the phase.
	junit := readFile(t, filepath.Join(dir, "junit.xml"))
	for _, want := range []string{`<testsuite name="echo" tests="2" failures="0"`, `<testcase name="rank 0" classname="rsag.echo">`,
		`<testcase name="rank 1" classname="rsag.echo">`} {
		if !strings.Contains(string(junit), want) {
			t.Errorf("junit.xml lacks %s:\n%s", want, junit)
		}
	}
	prom := readFile(t, filepath.Join(dir, "rsag.prom"))
	for _, want := range []string{`rsag_phase_checks{outcome="held",phase="echo"} 2`, `rsag_phase_checks{outcome="failed",phase="echo"} 0`,
		`rsag_check_outcome{check="rank 1",outcome="held",phase="echo"} 1`, `rsag_verdict{outcome="held"} 1`} {
		if !strings.Contains(string(prom), want+"\n") {
			t.Errorf("rsag.prom lacks %s:\n%s", want, prom)
		}
	}
	page := readFile(t, filepath.Join(dir, "report.html"))
	if !strings.Contains(string(page), `id="phase-echo"`) || !strings.Contains(string(page), "all 2 rows held (phase echo)") {
		t.Error("report.html lacks the echo phase's section or its banner line")
	}

	// rsag report, from a binary without the phase, shows it from the summary.
	os.Remove(filepath.Join(dir, "report.html"))
	rep := exec.Command(productRsag(t), "report", dir)
	out, err := rep.Output()
	if err != nil || !strings.Contains(string(out), "Echo (test-only) (phase echo: every row held)") {
		t.Errorf("rsag report: %v, stdout:\n%s", err, out)
	}
	if page, err := os.ReadFile(filepath.Join(dir, "report.html")); err != nil || !strings.Contains(string(page), `id="phase-echo"`) {
		t.Errorf("rsag report's page lacks the echo section (%v)", err)
	}

	// -overwrite removes echo.csv, the earlier run's, when this run has no
	// echo phase (the numerics alone, at 4K: the default's 64 MiB take
	// seconds in memory).
	r = run(t, inmem.Faults{}, dir, true, "contracts.enabled=false", "numerics.enabled=true", "numerics.sizes_bytes=[4096]")
	if r.code != 0 {
		t.Fatalf("-overwrite: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "echo.csv")); !os.IsNotExist(err) {
		t.Errorf("echo.csv after -overwrite without the phase: %v, want it removed", err)
	}

	// A bit flipped in rank 1's largest rank fails its row, and the run:
	// the verdict line, junit.xml, rsag.prom and the exit status say so,
	// and no file of theirs names the phase. The flip is
	// e2e/testdata/corrupt.c's (RANK=1 CALL=Allreduce BYTES=8: the lowest
	// bit of rank 1's every 8-byte MPI_Allreduce output, which the phase's
	// maximum is on MPI's world), in memory: inmem.Flip on the world's
	// reductions.
	bad := filepath.Join(t.TempDir(), "bad")
	flip := inmem.Flip{Collective: coll.AllReduce.Name, Comm: true, Rank: 1, Bytes: 8, Calls: func(int) bool { return true }}
	r = run(t, inmem.Faults{Flip: &flip}, bad, false)
	if r.code != 1 || !strings.Contains(r.stdout, "rsag: FAILED (exit 1): a check failed on rank") {
		t.Errorf("a failed echo row: exit %d, want 1 and the verdict line saying a check failed\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	junit, prom = readFile(t, filepath.Join(bad, "junit.xml")), readFile(t, filepath.Join(bad, "rsag.prom"))
	if !strings.Contains(string(junit), `<testsuite name="echo" tests="2" failures="1"`) {
		t.Errorf("junit.xml does not fail the echo row:\n%s", junit)
	}
	for _, want := range []string{`rsag_phase_checks{outcome="failed",phase="echo"} 1`, `rsag_check_outcome{check="rank 1",outcome="failed",phase="echo"} 1`,
		`rsag_verdict{outcome="failed"} 1`, `rsag_run_status{status="failed"} 1`} {
		if !strings.Contains(string(prom), want+"\n") {
			t.Errorf("rsag.prom lacks %s:\n%s", want, prom)
		}
	}
}

// result is a job's: every rank's stdout and stderr, in rank order, and
// its exit code as mpirun gives it.
type result struct {
	stdout, stderr string
	code           int
}

// run runs smoke.toml's contracts (timing and memory off, as sets adds to)
// on 2 goroutine ranks of this process, whose backend has faults, into
// dir: job.Main over inmem.Ranks, as e2e's inproc runs it.
func run(t *testing.T, faults inmem.Faults, dir string, overwrite bool, sets ...string) result {
	t.Helper()
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	// What a rank leaves in node-local memory when it ends without its last
	// beat (an abort) is removed, as the end of the node's processes would.
	defer os.RemoveAll(outdir.LocalBeatsOf(outdir.RunID(host, os.Getpid(), started.UTC().Format(time.RFC3339)), dir).Dir)
	sets = append([]string{"timing.enabled=false", "memory.enabled=false"}, sets...)
	ended := inmem.NewRanks([]string{host, host}, faults, 2*time.Minute).Run(2*time.Minute, func(w *inmem.World) int {
		return job.Main(job.Options{ConfigPath: filepath.Join(root, "configs", "smoke.toml"), OutputDir: dir, Sets: sets, Overwrite: overwrite,
			Version: "inproc", Commit: "inproc", Started: started, Stdout: w.Stdout(), Stderr: w.Stderr(), Exit: w.Exit, World: w})
	})
	var r result
	var out, errs strings.Builder
	for rank, e := range ended {
		if e.How == "stuck" || e.How == "panicked" {
			t.Fatalf("rank %d %s\nstderr:\n%s", rank, e.How, e.Stderr)
		}
		out.WriteString(e.Stdout)
		errs.WriteString(e.Stderr)
	}
	r.stdout, r.stderr = out.String(), errs.String()
	// The job's code: that of the rank that aborted it, else the lowest
	// rank's that is not 0.
	for _, e := range ended {
		if e.How == "aborted" {
			r.code = e.Code
			return r
		}
	}
	for _, e := range ended {
		if e.Code != 0 {
			r.code = e.Code
			return r
		}
	}
	return r
}

// productRsag is the product binary make test built (RSAG_BIN), or one
// built here: it has no echo phase.
func productRsag(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("RSAG_BIN"); bin != "" {
		return bin
	}
	bin := filepath.Join(t.TempDir(), "rsag")
	if out, err := exec.Command("go", "build", "-o", bin, root).CombinedOutput(); err != nil {
		t.Fatalf("building rsag: %v\n%s", err, out)
	}
	return bin
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
