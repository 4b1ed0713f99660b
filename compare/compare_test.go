package compare

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"rsag/coll"
	"rsag/internal/testkit/schemacheck"
	"rsag/outdir"

	"rsag/report"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// Each case runs the command and compares its exit code, stdout and stderr
// with testdata/<name>.golden.
var cases = []struct {
	name string
	args []string
	code int
}{
	{"default", []string{"testdata/a/summary.json", "testdata/b/summary.json"}, ExitSlower},
	{"threshold-1.3", []string{"-threshold", "1.3", "testdata/a/summary.json", "testdata/b/summary.json"}, ExitOK},
	{"flags-after-files", []string{"testdata/a/summary.json", "testdata/b/summary.json", "-threshold=1.3"}, ExitOK},
	{"p90", []string{"-metric", "p90", "testdata/a/summary.json", "testdata/b/summary.json"}, ExitSlower},
	{"min-same-file", []string{"-metric", "min", "testdata/a/summary.json", "testdata/a/summary.json"}, ExitOK},
	{"missing-file", []string{"testdata/a/summary.json", "testdata/nope/summary.json"}, ExitBadInput},
	{"not-json", []string{"testdata/notjson.json", "testdata/b/summary.json"}, ExitBadInput},
	{"schema-v3", []string{"testdata/a/summary.json", "testdata/v3/summary.json"}, ExitBadInput},
	{"no-common-case", []string{"testdata/a/summary.json", "testdata/other/summary.json"}, ExitBadInput},
	{"one-file", []string{"testdata/a/summary.json"}, ExitBadInput},
	{"bad-metric", []string{"-metric", "p50", "testdata/a/summary.json", "testdata/b/summary.json"}, ExitBadInput},
	{"bad-threshold", []string{"-threshold", "0", "testdata/a/summary.json", "testdata/b/summary.json"}, ExitBadInput},
	{"output-dirs", []string{"testdata/a", "testdata/b"}, ExitSlower},
	{"infinite-threshold", []string{"-threshold", "inf", "testdata/a/summary.json", "testdata/b/summary.json"}, ExitBadInput},
	{"dir-without-summary", []string{"testdata/a", "testdata"}, ExitBadInput},
	{"help", []string{"-h"}, ExitOK},
	// Two runs of one set-up: the medians above the threshold are within
	// the spread of the runs, p10..p90, and not called slower.
	{"noise", []string{"testdata/a", "testdata/noise"}, ExitOK},
	// A time of 0 or less, or a case listed twice, is refused, not divided
	// by or taken last-wins.
	{"zero-median", []string{"testdata/zero", "testdata/b"}, ExitBadInput},
	{"zero-median-as-b", []string{"testdata/a", "testdata/zero"}, ExitBadInput},
	{"duplicate-case", []string{"testdata/a", "testdata/dup"}, ExitBadInput},
	// run.json beside a summary has the last word on whether the run
	// completed; a run that did not is refused unless -incomplete.
	{"running", []string{"testdata/a", "testdata/running"}, ExitBadInput},
	{"running-incomplete", []string{"-incomplete", "testdata/a", "testdata/running/summary.json"}, ExitOK},
	{"failed", []string{"testdata/failed", "testdata/b"}, ExitBadInput},
	{"replaced", []string{"testdata/a", "testdata/replaced"}, ExitBadInput},
	{"bad-run-json", []string{"testdata/a", "testdata/badrun"}, ExitBadInput},
	{"complete-run-json", []string{"testdata/complete", "testdata/a"}, ExitOK},
}

func TestGolden(t *testing.T) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Main(c.args, &stdout, &stderr)
			got := fmt.Sprintf("$ rsag compare %s\nexit %d\n--- stdout\n%s--- stderr\n%s",
				strings.Join(c.args, " "), code, stdout.String(), stderr.String())
			golden := filepath.Join("testdata", c.name+".golden")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (go test ./compare -update writes it)", err)
			}
			if got != string(want) {
				t.Errorf("output differs from %s (rerun with -update and review the diff if intended):\n%s", golden, got)
			}
			if code != c.code {
				t.Errorf("exit %d, want %d", code, c.code)
			}
		})
	}
}

