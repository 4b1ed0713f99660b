package e2e

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"encoding/xml"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"rsag/internal/testkit/schemacheck"
	"rsag/outdir"
	"rsag/report"
)

// Every dtype, op and placement the MPI backend supports, timed per-op and
// batched on 2 and 4 ranks: every value checked exactly by rsag itself, and
// here every case present and correct, summary.json valid against its
// documented schema, the figures real PNG and SVG files, and compare
// working over two summaries. Both under mpirun in the full tier; make
// test's 4-rank run is on ranks in this process whose backend refuses and
// lacks what MPI's does (inprocMPI): the sweep's cases, files and checks
// are the run's logic, and the MPI backend on 4 ranks is TestMultiNode's.
// It runs alone: beside the other tests and a second suite, the 2-rank
// run under mpirun did not finish within 3 minutes (10 s alone).
func TestSweepOnTheMPIBackend(t *testing.T) {
	dtypes := []string{"int8", "uint8", "int32", "uint32", "int64", "uint64", "float32", "float64"}
	ops := []string{"sum", "prod", "max", "min"}
	var summaries []string
	for _, np := range []int{2, 4} {
		dir := t.TempDir()
		run := mpirun
		if np == 4 && !fullTier() {
			run = inprocMPI
		}
		r := run(t, np, 3*time.Minute, "-config", "../configs/sweep-mpi.toml", "-output-dir", dir)
		if r.code != 0 {
			t.Fatalf("%d ranks: exit %d\nstdout:\n%s\nstderr:\n%s", np, r.code, r.stdout, r.stderr)
		}
		rows := readCSV(t, filepath.Join(dir, "rank0_timings.csv"))
		col := map[string]int{}
		for i, name := range rows[0] {
			col[name] = i
		}
		for _, name := range []string{"rank", "size_bytes", "mode", "cycle", "duration_us", "correct", "run", "dtype", "op", "placement", "method", "batch"} {
			if _, ok := col[name]; !ok {
				t.Fatalf("a sweep's per-rank timings lack the %q column: %v", name, rows[0])
			}
		}
		seen := map[string]int{}
		for _, row := range rows[1:] {
			if row[col["correct"]] != "True" {
				t.Errorf("%d ranks: row not correct: %v", np, row)
			}
			seen[strings.Join([]string{row[col["dtype"]], row[col["op"]], row[col["placement"]], row[col["method"]]}, " ")]++
		}
		for _, d := range dtypes {
			for _, o := range ops {
				for _, p := range []string{"out-of-place", "in-place"} {
					for _, m := range []string{"per-op", "batched"} {
						// 2 sizes x 4 cycles x 2 modes.
						if k := d + " " + o + " " + p + " " + m; seen[k] != 16 {
							t.Errorf("%d ranks: case %s has %d rows, want 16", np, k, seen[k])
						}
					}
				}
			}
		}
		sum := checkSummary(t, filepath.Join(dir, report.SummaryFile))
		checkFigures(t, dir)
		if np == 2 {
			checkPage(t, dir, "sweep")
			samePageAgain(t, dir)
		}
		// The numerics phase: both float types at the three sizes, every
		// element within the bound, on every rank.
		numerics := readCSV(t, filepath.Join(dir, "numerics.csv"))
		if len(numerics) != 1+np*2*3 {
			t.Errorf("%d ranks: numerics.csv has %d rows, want %d", np, len(numerics)-1, np*2*3)
		}
		if len(sum.Numerics) != 6 {
			t.Errorf("%d ranks: summary.json numerics: %+v, want 2 dtypes x 3 sizes", np, sum.Numerics)
		}
		for _, n := range sum.Numerics {
			if !n.WithinBound || n.Ranks != np || n.Elements*map[string]int{"float32": 4, "float64": 8}[n.DType] != int(n.SizeBytes) {
				t.Errorf("%d ranks: numerics %+v", np, n)
			}
			// Two ranks add a + b either way: the paths agree bit for bit.
			if np == 2 && !n.BitwiseEqual {
				t.Errorf("2 ranks: %s %d bytes: %s, want bitwise equal", n.DType, n.SizeBytes, n.Verdict())
			}
		}
		if !strings.Contains(r.stdout, "Numerics (AllReduce vs RS + AG") {
			t.Errorf("%d ranks: no numerics table:\n%s", np, r.stdout)
		}
		summaries = append(summaries, filepath.Join(dir, report.SummaryFile))
	}

	// compare (rsag check against one run) matches the cases of two runs: a
	// run against itself passes a tolerance of 0 (every ratio is exactly
	// 1), and against its own dir with every time 100 times as long it
	// fails. (Two runs on a shared 2-core machine can differ by any factor
	// in some case, so no verdict between them is safe.) The 4-rank run is
	// another kind of run: refused, naming the difference, never judged.
	// A run whose ranks waited for processors (the machine's other jobs:
	// summary.json's nodes[].waited) is never called slower: its copy is
	// then inconclusive, saying why.
	slow := t.TempDir()
	scaleTimes(t, filepath.Dir(summaries[0]), slow, 100)
	slower, says := 1, "SLOWER"
	if note := report.CrowdedNote(completeSummary(t, summaries[0]).Nodes); note != "" {
		slower, says = 3, "inconclusive: 100x, ranks"
		t.Logf("the 2-rank run's %s: its copy 100 times as slow is inconclusive", note)
	}
	for _, c := range []struct {
		tolerance string
		a, b      string
		want      int
		says      string
	}{{"0", summaries[0], summaries[0], 0, "int8"}, {"0.1", summaries[0], slow, slower, says}, {"0.1", summaries[0], summaries[1], 2, "world size 4, not 2"}} {
		out, err := exec.Command(rsagBin, "compare", "-tolerance", c.tolerance, c.a, c.b).CombinedOutput()
		code := 0
		if exit, ok := err.(*exec.ExitError); ok {
			code = exit.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != c.want || !strings.Contains(string(out), c.says) {
			t.Errorf("compare -tolerance %s %s %s: exit %d, want %d saying %q\n%s", c.tolerance, c.a, c.b, code, c.want, c.says, out)
		}
	}
}

// scaleTimes writes the run in dir from to dir to, its summary.json and
// timings.csv, with every time of every timing case multiplied by k.
func scaleTimes(t *testing.T, from, to string, k float64) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(from, report.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	cases, _ := doc["timing"].([]any)
	for _, c := range cases {
		for field, v := range c.(map[string]any) {
			if us, ok := v.(float64); ok && strings.HasSuffix(field, "_us") {
				c.(map[string]any)[field] = us * k
			}
		}
	}
	if data, err = json.Marshal(doc); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(to, report.SummaryFile), data, 0o644); err != nil {
		t.Fatal(err)
	}
	rows := readCSV(t, filepath.Join(from, "timings.csv"))
	col := slices.Index(rows[0], "duration_us")
	for _, row := range rows[1:] {
		us, err := strconv.ParseFloat(row[col], 64)
		if err != nil {
			t.Fatal(err)
		}
		row[col] = strconv.FormatFloat(us*k, 'g', -1, 64)
	}
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	if err := w.WriteAll(rows); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(to, "timings.csv"), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// What the MPI backend cannot do is refused on every rank before any
// collective, with the reason. The ranks are in this process, whose
// backend refuses the dtype as MPI's does and lacks CUDA graphs as MPI's
// does (inprocMPI); a refusal said once by ranks that are processes is
// TestBadInputsFailOnEveryRank's.
func TestSweepRefusesWhatTheBackendCannotDo(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ set, want string }{
		{`timing.dtypes=["float16"]`, "MPI has no half-precision type"},
		{`timing.methods=["graph"]`, "the graph method needs CUDA graphs"},
	} {
		out := t.TempDir()
		r := inprocMPI(t, 2, time.Minute, "-config", "../configs/sweep-mpi.toml", "-output-dir", out, "-set", c.set)
		if r.code != 2 {
			t.Errorf("-set %s: exit %d, want 2", c.set, r.code)
		}
		saidOnce(t, r.stderr, c.want)
		if entries, _ := os.ReadDir(out); len(entries) > 0 {
			t.Errorf("-set %s left files: %v", c.set, entries)
		}
	}
}

