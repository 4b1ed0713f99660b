package history

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"rsag/report"
)

// reader is the independent reader: Python's sqlite3, read-only. It prints
// the tables and columns the file has, its schema_version, each table's row
// count, and what each of docs/history.md's example queries returns.
const reader = `
import json, sqlite3, sys
db = sqlite3.connect("file:" + sys.argv[1] + "?mode=ro", uri=True)
tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY rowid")]
out = {"tables": {t: [c[1] for c in db.execute("PRAGMA table_info(%s)" % t)] for t in tables},
       "rows": {t: db.execute("SELECT count(*) FROM %s" % t).fetchone()[0] for t in tables},
       "version": db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0],
       "queries": [db.execute(q).fetchall() for q in json.loads(sys.argv[2])]}
print(json.dumps(out))
`

// documented are docs/history.md's tables and columns, in its order, and
// its example queries.
func documented(t *testing.T) (names []string, columns map[string][]string, queries []string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "docs", "history.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	// A table's line and its continuation lines, up to the next or a blank.
	item := regexp.MustCompile("(?m)^- `([a-z_]+)`: ((?:.*\n  .*)*.*)$")
	columns = map[string][]string{}
	for _, m := range item.FindAllStringSubmatch(doc, -1) {
		list := regexp.MustCompile(`\s*\(.*\)`).ReplaceAllString(strings.Join(strings.Fields(m[2]), " "), "")
		names = append(names, m[1])
		for _, c := range strings.Split(list, ",") {
			columns[m[1]] = append(columns[m[1]], strings.TrimSpace(c))
		}
	}
	block := regexp.MustCompile("(?s)## Three queries\n\n```sql\n(.*?)```").FindStringSubmatch(doc)
	if block == nil {
		t.Fatal("docs/history.md has no ```sql block under ## Three queries")
	}
	var q strings.Builder
	for _, line := range strings.Split(block[1], "\n") {
		if strings.HasPrefix(line, "--") {
			continue
		}
		q.WriteString(line + "\n")
		if strings.HasSuffix(strings.TrimSpace(line), ";") {
			queries = append(queries, strings.TrimSpace(q.String()))
			q.Reset()
		}
	}
	return names, columns, queries
}

// Python's sqlite3, an independent reader, opens a history file rsag
// wrote and finds the tables and columns docs/history.md lists, in its
// order, every row rsag wrote, and runs the doc's three queries.
func TestPythonReadsTheHistoryAsDocumented(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed: the independent reader of the history file is Python's sqlite3 (install python3 to run this test)")
	}
	names, columns, queries := documented(t)
	if !reflect.DeepEqual(names, Tables) {
		t.Errorf("docs/history.md lists tables %v; the schema has %v", names, Tables)
	}
	if len(queries) != 3 {
		t.Errorf("docs/history.md has %d example queries, want 3: %q", len(queries), queries)
	}
	path := filepath.Join(t.TempDir(), "h.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		r := synthetic(i)
		if i == 1 {
			r.Summary.Locate = &report.SummaryLocate{Suspects: []report.SummaryLocateSuspect{{Kind: "node", Nodes: []string{"n1"}, Problem: "latency", Text: "n1"}}}
		}
		if i == 2 {
			r.Status, r.Reason = "failed", "a contract failed"
		}
		if _, err := db.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]int{}
	for _, table := range Tables {
		if want[table], err = db.Count(table); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	qs, _ := json.Marshal(queries)
	cmd := exec.Command(python, "-c", reader, path, string(qs))
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("python3 could not read %s: %v\n%s", path, err, stderr)
	}
	var got struct {
		Tables  map[string][]string
		Rows    map[string]int
		Version string
		Queries [][][]any
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(got.Tables) != len(Tables) {
		t.Errorf("python finds tables %v, the docs list %v", got.Tables, names)
	}
	for _, table := range names {
		if !reflect.DeepEqual(got.Tables[table], columns[table]) {
			t.Errorf("%s: python finds columns %v, docs/history.md lists %v", table, got.Tables[table], columns[table])
		}
	}
	if !reflect.DeepEqual(got.Rows, want) {
		t.Errorf("python counts rows %v, rsag wrote %v", got.Rows, want)
	}
	if got.Version != "2" {
		t.Errorf("schema_version %q", got.Version)
	}
	// The queries' answers: no 1 MiB case in the synthetic runs; n1 a
	// suspect in one run; the failed run and why.
	if len(got.Queries) == 3 {
		if len(got.Queries[0]) != 0 || len(got.Queries[1]) != 1 || got.Queries[1][0][0] != "n1" || got.Queries[1][0][1] != 1.0 ||
			len(got.Queries[2]) != 1 || got.Queries[2][0][2] != "a contract failed" {
			t.Errorf("the docs' queries answered %v", got.Queries)
		}
	}
}
