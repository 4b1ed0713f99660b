package e2e

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"rsag/history"
	"rsag/outdir"
)

// historyRuns are the runs in the history file at path, oldest first.
func historyRuns(t *testing.T, path string) []history.RunRow {
	t.Helper()
	db, err := history.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	runs, err := db.Runs()
	if err != nil {
		t.Fatal(err)
	}
	return runs
}

// mpirunEnv is mpirun with extra variables in the job's environment.
func mpirunEnv(t *testing.T, np int, limit time.Duration, env []string, args ...string) result {
	t.Helper()
	argv := append([]string{"../scripts/mpirun.sh", fmt.Sprint(np), rsagBin}, args...)
	return runWithin(t, limit, strings.Join(argv, " "), func(ctx context.Context) *exec.Cmd {
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Env = jobEnv(t, env...)
		cmd.WaitDelay = 10 * time.Second
		return cmd
	})
}

// A run appends itself to the history named by -history, RSAG_HISTORY or
// the config's history key (in that order): a passing run as complete, a
// failed one as failed and never a baseline. A history it could not
// append to is refused before anything runs (exit 2, nothing made), and
// an append that fails at the end leaves the run's verdict and run.json
// as they are and exits 5, saying so.
func TestARunAppendsItselfToTheHistory(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	db := filepath.Join(tmp, "h.db")
	smoke := []string{"-config", "../configs/smoke.toml", "-backend", "mpi"}
	run := func(env []string, args ...string) result {
		return mpirunEnv(t, 2, 2*time.Minute, env, append(append([]string{}, smoke...), args...)...)
	}
	other := filepath.Join(tmp, "other.db")
	steps := []struct {
		name   string
		env    []string
		args   []string
		code   int
		status string
	}{
		{"-history", nil, []string{"-history", db}, 0, outdir.StatusComplete},
		// RSAG_HISTORY comes before the config's key.
		{"RSAG_HISTORY", []string{history.Env + "=" + db}, []string{"-set", `history="` + other + `"`}, 0, outdir.StatusComplete},
		{"the config's key", nil, []string{"-set", `history="` + db + `"`}, 0, outdir.StatusComplete},
		// -history comes before RSAG_HISTORY.
		{"a failed run", []string{history.Env + "=" + other}, []string{"-history", db, "-set", "timing.min_busbw_gbps=100000"}, 1, outdir.StatusFailed},
	}
	for i, s := range steps {
		dir := filepath.Join(tmp, "run"+fmt.Sprint(i))
		r := run(s.env, append(s.args, "-output-dir", dir)...)
		if r.code != s.code {
			t.Fatalf("%s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", s.name, r.code, s.code, r.stdout, r.stderr)
		}
		if !strings.Contains(r.stdout, "history: added as run "+fmt.Sprint(i+1)+" ("+s.status+") to "+db) {
			t.Errorf("%s: stdout does not say it was added as run %d:\n%s", s.name, i+1, r.stdout)
		}
	}
	if _, err := os.Stat(other); err == nil {
		t.Errorf("%s was made: RSAG_HISTORY or -history should have come first", other)
	}
	runs := historyRuns(t, db)
	if len(runs) != len(steps) {
		t.Fatalf("%d runs in the history, want %d: %+v", len(runs), len(steps), runs)
	}
	for i, s := range steps {
		if runs[i].Status != s.status || runs[i].BaselineOK != (s.code == 0) || runs[i].Dir != filepath.Join(tmp, "run"+fmt.Sprint(i)) {
			t.Errorf("%s: history has %+v", s.name, runs[i])
		}
	}

	// Refused before anything runs: no output dir, no history file made.
	notSQLite := filepath.Join(tmp, "notes.txt")
	os.WriteFile(notSQLite, []byte("my notes\n"), 0o644)
	for _, c := range []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"no such directory", nil, []string{"-history", filepath.Join(tmp, "no", "h.db")}, "-history: history file " + filepath.Join(tmp, "no", "h.db") + ": its directory"},
		{"a directory", []string{history.Env + "=" + tmp}, nil, history.Env + ": history file " + tmp + " is not a regular file"},
		{"not SQLite", nil, []string{"-set", `history="` + notSQLite + `"`}, "the config's history key: history file " + notSQLite + " is not an SQLite database"},
	} {
		dir := filepath.Join(tmp, "refused")
		r := run(c.env, append(c.args, "-output-dir", dir)...)
		if r.code != 2 {
			t.Errorf("%s: exit %d, want 2\nstderr:\n%s", c.name, r.code, r.stderr)
		}
		saidOnce(t, r.stderr, c.want)
		if _, err := os.Stat(dir); err == nil {
			t.Errorf("%s: the refused run made %s", c.name, dir)
		}
	}
	if data, _ := os.ReadFile(notSQLite); string(data) != "my notes\n" {
		t.Errorf("%s was changed: %q", notSQLite, data)
	}
	if _, err := os.Stat(filepath.Join(tmp, "no")); err == nil {
		t.Error("a refused -history made its directory")
	}

	// An append that fails at the end: an SQLite file that says it is a
	// history of this schema but whose runs table is not rsag's.
	bogus := filepath.Join(tmp, "bogus.db")
	sq, err := sql.Open("sqlite", bogus)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
		"INSERT INTO meta VALUES ('schema_version', '1')", "CREATE TABLE runs (id INTEGER PRIMARY KEY)"} {
		if _, err := sq.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	sq.Close()
	dir := filepath.Join(tmp, "unrecorded")
	r := run(nil, "-history", bogus, "-output-dir", dir)
	if r.code != 5 {
		t.Fatalf("an append that failed: exit %d, want 5\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "rsag: PASSED") || !strings.Contains(r.stderr, "the run's verdict above stands, but it was not added to history "+bogus) ||
		!strings.Contains(r.stderr, "rsag history -append "+dir+" "+bogus) {
		t.Errorf("the failed append is not said as it is\nstdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}
	if rec, err := outdir.ReadRecord(dir); err != nil || rec.Status != outdir.StatusComplete {
		t.Errorf("run.json of the unrecorded run: %+v, %v; want complete", rec, err)
	}
}
