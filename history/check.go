package history

import (
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"rsag/outdir"
)

// Env is the environment variable that names the history file a run
// appends itself to, when neither -history nor the config's history key
// does (docs/history.md).
const Env = "RSAG_HISTORY"

// checkName refuses a name SQLite would not take as a plain file name.
func checkName(path string) error {
	if path == "" {
		return errors.New("the history file's name is empty: give a file, e.g. results/history.db")
	}
	if strings.ContainsAny(path, "?#") {
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
	if err := checkVersion(path); err != nil {
		return err
	}
	return checkDir(path, dir)
}

func checkDir(path, dir string) error {
	if err := outdir.CheckWritable(dir); err != nil {
		return fmt.Errorf("history file %s: its directory %s is not writable (%v); SQLite writes its journal there: give a file in a directory you can write", path, dir, err)
	}
	return nil
}

// checkVersion reads an existing file's schema_version, read-only.
func checkVersion(path string) error {
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout("+strconv.FormatInt(BusyTimeout.Milliseconds(), 10)+")")
	if err != nil {
		return fmt.Errorf("history file %s: %w", path, err)
	}
	defer db.Close()
	var v string
	err = db.QueryRow("SELECT value FROM meta WHERE key = 'schema_version'").Scan(&v)
	switch {
	case err != nil && strings.Contains(err.Error(), "no such table"), errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("history file %s is an SQLite database but not an rsag history (no schema_version in a meta table): give rsag's history file, or a new name", path)
	case err != nil:
		return fmt.Errorf("history file %s: %w", path, err)
	case v != strconv.Itoa(SchemaVersion):
		return fmt.Errorf("history file %s: its schema_version is %s and this rsag knows %d: give the file of this rsag's version, or a new name", path, v, SchemaVersion)
	}
	return nil
}