// The fixtures are real summaries: they validate against the documented
// schema (the v3 one only by its version).
func TestFixturesFollowTheSchema(t *testing.T) {
	sch, err := schemacheck.Load("../docs/summary.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b", "other", "v3"} {
		data, err := os.ReadFile(filepath.Join("testdata", name, "summary.json"))
		if err != nil {
			t.Fatal(err)
		}
		err = sch.Validate(data)
		if (err != nil) != (name == "v3") {
			t.Errorf("%s: validation error %v", name, err)
		}
	}
}

func TestCompareZeroAndOrder(t *testing.T) {
	st := func(size int64, mode string, us float64) report.TimingStat {
		return report.TimingStat{Case: coll.Case{Run: "r", SizeBytes: size, DType: coll.Float32, Op: coll.Sum, Placement: "in-place",
			Method: "per-op", Batch: 1, Mode: coll.Mode(mode)}, P10US: us * 0.99, MedianUS: us, P90US: us * 1.01}
	}
	a := report.Summary{Timing: []report.TimingStat{st(2, "direct", 0), st(1, "direct", 10), st(1, "decomposed", 10)}}
	b := report.Summary{Timing: []report.TimingStat{st(1, "decomposed", 11.5), st(1, "direct", 11), st(2, "direct", 5)}}
	c := Compare(a, b, metrics["median"], 1.10)
	if len(c.Rows) != 3 || c.Rows[0].SizeBytes != 2 || c.Rows[1].Mode != "direct" {
		t.Fatalf("rows not in A's order: %+v", c.Rows)
	}
	// A of 0 has no ratio and cannot fail; 1.1 exactly is not over 1.10.
	if c.Rows[0].Ratio != 0 || c.Rows[0].Over || c.Rows[1].Over || !c.Rows[2].Over || c.Slower != 1 {
		t.Errorf("rows %+v, slower %d", c.Rows, c.Slower)
	}
}

// Over the threshold is slower only beyond the runs' spread: where B's
// p10..p90 overlaps A's, the case is within noise and not counted.
func TestWithinNoise(t *testing.T) {
	st := func(p10, median, p90 float64) report.TimingStat {
		return report.TimingStat{Case: coll.Case{Run: "r", SizeBytes: 1, DType: coll.Float32, Op: coll.Sum, Placement: "in-place", Method: "per-op", Batch: 1, Mode: "direct"}, P10US: p10, MedianUS: median, P90US: p90}
	}
	for _, c := range []struct {
		a, b         report.TimingStat
		noise, over  bool
		slower, wide int
	}{
		{st(9, 10, 12), st(11.5, 12, 13), true, true, 0, 1},   // B's p10 below A's p90
		{st(9, 10, 12), st(12, 12.5, 13), true, true, 0, 1},   // touching counts as overlap
		{st(9, 10, 11), st(11.5, 12, 13), false, true, 1, 0},  // apart: slower
		{st(9, 10, 11), st(10, 10.5, 11), false, false, 0, 0}, // not over the threshold at all
	} {
		cmp := Compare(report.Summary{Timing: []report.TimingStat{c.a}}, report.Summary{Timing: []report.TimingStat{c.b}}, metrics["median"], 1.10)
		r := cmp.Rows[0]
		if r.Noise != c.noise || r.Over != c.over || cmp.Slower != c.slower || cmp.Noise != c.wide {
			t.Errorf("A %+v, B %+v: noise %v, over %v, slower %d, within noise %d", c.a, c.b, r.Noise, r.Over, cmp.Slower, cmp.Noise)
		}
	}
}

