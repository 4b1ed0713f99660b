package history

import (
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"rsag/outdir"
)

// Check refuses what a run could not append to, naming the fix, and makes
// and changes nothing: a missing file stays missing.
func TestCheckRefusesWhatARunCannotAppendTo(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "h.db")
	db, err := Open(good)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	notes := filepath.Join(dir, "notes.txt")
	os.WriteFile(notes, []byte("not a database, long enough to have a header\n"), 0o644)
	foreign := filepath.Join(dir, "foreign.db")
	sq, _ := sql.Open("sqlite", foreign)
	if _, err := sq.Exec("CREATE TABLE t (x)"); err != nil {
		t.Fatal(err)
	}
	sq.Close()
	newer := filepath.Join(dir, "newer.db")
	sq, _ = sql.Open("sqlite", newer)
	sq.Exec("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
	sq.Exec("INSERT INTO meta VALUES ('schema_version', '99')")
	sq.Close()
	empty := filepath.Join(dir, "empty.db")
	os.WriteFile(empty, nil, 0o644)
	for _, c := range []struct{ path, want string }{
		{good, ""},
		{filepath.Join(dir, "new.db"), ""},
		{empty, ""},
		{"", "name is empty"},
		{filepath.Join(dir, "a?b"), "holds ? or #"},
		{filepath.Join(dir, "no", "h.db"), "its directory " + filepath.Join(dir, "no") + " does not exist: make it"},
		{dir, "is not a regular file"},
		{notes, "is not an SQLite database"},
		{foreign, "not an rsag history"},
		{newer, "its schema_version is 99 and this rsag knows 2"},
	} {
		err := Check(c.path)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.path, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want %q", c.path, err, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "new.db")); err == nil {
		t.Error("Check made the file it checked")
	}
	if data, _ := os.ReadFile(notes); !strings.HasPrefix(string(data), "not a database") {
		t.Error("Check changed a file that is not a history")
	}
}

// A run that failed before it wrote summary.json is added from its
// run.json, failed and never a baseline; one still running is refused.
func TestARunThatFailedEarlyIsAddedAsFailed(t *testing.T) {
	dir := t.TempDir()
	rec := outdir.Record{Status: outdir.StatusFailed, Reason: "rank 1 died", Version: "v1", Backend: "mpi", WorldSize: 2,
		Host: "n1", Started: "2026-12-03T00:00:00Z", Ended: "2026-12-03T00:00:05Z", Files: []string{outdir.RunFile}}
	if err := outdir.WriteRecord(dir, rec); err != nil {
		t.Fatal(err)
	}
	r, err := LoadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != outdir.StatusFailed || r.Reason != "rank 1 died" || r.BaselineOK() || len(r.Hosts()) != 1 {
		t.Errorf("%+v", r)
	}
	db, err := Open(filepath.Join(t.TempDir(), "h.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Append(r); err != nil {
		t.Fatal(err)
	}
	runs, _ := db.Runs(0)
	if len(runs) != 1 || runs[0].Status != outdir.StatusFailed || runs[0].BaselineOK || runs[0].Reason != "rank 1 died" {
		t.Errorf("%+v", runs)
	}
	rec.Status = outdir.StatusRunning
	outdir.WriteRecord(dir, rec)
	if _, err := LoadRun(dir); err == nil || !strings.Contains(err.Error(), "add it once it has ended") {
		t.Errorf("a running run: %v", err)
	}
}
