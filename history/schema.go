package history

import (
	"slices"
	"strings"
)

// SchemaVersion is the database's schema version, kept in meta as
// schema_version. A change that is not an added table or an added nullable
// column raises it; rsag refuses a file of a version it does not know.
// docs/history.md documents every table and column, and a test reads the
// file with Python's sqlite3 and checks them against the docs.
//
// Version 2 (2026-12) gave each case an id (case_ids) that a sample row
// names instead of repeating the case's JSON key, and runs.gpu_shared. A
// writer upgrades a file of version 1 in place, in the transaction that
// opens it (upgrade); a reader refuses it, naming rsag history -upgrade.
const SchemaVersion = 2

// schema is the database's tables. Every table but meta and runs has a
// run_id, runs.id, and rows of a run are written in one transaction with
// it: a run is in the file whole or not at all.
const schema = `
CREATE TABLE IF NOT EXISTS meta (
	key   TEXT PRIMARY KEY,
	value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS runs (
	id            INTEGER PRIMARY KEY,
	run_key       TEXT NOT NULL UNIQUE,
	started       TEXT NOT NULL,
	ended         TEXT NOT NULL,
	status        TEXT NOT NULL,
	reason        TEXT NOT NULL,
	checks_passed INTEGER NOT NULL,
	baseline_ok   INTEGER NOT NULL,
	rsag_version  TEXT NOT NULL,
	rsag_commit   TEXT NOT NULL,
	backend       TEXT NOT NULL,
	world_size    INTEGER NOT NULL,
	mpi_library   TEXT NOT NULL,
	driver        TEXT NOT NULL,
	config_digest TEXT NOT NULL,
	config        TEXT NOT NULL,
	command       TEXT NOT NULL,
	hosts         TEXT NOT NULL,
	output_dir    TEXT NOT NULL,
	appended      TEXT NOT NULL,
	gpu_shared    TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS nodes (
	run_id  INTEGER NOT NULL REFERENCES runs(id),
	host    TEXT NOT NULL,
	ranks   TEXT NOT NULL,
	crowded TEXT NOT NULL DEFAULT '',
	waited  TEXT NOT NULL DEFAULT '',
	PRIMARY KEY (run_id, host)
);
CREATE TABLE IF NOT EXISTS cases (
	run_id       INTEGER NOT NULL REFERENCES runs(id),
	case_key     TEXT NOT NULL,
	case_text    TEXT NOT NULL,
	run          TEXT NOT NULL,
	size_bytes   INTEGER NOT NULL,
	dtype        TEXT NOT NULL,
	op           TEXT NOT NULL,
	placement    TEXT NOT NULL,
	method       TEXT NOT NULL,
	batch        INTEGER NOT NULL,
	buffers      TEXT NOT NULL,
	cta_policy   TEXT NOT NULL,
	offset_bytes INTEGER NOT NULL,
	mode         TEXT NOT NULL,
	samples      INTEGER NOT NULL,
	discarded    INTEGER NOT NULL,
	ranks        INTEGER NOT NULL,
	min_us       REAL NOT NULL,
	p10_us       REAL NOT NULL,
	median_us    REAL NOT NULL,
	p90_us       REAL NOT NULL,
	p99_us       REAL NOT NULL,
	max_us       REAL NOT NULL,
	mean_us      REAL NOT NULL,
	std_us       REAL NOT NULL,
	busbw_gbps   REAL NOT NULL,
	slowest_rank INTEGER NOT NULL,
	slowest_host TEXT NOT NULL,
	correct      INTEGER NOT NULL,
	PRIMARY KEY (run_id, case_key)
);
CREATE TABLE IF NOT EXISTS case_ids (
	id       INTEGER PRIMARY KEY,
	case_key TEXT NOT NULL UNIQUE
);
CREATE TABLE IF NOT EXISTS samples (
	run_id  INTEGER NOT NULL REFERENCES runs(id),
	case_id INTEGER NOT NULL REFERENCES case_ids(id),
	cycle   INTEGER NOT NULL,
	us      REAL NOT NULL,
	PRIMARY KEY (run_id, case_id, cycle)
);
CREATE TABLE IF NOT EXISTS fits (
	run_id           INTEGER NOT NULL REFERENCES runs(id),
	series_key       TEXT NOT NULL,
	series_text      TEXT NOT NULL,
	mode             TEXT NOT NULL,
	alpha_us         REAL,
	bandwidth_gbps   REAL,
	r2               REAL,
	max_rel_residual REAL,
	sizes            INTEGER NOT NULL,
	reason           TEXT NOT NULL,
	PRIMARY KEY (run_id, series_key)
);
CREATE TABLE IF NOT EXISTS locate_nodes (
	run_id            INTEGER NOT NULL REFERENCES runs(id),
	host              TEXT NOT NULL,
	suspect           INTEGER NOT NULL,
	verdict           TEXT NOT NULL,
	place             TEXT NOT NULL,
	collective        TEXT NOT NULL,
	size_bytes        INTEGER NOT NULL,
	figure            REAL NOT NULL,
	busbw_gbps        REAL NOT NULL,
	median_busbw_gbps REAL NOT NULL,
	slow_repeats      INTEGER NOT NULL,
	figure_suspect    INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS locate_links (
	run_id            INTEGER NOT NULL REFERENCES runs(id),
	kind              TEXT NOT NULL,
	a                 TEXT NOT NULL,
	b                 TEXT NOT NULL,
	round             INTEGER NOT NULL,
	collective        TEXT NOT NULL,
	size_bytes        INTEGER NOT NULL,
	figure            REAL NOT NULL,
	busbw_gbps        REAL NOT NULL,
	median_busbw_gbps REAL NOT NULL,
	suspect           INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS suspects (
	run_id  INTEGER NOT NULL REFERENCES runs(id),
	source  TEXT NOT NULL,
	kind    TEXT NOT NULL,
	nodes   TEXT NOT NULL,
	ranks   TEXT NOT NULL,
	problem TEXT NOT NULL,
	text    TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS soak (
	run_id            INTEGER PRIMARY KEY REFERENCES runs(id),
	seed              INTEGER NOT NULL,
	iterations        INTEGER NOT NULL,
	failed_iterations INTEGER NOT NULL,
	failure_rate      REAL NOT NULL,
	elapsed_s         REAL NOT NULL,
	bytes_moved       INTEGER NOT NULL,
	verdict           TEXT NOT NULL,
	suspect_ranks     TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS verdicts (
	run_key    TEXT NOT NULL,
	at         TEXT NOT NULL,
	verdict    TEXT NOT NULL,
	text       TEXT NOT NULL,
	output_dir TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS cases_by_key ON cases (case_key, run_id);
CREATE INDEX IF NOT EXISTS verdicts_by_key ON verdicts (run_key);
CREATE INDEX IF NOT EXISTS runs_by_start ON runs (started, id);
`

