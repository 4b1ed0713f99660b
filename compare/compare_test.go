package compare

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"rsag/internal/schemacheck"

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
	{"schema-v2", []string{"testdata/a/summary.json", "testdata/v2/summary.json"}, ExitBadInput},
	{"no-common-case", []string{"testdata/a/summary.json", "testdata/other/summary.json"}, ExitBadInput},
	{"one-file", []string{"testdata/a/summary.json"}, ExitBadInput},
	{"bad-metric", []string{"-metric", "p50", "testdata/a/summary.json", "testdata/b/summary.json"}, ExitBadInput},
	{"bad-threshold", []string{"-threshold", "0", "testdata/a/summary.json", "testdata/b/summary.json"}, ExitBadInput},
	{"output-dirs", []string{"testdata/a", "testdata/b"}, ExitSlower},
	{"infinite-threshold", []string{"-threshold", "inf", "testdata/a/summary.json", "testdata/b/summary.json"}, ExitBadInput},
	{"dir-without-summary", []string{"testdata/a", "testdata"}, ExitBadInput},
	{"help", []string{"-h"}, ExitOK},
}

func TestGolden(t *testing.T) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Run(c.args, &stdout, &stderr)
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
// schema (the v2 one only by its version).
func TestFixturesFollowTheSchema(t *testing.T) {
	sch, err := schemacheck.Load("../docs/summary.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b", "other", "v2"} {
		data, err := os.ReadFile(filepath.Join("testdata", name, "summary.json"))
		if err != nil {
			t.Fatal(err)
		}
		err = sch.Validate(data)
		if (err != nil) != (name == "v2") {
			t.Errorf("%s: validation error %v", name, err)
		}
	}
}

func TestCompareZeroAndOrder(t *testing.T) {
	st := func(size int64, mode string, us float64) report.TimingStat {
		return report.TimingStat{Run: "r", SizeBytes: size, DType: "float32", Op: "sum", Placement: "in-place",
			Method: "per-op", Batch: 1, Mode: mode, MedianUS: us}
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

// -html writes the comparison as a page: its banner says B is slower, the
// slower rows are marked, and the exit code is the same as without it.
func TestComparisonPage(t *testing.T) {
	out := filepath.Join(t.TempDir(), "cmp.html")
	var stdout, stderr bytes.Buffer
	if code := Run([]string{"-html", out, "testdata/a", "testdata/b"}, &stdout, &stderr); code != ExitSlower {
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
	if code := Run([]string{"-html", out, "testdata/a", "testdata/a"}, &stdout, &stderr); code != ExitOK {
		t.Fatalf("a against a: exit %d", code)
	}
	if data, _ := os.ReadFile(out); !strings.Contains(string(data), `data-verdict="held"`) {
		t.Error("a against itself: the banner is not held")
	}

	// A page that cannot be written is a bad input, named, with the fix.
	stderr.Reset()
	bad := filepath.Join(t.TempDir(), "no", "such", "cmp.html")
	if code := Run([]string{"-html", bad, "testdata/a", "testdata/b"}, &stdout, &stderr); code != ExitBadInput {
		t.Errorf("unwritable -html: exit %d, want %d", code, ExitBadInput)
	}
	for _, want := range []string{"cannot write the page to " + bad, "no such file or directory", "choose a file in a directory you can write"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("unwritable -html: stderr lacks %q:\n%s", want, stderr.String())
		}
	}
}