// The inputs are read as the config is: regular files of a bounded size.
// A FIFO would block the read for ever and /dev/zero would grow memory
// until the runtime died; both are refused by their kind, at once, as is
// a file past the cap, by its size, before a byte is read.
func TestInputsAreBounded(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, nil, 0o644); err != nil || os.Truncate(big, MaxSummaryBytes+1) != nil {
		t.Fatal("making a sparse file past the cap")
	}
	// A complete summary with a FIFO for its run.json.
	besideFIFO := filepath.Join(dir, "beside")
	data, err := os.ReadFile("testdata/a/summary.json")
	if err != nil || os.Mkdir(besideFIFO, 0o755) != nil || os.WriteFile(filepath.Join(besideFIFO, report.SummaryFile), data, 0o644) != nil {
		t.Fatal("copying a summary")
	}
	if err := syscall.Mkfifo(filepath.Join(besideFIFO, outdir.RunFile), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, want string }{
		{fifo, "rsag compare: reading " + fifo + ": it is a named pipe (FIFO), not a file rsag wrote\n"},
		{"/dev/zero", "rsag compare: reading /dev/zero: it is a character device, not a file rsag wrote\n"},
		{big, "rsag compare: reading " + big + ": it is larger than rsag compare's cap of 256 MiB: is it rsag's?\n"},
		{besideFIFO, "rsag compare: reading " + filepath.Join(besideFIFO, outdir.RunFile) + ": it is a named pipe (FIFO), not a file rsag wrote\n"},
	} {
		done := make(chan struct{})
		var code int
		var stdout, stderr bytes.Buffer
		go func() { code = Main([]string{"testdata/a", c.path}, &stdout, &stderr); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatalf("compare of %s did not return within 20 s", c.path)
		}
		if code != ExitBadInput || stderr.String() != c.want || stdout.Len() != 0 {
			t.Errorf("%s: exit %d, stderr %q, stdout %q; want exit 2, %q", c.path, code, stderr.String(), stdout.String(), c.want)
		}
	}
}

// -html writes the comparison as a page: its banner says B is slower, the
// slower rows are marked, and the exit code is the same as without it.
func TestComparisonPage(t *testing.T) {
	out := filepath.Join(t.TempDir(), "cmp.html")
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"-html", out, "testdata/a", "testdata/b"}, &stdout, &stderr); code != ExitSlower {
		t.Fatalf("exit %d, want %d (slower), page or not\n%s", code, ExitSlower, stderr.String())
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	page := string(data)
	slower := strings.Count(stdout.String(), "| SLOWER |")
	if slower == 0 {
		t.Fatalf("the fixtures have no slower case:\n%s", stdout.String())
	}
	for _, want := range []string{`data-verdict="failed"`, fmt.Sprintf("SLOWER: %d of ", slower), `<section id="common">`,
		`<section id="only-a">`, `<section id="only-b">`, "testdata/a", "testdata/b"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if got := strings.Count(page, `<tr class="bad">`); got != slower {
		t.Errorf("%d rows marked slower in the page, %d in the table", got, slower)
	}
	if !strings.Contains(stdout.String(), "wrote "+out) {
		t.Errorf("stdout does not say where the page went:\n%s", stdout.String())
	}

	// Against itself nothing is slower: a held banner.
	if code := Main([]string{"-html", out, "testdata/a", "testdata/a"}, &stdout, &stderr); code != ExitOK {
		t.Fatalf("a against a: exit %d", code)
	}
	if data, _ := os.ReadFile(out); !strings.Contains(string(data), `data-verdict="held"`) {
		t.Error("a against itself: the banner is not held")
	}

	// A page that cannot be written is a bad input, named, with the fix.
	stderr.Reset()
	bad := filepath.Join(t.TempDir(), "no", "such", "cmp.html")
	if code := Main([]string{"-html", bad, "testdata/a", "testdata/b"}, &stdout, &stderr); code != ExitBadInput {
		t.Errorf("unwritable -html: exit %d, want %d", code, ExitBadInput)
	}
	for _, want := range []string{"cannot write the page to " + bad, "no such file or directory", "choose a file in a directory you can write"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("unwritable -html: stderr lacks %q:\n%s", want, stderr.String())
		}
	}
}
