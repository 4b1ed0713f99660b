package page

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"rsag/outdir"
)

// runDir is a copy of a real run's output dir with only its summary.json.
func runDir(t *testing.T, summary string) string {
	t.Helper()
	dir := t.TempDir()
	data, err := os.ReadFile(filepath.Join("testdata", summary))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "summary.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func command(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = Command(args, &out, &errb)
	return code, out.String(), errb.String()
}

// rsag report writes the page the package writes, and prints the run's
// tables; for a run of an older rsag too.
func TestReportWritesThePageAndTheTables(t *testing.T) {
	for _, name := range []string{"smoke-summary.json", "rsag-552bdd6-smoke-summary.json"} {
		dir := runDir(t, name)
		code, stdout, stderr := command(dir)
		if code != ExitOK || stderr != "" {
			t.Fatalf("%s: exit %d\n%s", name, code, stderr)
		}
		got, err := os.ReadFile(filepath.Join(dir, File))
		if err != nil {
			t.Fatal(err)
		}
		if want := pageOf(t, load(t, name)); string(got) != want {
			t.Errorf("%s: report.html is not the page of its summary", name)
		}
		for _, want := range []string{"Contracts", "Timings (us per operation", "Model (t(n) = alpha + n/B", "Memory (above the baseline",
			"wrote " + filepath.Join(dir, File), "the run held"} {
			if !strings.Contains(stdout, want) {
				t.Errorf("%s: stdout lacks %q:\n%s", name, want, stdout)
			}
		}
	}
	// The summary.json itself stands for its dir, and -html writes elsewhere.
	dir := runDir(t, "smoke-summary.json")
	out := filepath.Join(t.TempDir(), "page.html")
	if code, _, stderr := command("-html", out, filepath.Join(dir, "summary.json")); code != ExitOK {
		t.Fatalf("-html: exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(out); err != nil {
		t.Error(err)
	}
	if _, err := os.Stat(filepath.Join(dir, File)); err == nil {
		t.Error("-html FILE wrote DIR/report.html too")
	}
}

// Every bad input is refused with exit 2 and a message that names the
// problem and the fix, leaving no page behind.
func TestReportRefusesBadInput(t *testing.T) {
	tmp := t.TempDir()
	empty := filepath.Join(tmp, "empty")
	os.Mkdir(empty, 0o755)
	notJSON := filepath.Join(tmp, "notjson")
	os.Mkdir(notJSON, 0o755)
	os.WriteFile(filepath.Join(notJSON, "summary.json"), []byte("<html>not json"), 0o644)
	foreign := filepath.Join(tmp, "foreign")
	os.Mkdir(foreign, 0o755)
	os.WriteFile(filepath.Join(foreign, "summary.json"), []byte(`{"status": "complete"}`), 0o644)
	newer := filepath.Join(tmp, "newer")
	os.Mkdir(newer, 0o755)
	os.WriteFile(filepath.Join(newer, "summary.json"), []byte(`{"schema_version": 5, "rsag": {"version": "v9.0.0", "commit": "abc"}}`), 0o644)
	good := runDir(t, "smoke-summary.json")
	readOnly := runDir(t, "smoke-summary.json")
	if err := os.Chmod(readOnly, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(readOnly, 0o755) })
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"no dir", nil, []string{"want one output dir, got 0", "rsag report results/ch7"}},
		{"two dirs", []string{good, good}, []string{"want one output dir, got 2"}},
		{"missing", []string{filepath.Join(tmp, "nope")}, []string{"nope does not exist", "give the output dir of a finished rsag run"}},
		{"no summary", []string{empty}, []string{"holds no summary.json", "not the output dir of a finished rsag run", "run.json says why"}},
		{"not json", []string{notJSON}, []string{"not a summary.json", "give the summary.json of an rsag run"}},
		{"no schema", []string{foreign}, []string{"no schema_version: not an rsag summary.json"}},
		{"newer schema", []string{newer}, []string{"schema_version 5, but this rsag reads versions 1, 2, 3 and 4", "read it with the rsag that wrote it (rsag v9.0.0, commit abc)"}},
		{"unwritable dir", []string{readOnly}, []string{"cannot write the page to " + filepath.Join(readOnly, File), "make the directory writable, or write the page elsewhere with -html FILE"}},
		{"unwritable -html", []string{"-html", filepath.Join(tmp, "no", "such", "page.html"), good}, []string{"cannot write the page to", "no such file or directory", "choose a file in a directory you can write"}},
		{"-html a dir", []string{"-html", tmp, good}, []string{"it is a directory: give a file name"}},
		{"bad flag", []string{"-htm", "x", good}, []string{"flag provided but not defined: -htm"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.name == "unwritable dir" && os.Geteuid() == 0 {
				t.Skip("root writes into a read-only directory")
			}
			code, _, stderr := command(c.args...)
			if code != ExitBadInput {
				t.Errorf("exit %d, want %d\n%s", code, ExitBadInput, stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
		})
	}
	if _, err := os.Stat(filepath.Join(good, File)); err == nil {
		t.Error("a refused command left a page in the good run's dir")
	}
}

// A run of an older rsag listed no page in its run.json; once rsag report
// has written one, run.json lists it, so that -overwrite removes it with
// the run's other files instead of refusing the directory.
func TestReportListsThePageInRunJSON(t *testing.T) {
	dir := runDir(t, "rsag-552bdd6-smoke-summary.json")
	old := outdir.Record{Status: outdir.StatusComplete, Version: "v0.old", Started: "2026-12-01T21:54:28Z", Files: []string{"run.json", "summary.json"}}
	if err := outdir.WriteRecord(dir, old); err != nil {
		t.Fatal(err)
	}
	for range 2 { // and only once
		if code, _, stderr := command(dir); code != ExitOK || stderr != "" {
			t.Fatalf("exit %d: %s", code, stderr)
		}
	}
	r, err := outdir.ReadRecord(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"run.json", "summary.json", File}; !slices.Equal(r.Files, want) || r.Version != "v0.old" || r.Status != outdir.StatusComplete {
		t.Errorf("run.json after rsag report: %+v, want files %v and the rest as it was", r, want)
	}
}
