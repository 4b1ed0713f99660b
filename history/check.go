package history

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"rsag/outdir"
)

// Env is the environment variable that names the history file a run
// appends itself to, when neither -history nor the config's history key
// does (docs/history.md).
const Env = "RSAG_HISTORY"

// checkName refuses a name SQLite would not take as a plain file name, or
// that names no file a careless hand meant: empty or blank, spaces around
// it, :memory: (a database that is never kept), a file: URI, ? or # (which
// SQLite reads as a URI's options), a NUL.
func checkName(path string) error {
	switch {
	case strings.TrimSpace(path) == "":
		return fmt.Errorf("the history file's name is empty (%q): give a file, e.g. results/history.db", path)
	case strings.TrimSpace(path) != path:
		return fmt.Errorf("history file %q: its name begins or ends with a space: give the name without them, e.g. %q", path, strings.TrimSpace(path))
	case strings.HasPrefix(path, ":"):
		return fmt.Errorf("history file %q: SQLite takes that name as a database in memory, which is never kept: give a file, e.g. results/history.db", path)
	case len(path) >= 5 && strings.EqualFold(path[:5], "file:"):
		return fmt.Errorf("history file %q: a file: URI is not taken (its options could make a database in memory or read another file): give the file's plain name", path)
	case strings.ContainsAny(path, "?#\x00"):
		return fmt.Errorf("history file %q: its name holds ? or #, which SQLite reads as options: choose a name without them", path)
	}
	return nil
}

// Check says whether a run can append itself to the history file at path,
// without making or changing anything: its directory exists and is
// writable (SQLite writes its journal beside the file), and the file, when
// it is there, is a regular, writable rsag history of this schema version
// (or empty). A run checks this before it measures anything, so that a
// bad name is refused then, not found at the end.
func Check(path string) error {
	if err := checkName(path); err != nil {
		return err
	}
	dir := filepath.Dir(path)
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if ds, derr := os.Stat(dir); derr != nil || !ds.IsDir() {
			return fmt.Errorf("history file %s: its directory %s does not exist: make it, or give a file in an existing directory", path, dir)
		}
		return checkDir(path, dir)
	case err != nil:
		return fmt.Errorf("history file %s: %w", path, err)
	case !st.Mode().IsRegular():
		return fmt.Errorf("history file %s is not a regular file (a directory?): give a file, e.g. %s/history.db", path, strings.TrimSuffix(path, "/"))
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("history file %s cannot be written (%v): give a file you can write, or a new name", path, err)
	}
	head := make([]byte, 16)
	n, _ := io.ReadFull(f, head)
	f.Close()
	if st.Size() == 0 {
		return checkDir(path, dir) // SQLite takes an empty file as a new database
	}
	if n < 16 || string(head) != "SQLite format 3\x00" {
		return fmt.Errorf("history file %s is not an SQLite database: give rsag's history file, or a new name", path)
	}
	if err := walError(path); err != nil {
		return err
	}
	if err := checkHistory(path); err != nil {
		return err
	}
	return checkDir(path, dir)
}

// CheckInside refuses a history file inside a run's output dir: the run
// writes that dir, and -overwrite removes what it made there.
func CheckInside(path, outputDir string) error {
	if outputDir == "" {
		return nil
	}
	p, err1 := filepath.Abs(path)
	d, err2 := filepath.Abs(outputDir)
	if err1 != nil || err2 != nil {
		return nil
	}
	if p == d || strings.HasPrefix(p, d+string(filepath.Separator)) {
		return fmt.Errorf("history file %s is inside the run's output dir %s, which the run writes: keep the history beside it, e.g. %s",
			path, outputDir, filepath.Join(filepath.Dir(d), "history.db"))
	}
	return nil
}

func checkDir(path, dir string) error {
	if err := outdir.CheckWritable(dir); err != nil {
		return fmt.Errorf("history file %s: its directory %s is not writable (%v); SQLite writes its journal there: give a file in a directory you can write", path, dir, err)
	}
	return nil
}

// checkHistory opens an existing file read-only and holds it to an rsag
// history of this version, without waiting on a lock: a history another
// writer holds is taken on its header alone (the append at the end checks
// it again, and waits, saying so).
func checkHistory(path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("history file %s: %w", path, err)
	}
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: abs}).EscapedPath()+"?mode=ro&_pragma=busy_timeout(0)")
	if err != nil {
		return fmt.Errorf("history file %s: %w", path, err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	// Held as a writer's file (opened read-only all the same): one of
	// schema_version 1 passes, for the append upgrades it.
	h := &DB{path: path, db: db, mode: Existing}
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		if isBusy(err) {
			return nil
		}
		return h.wrap(err)
	}
	defer conn.Close()
	if _, _, err := h.verify(ctx, conn); err != nil {
		if isBusy(err) {
			return nil
		}
		return h.wrap(err)
	}
	return nil
}
