package history

import (
	"io"
	"path/filepath"
	"strings"
	"testing"
)

// asVersion1 turns a history this rsag wrote into what schema_version 1
// was: samples keyed by the case's JSON, no case_ids, no runs.gpu_shared,
// no nodes.crowded or waited.
func asVersion1(t *testing.T, path string) {
	t.Helper()
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{
		`CREATE TABLE samples_v1 (run_id INTEGER NOT NULL REFERENCES runs(id), case_key TEXT NOT NULL, cycle INTEGER NOT NULL, us REAL NOT NULL,
			PRIMARY KEY (run_id, case_key, cycle))`,
		`INSERT INTO samples_v1 SELECT s.run_id, k.case_key, s.cycle, s.us FROM samples s JOIN case_ids k ON k.id = s.case_id`,
		`DROP TABLE samples`, `DROP TABLE case_ids`, `ALTER TABLE samples_v1 RENAME TO samples`,
		`ALTER TABLE runs DROP COLUMN gpu_shared`, `ALTER TABLE nodes DROP COLUMN crowded`, `ALTER TABLE nodes DROP COLUMN waited`,
		`UPDATE meta SET value = '1' WHERE key = 'schema_version'`,
	} {
		if _, err := db.db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// A file of schema_version 1 is refused by a reader, naming the command
// that upgrades it, passes a run's pre-check, and is upgraded by a writer
// with every sample kept.
func TestAVersion1HistoryIsUpgradedByAWriter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		r := synthetic(i)
		r.PID = 100 + i
		if _, err := db.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	asVersion1(t, path)
	was := sum(t, path)
	if _, err := OpenReadOnly(path); err == nil || !strings.Contains(err.Error(), "rsag history -upgrade "+path) {
		t.Errorf("a reader of version 1: %v", err)
	}
	if err := Command([]string{path}, io.Discard, io.Discard); err == nil {
		t.Error("rsag history read a version 1 file")
	}
	if err := Check(path); err != nil {
		t.Errorf("the pre-check refused a version 1 file: %v", err)
	}
	if sum(t, path) != was {
		t.Error("a reader or the pre-check changed the file")
	}
	var out strings.Builder
	if err := Command([]string{"-upgrade", path}, &out, io.Discard); err != nil || !strings.Contains(out.String(), "schema_version 2") {
		t.Fatalf("-upgrade: %v %s", err, out.String())
	}
	db, err = OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	run := synthetic(9)
	run.PID = 999
	got, _, err := db.Baseline(5, run.Key(), run.Summary.Started, run.Kind())
	if err != nil || len(got) != 3 {
		t.Fatalf("baseline after the upgrade: %d runs, %v", len(got), err)
	}
	for _, b := range got {
		for k, v := range b.Samples {
			if len(v) != 3 || v[0] <= 0 {
				t.Errorf("run %d, case %s: samples %v", b.ID, k, v)
			}
		}
	}
	if n, _ := db.Count("case_ids"); n != 1 {
		t.Errorf("%d case ids for one case", n)
	}
}

// A run whose ranks shared a GPU is never a baseline of one with a GPU a
// rank, nor the other way, and the history names the difference.
func TestASharedGPURunIsAKindOfItsOwn(t *testing.T) {
	db, err := Open(filepath.Join(t.TempDir(), "h.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i := range 2 {
		r := synthetic(i)
		r.PID = 100 + i
		if _, err := db.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	shared := synthetic(9)
	shared.PID = 999
	shared.Summary.GPUShared = "GPU shared: 2 ranks ran on 1 GPU(s)"
	got, other, err := db.Baseline(5, shared.Key(), shared.Summary.Started, shared.Kind())
	if err != nil || len(got) != 0 || !strings.Contains(shared.Kind().Differ(other.Kind), "the GPU was shared between ranks") {
		t.Errorf("a shared-GPU run against unshared ones: %d runs, other %+v, %v", len(got), other.Kind, err)
	}
	if _, err := db.Append(shared); err != nil {
		t.Fatal(err)
	}
	runs, _ := db.Runs(0)
	trends, err := db.Trends(runs)
	if err != nil || len(trends) != 2 || trends[0].Kind.GPUShared == trends[1].Kind.GPUShared {
		t.Errorf("trends: %d, %v; want one per kind", len(trends), err)
	}
}

// What crowded a run's ranks (summary.json's nodes[].crowded and waited)
// is kept with its nodes and given back with a baseline's runs, which the
// judge reads it from. A file an older rsag of this schema_version wrote,
// without those columns, is read with them empty, left as it is by a
// reader and the pre-check, and given them, empty, by the first writer.
func TestABaselineRunsCrowdingIsKept(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	const waited, crowded = "rank 1 waited 50% of the timing phase for a processor", "3 ranks on 2 processors"
	for i := range 3 {
		r := synthetic(i)
		r.PID = 100 + i
		r.Summary.Nodes[0].Waited = map[int]string{1: waited}[i]
		r.Summary.Nodes[0].Crowded = map[int]string{2: crowded}[i]
		if _, err := db.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	check := func(db *DB, want ...[2]string) {
		t.Helper()
		next := synthetic(9)
		next.PID = 999
		got, _, err := db.Baseline(5, next.Key(), next.Summary.Started, next.Kind())
		if err != nil || len(got) != len(want) {
			t.Fatalf("baseline: %d runs, %v", len(got), err)
		}
		for i, b := range got { // newest first
			w := want[len(want)-1-i]
			if len(b.Nodes) != 1 || b.Nodes[0].Host != "n1" || b.Nodes[0].Crowded != w[0] || b.Nodes[0].Waited != w[1] {
				t.Errorf("run %d's nodes %+v, want crowded %q, waited %q", b.ID, b.Nodes, w[0], w[1])
			}
		}
	}
	db, err = OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	check(db, [2]string{}, [2]string{"", waited}, [2]string{crowded, ""})
	db.Close()

	// As the rsag before these columns wrote it.
	db, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`ALTER TABLE nodes DROP COLUMN crowded`, `ALTER TABLE nodes DROP COLUMN waited`} {
		if _, err := db.db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()
	was := sum(t, path)
	if err := Check(path); err != nil {
		t.Errorf("the pre-check refused a file without nodes.crowded: %v", err)
	}
	db, err = OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	check(db, [2]string{}, [2]string{}, [2]string{})
	db.Close()
	if sum(t, path) != was {
		t.Error("a reader or the pre-check changed the file")
	}
	db, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	r := synthetic(3)
	r.PID = 103
	r.Summary.Nodes[0].Waited = waited
	if _, err := db.Append(r); err != nil {
		t.Fatal(err)
	}
	check(db, [2]string{}, [2]string{}, [2]string{}, [2]string{"", waited})
	db.Close()
}
