package compare

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"rsag/coll"
	"rsag/internal/testkit/schemacheck"

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
		return report.TimingStat{Case: coll.Case{Run: "r", SizeBytes: size, DType: coll.Float32, Op: coll.Sum, Placement: "in-place", Method: "per-op", Batch: 1, Mode: coll.Mode(mode)}, MedianUS: us}
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