// added are the tables added since schema_version 1 was first written: a
// file an older rsag wrote lacks them until a writer opens it, and a
// reader takes them as empty.
var added = map[string]bool{"verdicts": true}

// addedColumns are the columns added to a table since schema_version 2
// was first written, each with a default, so that the version stands: a
// file an older rsag wrote lacks them until a writer opens it (init adds
// them, empty: that rsag did not say), and a reader takes them as empty.
// nodes.crowded and nodes.waited are summary.json's nodes[].crowded and
// nodes[].waited, which a history baseline's runs are judged by.
var addedColumns = map[string][]string{"nodes": {"crowded", "waited"}}

// columns are each table's columns, from schema (the one list of them):
// an opener holds a file to them before it writes anything. They leave
// out the added tables and columns, which a file may lack.
var columns = func() map[string][]string {
	out := map[string][]string{}
	for table, cols := range schemaColumns() {
		for _, c := range cols {
			if !added[table] && !slices.Contains(addedColumns[table], c[0]) {
				out[table] = append(out[table], c[0])
			}
		}
	}
	return out
}()

// schemaColumns are each table's columns in schema, each as its name and
// its definition as schema writes it, less its comma.
func schemaColumns() map[string][][2]string {
	out := map[string][][2]string{}
	var table string
	for _, line := range strings.Split(schema, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 6 && f[0] == "CREATE" && f[1] == "TABLE":
			table = f[5]
		case strings.HasPrefix(line, ")"):
			table = ""
		case table != "" && len(f) > 0 && f[0] != "PRIMARY":
			out[table] = append(out[table], [2]string{f[0], strings.TrimSuffix(strings.Join(f, " "), ",")})
		}
	}
	return out
}

// addColumns are the statements that add each of addedColumns, by table
// and column, as schema defines it.
var addColumns = func() map[string]map[string]string {
	out := map[string]map[string]string{}
	for table, cols := range schemaColumns() {
		for _, c := range cols {
			if slices.Contains(addedColumns[table], c[0]) {
				if out[table] == nil {
					out[table] = map[string]string{}
				}
				out[table][c[0]] = "ALTER TABLE " + table + " ADD COLUMN " + c[1]
			}
		}
	}
	return out
}()

// columnsV1 are schema_version 1's: no case_ids, samples keyed by the
// case's JSON, no runs.gpu_shared. A writer upgrades such a file.
var columnsV1 = func() map[string][]string {
	out := map[string][]string{}
	for t, cols := range columns {
		switch t {
		case "case_ids":
		case "samples":
			out[t] = []string{"run_id", "case_key", "cycle", "us"}
		case "runs":
			out[t] = cols[:len(cols)-1] // less gpu_shared, the last
		default:
			out[t] = cols
		}
	}
	return out
}()

// upgrade turns a file of schema_version 1 into 2, in the writer's
// transaction: each case's key into case_ids once, the samples rewritten
// to name it, runs.gpu_shared added (empty: no run of version 1 said).
var upgrade = func() string {
	from := strings.Index(schema, "CREATE TABLE IF NOT EXISTS samples (")
	to := from + strings.Index(schema[from:], ");") + 2
	samples := strings.Replace(schema[from:to], "IF NOT EXISTS samples", "samples_v2", 1)
	ids := strings.Index(schema, "CREATE TABLE IF NOT EXISTS case_ids (")
	return `ALTER TABLE runs ADD COLUMN gpu_shared TEXT NOT NULL DEFAULT '';
` + schema[ids:from] + `INSERT INTO case_ids (case_key) SELECT DISTINCT case_key FROM samples ORDER BY case_key;
` + samples + `
INSERT INTO samples_v2 (run_id, case_id, cycle, us) SELECT s.run_id, k.id, s.cycle, s.us FROM samples s JOIN case_ids k ON k.case_key = s.case_key;
DROP TABLE samples;
ALTER TABLE samples_v2 RENAME TO samples;
UPDATE meta SET value = '2' WHERE key = 'schema_version';
`
}()
