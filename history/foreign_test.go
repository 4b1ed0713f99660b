package history

import (
	"crypto/sha256"
	"database/sql"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sum is the file's SHA-256 ("" when it is missing).
func sum(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%x", sha256.Sum256(data))
}

// files are the names in dir.
func files(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return strings.Join(names, " ")
}

// Names SQLite treats as something other than a file are refused by every
// way a name comes in, and no file is made for them.
func TestSpecialNamesAreRefused(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	for _, c := range []struct{ name, want string }{
		{":memory:", "in memory, which is never kept"},
		{":MEMORY:", "in memory"},
		{"file:victim.db", "a file: URI is not taken"},
		{"FILE:victim.db?mode=memory", "a file: URI is not taken"},
		{"", "name is empty"},
		{"  ", "name is empty"},
		{" h.db", "begins or ends with a space"},
		{"h.db?mode=ro", "holds ? or #"},
	} {
		if err := Check(c.name); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Check(%q): %v, want %q", c.name, err, c.want)
		}
		for _, mode := range []Mode{ReadOnly, Existing, Create} {
			if db, err := OpenMode(c.name, mode); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("OpenMode(%q, %d): %v, want %q", c.name, mode, err, c.want)
				if db != nil {
					db.Close()
				}
			}
		}
		if err := Command([]string{"-append", dir, c.name}, io.Discard, io.Discard); err == nil {
			t.Errorf("rsag history -append DIR %q was taken", c.name)
		}
	}
	if got := files(t, dir); got != "" {
		t.Errorf("refused names made files: %s", got)
	}
}

// An SQLite file that is not an rsag history is left byte for byte as it
// was by every opener and by rsag history, and a reader given a missing
// name makes no file.
func TestForeignFilesAreNeverWritten(t *testing.T) {
	dir := t.TempDir()
	foreign := filepath.Join(dir, "victim.db")
	sq, err := sql.Open("sqlite", foreign)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"PRAGMA journal_mode=WAL", "CREATE TABLE accounts (id INTEGER PRIMARY KEY, owner TEXT)", "INSERT INTO accounts VALUES (1, 'ann')"} {
		if _, err := sq.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	sq.Close()
	// Not quite a history either: meta says so, runs is not rsag's.
	bogus := filepath.Join(dir, "bogus.db")
	sq, _ = sql.Open("sqlite", bogus)
	for _, q := range []string{"CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)", "INSERT INTO meta VALUES ('schema_version', '1')",
		"CREATE TABLE runs (id INTEGER PRIMARY KEY)"} {
		if _, err := sq.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	sq.Close()
	before := files(t, dir)
	for _, path := range []string{foreign, bogus} {
		was := sum(t, path)
		for _, mode := range []Mode{ReadOnly, Existing, Create} {
			db, err := OpenMode(path, mode)
			if err == nil || !strings.Contains(err.Error(), "not an rsag history") {
				t.Errorf("OpenMode(%s, %d): %v, want it refused as not an rsag history", path, mode, err)
			}
			if db != nil {
				db.Close()
			}
		}
		run := t.TempDir()
		for _, args := range [][]string{{path}, {"-append", run, path}, {"-accept", "1", path}, {"-html", filepath.Join(t.TempDir(), "p.html"), path}} {
			if err := Command(args, io.Discard, io.Discard); err == nil {
				t.Errorf("rsag history %v: no error", args)
			}
		}
		if err := Check(path); err == nil || !strings.Contains(err.Error(), "not an rsag history") {
			t.Errorf("Check(%s): %v", path, err)
		}
		if now := sum(t, path); now != was {
			t.Errorf("%s was changed", path)
		}
	}
	if now := files(t, dir); now != before {
		t.Errorf("files in the dir: %q, were %q", now, before)
	}
	// A typo under a reader: an error naming it, and no file.
	typo := filepath.Join(dir, "histroy.db")
	for _, args := range [][]string{{typo}, {"-accept", "1", typo}} {
		var stderr strings.Builder
		err := Command(args, io.Discard, &stderr)
		if err == nil || !strings.Contains(err.Error(), typo+" does not exist") {
			t.Errorf("rsag history %v: %v", args, err)
		}
	}
	if _, err := os.Stat(typo); err == nil {
		t.Errorf("a reader made %s", typo)
	}
}

// Reading a history writes nothing to it: not a row, not a journal.
func TestReadingWritesNothing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "h.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Append(synthetic(1)); err != nil {
		t.Fatal(err)
	}
	// A reader must not write back a missing meta row either.
	if _, err := db.db.Exec("DELETE FROM meta WHERE key = 'written_by'"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	was, before := sum(t, path), files(t, dir)
	var out strings.Builder
	if err := Command([]string{path}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "the last 1 of 1 runs") {
		t.Errorf("stdout:\n%s", out.String())
	}
	r, err := OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Record("k", VerdictAccepted, "", ""); err == nil {
		t.Error("a read-only history took a row")
	}
	r.Close()
	if sum(t, path) != was || files(t, dir) != before {
		t.Errorf("reading changed the history or its dir: %s", files(t, dir))
	}
}

// A history inside the run's output dir is refused: the run writes there.
func TestCheckInsideTheOutputDir(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	if err := CheckInside(filepath.Join(out, "summary.json"), out); err == nil || !strings.Contains(err.Error(), "inside the run's output dir") {
		t.Errorf("%v", err)
	}
	if err := CheckInside(out+"-history.db", out); err != nil {
		t.Error(err)
	}
}

// A name with spaces and % in it is the file's name, as given.
func TestANameIsTakenAsGiven(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "my history %41 & co.db")
	db, err := Open(name)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	if got := files(t, dir); got != "my history %41 & co.db" {
		t.Errorf("files: %q", got)
	}
	r, err := OpenReadOnly(name)
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
}
