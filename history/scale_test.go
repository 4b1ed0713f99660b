package history

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fill appends n synthetic runs (one case, three samples each, started a
// second apart) in one transaction: a test helper for a history's size.
func fill(t testing.TB, db *DB, n int) {
	t.Helper()
	err := db.write(func(tx *sql.Conn) error {
		for i := range n {
			r := synthetic(0)
			r.Summary.Started = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Second).Format(time.RFC3339)
			r.PID = i + 1
			if _, err := db.insertRun(context.Background(), tx, r); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A large history answers rsag history -last 20 and -html -last 200 with
// the last runs only. RSAG_HISTORY_RUNS sets the size (500 unless
// given); docs/history.md records the times at 100,000.
func TestALargeHistoryAnswersTheLastRuns(t *testing.T) {
	n := 500
	if v := os.Getenv("RSAG_HISTORY_RUNS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "h.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	fill(t, db, n)
	db.Close()
	st, _ := os.Stat(path)
	t.Logf("%d runs: built in %v, %d MB", n, time.Since(start).Round(time.Millisecond), st.Size()>>20)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-last", "20", path}, fmt.Sprintf("the last 20 of %d runs", n)},
		{[]string{"-last", "200", "-html", filepath.Join(dir, "h.html"), path}, "wrote "},
	} {
		var out strings.Builder
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		start := time.Now()
		if err := Command(c.args, &out, io.Discard); err != nil {
			t.Fatal(err)
		}
		took := time.Since(start)
		runtime.ReadMemStats(&after)
		t.Logf("rsag history %s: %v, %d MB allocated", strings.Join(c.args[:len(c.args)-1], " "), took.Round(time.Millisecond),
			(after.TotalAlloc-before.TotalAlloc)>>20)
		if !strings.Contains(out.String(), c.want) {
			t.Errorf("rsag history %v:\n%s", c.args, out.String())
		}
		if rows := strings.Count(out.String(), "| complete |"); c.want != "wrote " && rows != 20 {
			t.Errorf("rsag history -last 20 printed %d runs", rows)
		}
	}
	if data, err := os.ReadFile(filepath.Join(dir, "h.html")); err != nil || strings.Count(string(data), "<td>complete</td>") != 200 {
		t.Errorf("the page does not show the last 200 runs: %v", err)
	}
}
