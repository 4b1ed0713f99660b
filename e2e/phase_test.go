package e2e

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

	"rsag/internal/testkit/schemacheck"
	"rsag/outdir"
)

// A phase is one package and one registration: the test-only echo phase
// (internal/testkit/echophase), built in with -tags rsag_testphase and
// touching no other file, is in run.json's files, writes echo.csv, is in
// summary.json's phases and the terminal's tables, its checks in the
// verdict line, junit.xml and rsag.prom, has its section and
// banner line on the page, is removed by -overwrite through the earlier
// run's manifest, and rsag report (the product binary, which has no echo
// phase) shows it again from summary.json.
func TestATestOnlyPhaseReachesEveryOutput(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "rsag-echo")
	build := exec.Command("go", "build", "-tags", "rsag_mpicc,rsag_testphase", "-o", bin, "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building rsag with the echo phase: %v\n%s", err, out)
	}
	dir := filepath.Join(t.TempDir(), "out")
	run := func(args ...string) result {
		return launch(t, 3*time.Minute, append([]string{"../scripts/mpirun.sh", "2", bin, "-config", "../configs/smoke.toml",
			"-output-dir", dir, "-set", "timing.enabled=false", "-set", "memory.enabled=false"}, args...)...)
	}
	r := run()
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
	data, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	sch, err := schemacheck.Load("../docs/summary.schema.json")
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
	junit, err := os.ReadFile(filepath.Join(dir, "junit.xml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<testsuite name="echo" tests="2" failures="0"`, `<testcase name="rank 0" classname="rsag.echo">`,
		`<testcase name="rank 1" classname="rsag.echo">`} {
		if !strings.Contains(string(junit), want) {
			t.Errorf("junit.xml lacks %s:\n%s", want, junit)
		}
	}
	prom, err := os.ReadFile(filepath.Join(dir, "rsag.prom"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`rsag_phase_checks{outcome="held",phase="echo"} 2`, `rsag_phase_checks{outcome="failed",phase="echo"} 0`,
		`rsag_check_outcome{check="rank 1",outcome="held",phase="echo"} 1`, `rsag_verdict{outcome="held"} 1`} {
		if !strings.Contains(string(prom), want+"\n") {
			t.Errorf("rsag.prom lacks %s:\n%s", want, prom)
		}
	}
	page, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), `id="phase-echo"`) || !strings.Contains(string(page), "all 2 rows held (phase echo)") {
		t.Error("report.html lacks the echo phase's section or its banner line")
	}

	// rsag report, from a binary without the phase, shows it from the summary.
	os.Remove(filepath.Join(dir, "report.html"))
	rr := launch(t, time.Minute, rsagBin, "report", dir)
	if rr.code != 0 || !strings.Contains(rr.stdout, "Echo (test-only) (phase echo: every row held)") {
		t.Errorf("rsag report: exit %d, stdout:\n%s\nstderr:\n%s", rr.code, rr.stdout, rr.stderr)
	}
	if page, err := os.ReadFile(filepath.Join(dir, "report.html")); err != nil || !strings.Contains(string(page), `id="phase-echo"`) {
		t.Errorf("rsag report's page lacks the echo section (%v)", err)
	}

	// -overwrite removes echo.csv, the earlier run's, when this run has no
	// echo phase.
	r = run("-overwrite", "-set", "contracts.enabled=false", "-set", "numerics.enabled=true")
	if r.code != 0 {
		t.Fatalf("-overwrite: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "echo.csv")); !os.IsNotExist(err) {
		t.Errorf("echo.csv after -overwrite without the phase: %v, want it removed", err)
	}

	// A bit flipped in rank 1's largest rank (testdata/corrupt.c, from
	// outside rsag) fails its row, and the run: the verdict line,
	// junit.xml, rsag.prom and the exit status say so, and no file of
	// theirs names the phase.
	bad := filepath.Join(t.TempDir(), "bad")
	argv := append(append([]string{"../scripts/mpirun.sh", "2"}, corrupt(t, "RANK=1", "CALL=Allreduce", "BYTES=8", "MIN_BYTES=8")...),
		bin, "-config", "../configs/smoke.toml", "-output-dir", bad, "-set", "timing.enabled=false", "-set", "memory.enabled=false")
	r = launch(t, 3*time.Minute, argv...)
	if !strings.Contains(r.stderr, "corrupt.c: rank 1 flips") {
		t.Fatalf("the fault was not there: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if r.code != 1 || !strings.Contains(r.stdout, "rsag: FAILED (exit 1): a check failed on rank") {
		t.Errorf("a failed echo row: exit %d, want 1 and the verdict line saying a check failed\nstdout:\n%s", r.code, r.stdout)
	}
	junit, prom = readFileBytes(t, filepath.Join(bad, "junit.xml")), readFileBytes(t, filepath.Join(bad, "rsag.prom"))
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

func readFileBytes(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
