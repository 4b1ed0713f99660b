package outdir

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"rsag/report"
	_ "rsag/report/plot" // its figures are outputs too
)

func put(t *testing.T, dir string, names ...string) {
	t.Helper()
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func left(t *testing.T, dir string) []string {
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

// Each case is a directory as an earlier run (or a user) left it; the
// survey must tell the earlier run's own files from everything else, and
// -overwrite must remove exactly the own ones or refuse, naming the rest.
func TestSurveyAndRemove(t *testing.T) {
	user := []string{"notes.txt", "rank0_contracts.csv.bak", "plot.png", "time_vs_size.pdf"}
	cases := []struct {
		name    string
		files   []string // besides user's
		listed  []string // run.json's files; nil: no run.json
		badRun  bool     // run.json that cannot be read
		own     []string
		foreign []string
		refuse  string // with -overwrite; "" proceeds
	}{
		{name: "empty"},
		{name: "only the user's files"},
		{name: "a run and its temporaries", files: []string{"rank0_timings.csv", "timings.csv", ".summary.json.tmp42", ".run.json.tmp7"},
			listed: []string{"run.json", "rank0_timings.csv", "timings.csv", "summary.json"},
			own:    []string{"run.json", ".run.json.tmp7", ".summary.json.tmp42", "rank0_timings.csv", "timings.csv"}},
		{name: "an older run.json that does not list itself", files: []string{"timings.csv"}, listed: []string{"timings.csv"},
			own: []string{"run.json", "timings.csv"}},
		{name: "a file of a bigger earlier run", files: []string{"rank0_timings.csv", "rank7_timings.csv"},
			listed: []string{"run.json", "rank0_timings.csv"}, own: []string{"run.json", "rank0_timings.csv"},
			foreign: []string{"rank7_timings.csv"}, refuse: "that no run.json there lists as its own (rank7_timings.csv)"},
		{name: "rsag's names and no run.json", files: []string{"timings.csv", "summary.json", ".memory.csv.tmp3"},
			foreign: []string{".memory.csv.tmp3", "summary.json", "timings.csv"}, refuse: "(.memory.csv.tmp3, summary.json, timings.csv)"},
		{name: "a record that lists the user's files and paths", files: []string{"timings.csv"},
			listed: []string{"run.json", "timings.csv", "notes.txt", "../x/timings.csv", "/etc/passwd", "sub/summary.json"},
			own:    []string{"run.json", "timings.csv"}},
		{name: "an unreadable run.json", files: []string{"timings.csv"}, badRun: true,
			foreign: []string{"run.json", "timings.csv"}, refuse: "its run.json cannot be read"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			put(t, dir, user...)
			put(t, dir, c.files...)
			os.Mkdir(filepath.Join(dir, "summary.json.d"), 0o755) // not a regular file: never counted
			switch {
			case c.badRun:
				os.WriteFile(filepath.Join(dir, RunFile), []byte("{not json"), 0o644)
			case c.listed != nil:
				if err := WriteRecord(dir, Record{Status: StatusComplete, Files: c.listed}); err != nil {
					t.Fatal(err)
				}
			}
			e, err := Survey(dir, report.IsOutput)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(e.Own, c.own) || !slices.Equal(e.Foreign, c.foreign) {
				t.Fatalf("own %v, foreign %v; want %v, %v", e.Own, e.Foreign, c.own, c.foreign)
			}
			if e.Empty() != (len(c.own)+len(c.foreign) == 0) {
				t.Errorf("Empty() = %v", e.Empty())
			}
			// Without -overwrite, anything of rsag's is refused, run.json first.
			if err := e.Refusal(false); e.Empty() != (err == nil) {
				t.Errorf("without -overwrite: %v", err)
			} else if err != nil && (!strings.Contains(err.Error(), "already holds results of an earlier run") || !strings.Contains(err.Error(), "pass -overwrite")) {
				t.Errorf("without -overwrite: %v", err)
			} else if err != nil && len(c.own) > 0 && !strings.Contains(err.Error(), "("+RunFile+", ") {
				t.Errorf("run.json is not named first: %v", err)
			}
			err = e.Refusal(true)
			if c.refuse == "" {
				if err != nil {
					t.Fatalf("-overwrite refused: %v", err)
				}
				if err := e.Remove(); err != nil {
					t.Fatal(err)
				}
				if got, want := left(t, dir), slices.Sorted(slices.Values(append([]string{"summary.json.d"}, user...))); !slices.Equal(got, want) {
					t.Errorf("after Remove: %v; want %v", got, want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.refuse) || !strings.Contains(err.Error(), "move") {
				t.Errorf("-overwrite: %v; want a refusal with %q and a fix", err, c.refuse)
			}
		})
	}
}

func TestSurveyMissingDir(t *testing.T) {
	e, err := Survey(filepath.Join(t.TempDir(), "missing"), report.IsOutput)
	if err != nil || !e.Empty() {
		t.Errorf("%+v, %v", e, err)
	}
}

func TestRemoveToleratesFilesAlreadyGone(t *testing.T) {
	dir := t.TempDir()
	put(t, dir, "timings.csv")
	e := Earlier{Dir: dir, Own: []string{"run.json", "timings.csv"}}
	if err := e.Remove(); err != nil {
		t.Errorf("another rank removed run.json first: %v", err)
	}
}