func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil || len(rows) < 2 {
		t.Fatalf("%s: %d rows, %v", path, len(rows), err)
	}
	return rows
}

func checkSummary(t *testing.T, path string) report.Summary {
	t.Helper()
	s := completeSummary(t, path)
	if len(s.Timing) == 0 {
		t.Errorf("%s: no timing stats", path)
	}
	return s
}

// completeSummary reads a summary.json that follows the schema, of a run
// that completed with every check passed.
func completeSummary(t *testing.T, path string) report.Summary {
	t.Helper()
	sch, err := schemacheck.Load("../docs/summary.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := sch.Validate(data); err != nil {
		t.Errorf("%s does not validate against docs/summary.schema.json: %v", path, err)
	}
	s, err := report.ReadSummary(path, data)
	if err != nil || s.Status != outdir.StatusComplete || !s.ChecksPassed {
		t.Errorf("%s: status %q, checks passed %v, %v", path, s.Status, s.ChecksPassed, err)
	}
	return s
}

func checkFigures(t *testing.T, dir string) {
	t.Helper()
	for _, name := range []string{"time_vs_size", "busbw_vs_size", "ratio_vs_size"} {
		data, err := os.ReadFile(filepath.Join(dir, name+".png"))
		if err != nil {
			t.Error(err)
			continue
		}
		img, err := png.Decode(bytes.NewReader(data))
		if err != nil || len(data) < 10_000 || img.Bounds().Dx() < 600 {
			t.Errorf("%s.png: %d bytes, %v", name, len(data), err)
		}
		svg, err := os.ReadFile(filepath.Join(dir, name+".svg"))
		if err != nil || len(svg) < 1000 || xml.Unmarshal(svg, new(struct{})) != nil {
			t.Errorf("%s.svg: %d bytes, %v", name, len(svg), err)
		}
	}
}
