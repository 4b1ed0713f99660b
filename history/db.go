package history

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	_ "modernc.org/sqlite" // the pure-Go SQLite driver: no C library to build against

	"rsag/coll"
	"rsag/report"
)

// BusyTimeout is how long a writer waits for another's lock before it
// gives up: runs that end together on a cluster append one after another.
const BusyTimeout = 60 * time.Second

// DB is a history database, open.
type DB struct {
	path string
	db   *sql.DB
	// mode is how it was opened; a read-only one refuses every write.
	mode Mode
	// Waiting, when set, is called once before a write waits for another
	// writer's lock, so that the wait is said, not silent.
	Waiting func()
	// hasVerdicts: the file has the verdicts table (one an older rsag
	// wrote may not, until a writer adds it).
	hasVerdicts bool
	// lacks are the added columns (addedColumns) the file has not, as
	// "table.column": one an older rsag wrote, until a writer adds them.
	lacks map[string]bool
}

// Mode is how a history file is opened.
type Mode int

const (
	// ReadOnly reads an existing rsag history and never writes to it, nor
	// makes a file.
	ReadOnly Mode = iota
	// Existing writes to an existing rsag history, never making one.
	Existing
	// Create writes to an rsag history, making it when it is missing.
	Create
)

// Open opens the history file at path to append to, making it (and its
// tables) when it is missing. It refuses a directory, a file that is not
// SQLite, an SQLite file that is not an rsag history (before it writes
// anything to it), and a schema version this rsag does not know.
func Open(path string) (*DB, error) { return OpenMode(path, Create) }

// OpenReadOnly opens an existing history file to read: it makes no file
// and writes no row.
func OpenReadOnly(path string) (*DB, error) { return OpenMode(path, ReadOnly) }

// OpenMode opens the history file at path as mode says.
func OpenMode(path string, mode Mode) (*DB, error) { return OpenWaiting(path, mode, nil) }

// OpenWaiting is OpenMode with DB.Waiting set from the start (a writer may
// wait as it opens the file).
func OpenWaiting(path string, mode Mode, waiting func()) (*DB, error) {
	if err := checkName(path); err != nil {
		return nil, err
	}
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist) && mode != Create:
		return nil, fmt.Errorf("history file %s does not exist: give the file rsag history -append or a run's -history made (a typo?)", path)
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("history file %s: %w", path, err)
	case !st.Mode().IsRegular():
		return nil, fmt.Errorf("history file %s is not a regular file (a directory?): give a file, e.g. %s/history.db", path, strings.TrimSuffix(path, "/"))
	case st.Size() > 0 && !IsSQLite(path):
		return nil, fmt.Errorf("history file %s is not an SQLite database: give rsag's history file, or a new name", path)
	case st.Size() > 0:
		if err := walError(path); err != nil {
			return nil, err
		}
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("history file %s: %w", path, err)
	}
	// Always a file: URI of the absolute name, escaped, so that SQLite
	// takes the name as a file and nothing else, and mode= holds: ro never
	// writes, rw never makes the file. No journal_mode pragma: setting it
	// would change a foreign file before it is known to be rsag's (rsag's
	// files are made in the default rollback journal, which a shared file
	// system between hosts can lock; WAL cannot).
	open := map[Mode]string{ReadOnly: "ro", Existing: "rw", Create: "rwc"}[mode]
	// A reader may wait out a writer's commit; a writer asks at once and
	// says so before it waits (begin).
	busy := "0"
	if mode == ReadOnly {
		busy = strconv.FormatInt(BusyTimeout.Milliseconds(), 10)
	}
	dsn := "file:" + (&url.URL{Path: abs}).EscapedPath() + "?mode=" + open + "&_pragma=busy_timeout(" + busy + ")&_pragma=foreign_keys(1)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("history file %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	h := &DB{path: path, db: db, mode: mode, Waiting: waiting}
	if mode == ReadOnly {
		err = h.readCheck()
	} else {
		err = h.init()
	}
	if err != nil {
		db.Close()
		return nil, err
	}
	return h, nil
}

// IsSQLite says whether the file at path starts as SQLite's do (rather
// than being a run's dir or summary, or missing).
func IsSQLite(path string) bool {
	head, err := readHeader(path)
	return err == nil && string(head[:16]) == "SQLite format 3\x00"
}

// readHeader reads the first 100 bytes of an SQLite file, its header.
func readHeader(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	head := make([]byte, 100)
	_, err = io.ReadFull(f, head)
	return head, err
}

// walError refuses an SQLite file in WAL mode (its header's read and write
// versions 2): rsag's histories never are, and opening one, even to read,
// makes its -shm and -wal files beside it.
func walError(path string) error {
	if head, err := readHeader(path); err == nil && (head[18] == 2 || head[19] == 2) {
		return &ForeignError{Path: path, Why: "it is in WAL mode, which rsag's histories never are"}
	}
	return nil
}

// Close closes the database.
func (h *DB) Close() error { return h.db.Close() }

// Path is the file's name, as opened.
func (h *DB) Path() string { return h.path }

// readCheck refuses, for a reader, a file that is not an rsag history.
func (h *DB) readCheck() error {
	ctx := context.Background()
	conn, err := h.db.Conn(ctx)
	if err != nil {
		return h.wrap(err)
	}
	defer conn.Close()
	empty, _, err := h.verify(ctx, conn)
	if err != nil {
		return h.wrap(err)
	}
	if empty {
		return fmt.Errorf("history file %s is empty: it holds no run yet (append one with rsag history -append DIR %s)", h.path, h.path)
	}
	return nil
}

// init, in one write transaction, checks that the file is an rsag history
// of this version, or new, and only then makes the tables that are missing
// (all of them in a new file, tables added since in an older one).
func (h *DB) init() error {
	return h.write(func(tx *sql.Conn) error {
		ctx := context.Background()
		empty, v1, err := h.verify(ctx, tx)
		if err != nil {
			return err
		}
		if v1 {
			if _, err := tx.ExecContext(ctx, upgrade); err != nil {
				return fmt.Errorf("upgrading it from schema_version 1 to %d: %w", SchemaVersion, err)
			}
		}
		if _, err := tx.ExecContext(ctx, schema); err != nil {
			return err
		}
		for table, cols := range addColumns {
			for col, add := range cols {
				if !h.lacks[table+"."+col] {
					continue
				}
				if _, err := tx.ExecContext(ctx, add); err != nil {
					return fmt.Errorf("adding %s.%s: %w", table, col, err)
				}
			}
		}
		h.hasVerdicts, h.lacks = true, nil
		if empty {
			_, err = tx.ExecContext(ctx, "INSERT INTO meta (key, value) VALUES ('schema_version', ?), ('written_by', 'rsag')", strconv.Itoa(SchemaVersion))
		}
		return err
	})
}

// names is the set of the names a query of one column returns.
func names(ctx context.Context, conn *sql.Conn, query string, args ...any) (map[string]bool, error) {
	rows, err := conn.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	got := map[string]bool{}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, err
		}
		got[name] = true
	}
	return got, rows.Err()
}

// verify says whether the database holds no table at all (a new file), and
// refuses one that is not an rsag history of this schema version or of
// version 1 (which a writer upgrades; v1 says so): every table of Tables
// with its columns, and meta's schema_version. It only reads.
func (h *DB) verify(ctx context.Context, conn *sql.Conn) (empty, v1 bool, err error) {
	empty, v1, err = h.verifyVersion(ctx, conn)
	if err == nil && v1 && h.mode == ReadOnly {
		err = fmt.Errorf("it is of schema_version 1, which this rsag reads once it is upgraded: run rsag history -upgrade %s "+
			"(any append upgrades it too; an rsag older than the upgrade cannot read it after)", h.path)
	}
	return empty, v1, err
}

func (h *DB) verifyVersion(ctx context.Context, conn *sql.Conn) (empty, v1 bool, err error) {
	have, err := names(ctx, conn, "SELECT name FROM sqlite_master WHERE type = 'table'")
	if err != nil {
		return false, false, err
	}
	if len(have) == 0 {
		return true, false, nil
	}
	foreign := func(why string) error {
		return &ForeignError{Path: h.path, Why: why}
	}
	if !have["meta"] {
		return false, false, foreign("no meta table")
	}
	var v string
	err = conn.QueryRowContext(ctx, "SELECT value FROM meta WHERE key = 'schema_version'").Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return false, false, foreign("no schema_version in its meta table")
	}
	if err != nil {
		return false, false, foreign(err.Error())
	}
	want := columns
	if v1 = v == "1"; v1 {
		want = columnsV1
	} else if v != strconv.Itoa(SchemaVersion) {
		return false, false, fmt.Errorf("its schema_version is %s and this rsag knows %d: read it with the rsag that wrote it, or start a new file", v, SchemaVersion)
	}
	for table, cols := range want {
		if !have[table] {
			return false, false, foreign("no " + table + " table")
		}
		got, err := names(ctx, conn, "SELECT name FROM pragma_table_info(?)", table)
		if err != nil {
			return false, false, err
		}
		for _, c := range cols {
			if !got[c] {
				return false, false, foreign("its " + table + " table has no column " + c)
			}
		}
		for _, c := range addedColumns[table] {
			if !got[c] {
				if h.lacks == nil {
					h.lacks = map[string]bool{}
				}
				h.lacks[table+"."+c] = true
			}
		}
	}
	h.hasVerdicts = have["verdicts"]
	return false, v1, nil
}

// ForeignError is an SQLite file that is not an rsag history.
type ForeignError struct {
	Path, Why string
}

func (e *ForeignError) Error() string {
	return fmt.Sprintf("history file %s is an SQLite database but not an rsag history (%s): rsag leaves it as it is; give rsag's history file, or a new name", e.Path, e.Why)
}

// write runs fn in one write transaction, taken at once (BEGIN IMMEDIATE)
// so that two writers never both read and then both wait to write.
func (h *DB) write(fn func(*sql.Conn) error) error {
	ctx := context.Background()
	conn, err := h.db.Conn(ctx)
	if err != nil {
		return h.wrap(err)
	}
	defer conn.Close()
	if h.mode == ReadOnly {
		return fmt.Errorf("history file %s is open read-only", h.path)
	}
	done, err := begin(ctx, conn, h.Waiting)
	if err != nil {
		return h.wrap(err)
	}
	defer done()
	if err := fn(conn); err != nil {
		_, _ = conn.ExecContext(ctx, "ROLLBACK")
		return h.wrap(err)
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		_, _ = conn.ExecContext(ctx, "ROLLBACK")
		return h.wrap(err)
	}
	return nil
}

// begin takes the write lock (BEGIN IMMEDIATE) at once when it is free;
// when another writer holds it, it calls waiting (when set) and then waits
// up to BusyTimeout. Either way the connection then waits up to
// BusyTimeout for the rest (a commit waits out readers), until done is
// called.
func begin(ctx context.Context, conn *sql.Conn, waiting func()) (done func(), err error) {
	wait := func(ms int64) error {
		_, err := conn.ExecContext(ctx, "PRAGMA busy_timeout = "+strconv.FormatInt(ms, 10))
		return err
	}
	if err := wait(0); err != nil {
		return nil, err
	}
	_, err = conn.ExecContext(ctx, "BEGIN IMMEDIATE")
	if err != nil && !isBusy(err) {
		return nil, err
	}
	if err := wait(BusyTimeout.Milliseconds()); err != nil {
		return nil, err
	}
	if err != nil {
		if waiting != nil {
			waiting()
		}
		if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
			return nil, err
		}
	}
	return func() { _ = wait(0) }, nil
}

func isBusy(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "database is locked") || strings.Contains(err.Error(), "SQLITE_BUSY"))
}

func (h *DB) wrap(err error) error {
	var dup *DuplicateError
	var foreign *ForeignError
	if errors.As(err, &dup) || errors.As(err, &foreign) {
		return err
	}
	msg := err.Error()
	if strings.Contains(msg, "file is not a database") {
		return fmt.Errorf("history file %s is not an SQLite database: give rsag's history file, or a new name", h.path)
	}
	if strings.Contains(msg, "database is locked") {
		return fmt.Errorf("history file %s: another writer held it longer than %v: %v; try again", h.path, BusyTimeout, err)
	}
	return fmt.Errorf("history file %s: %w", h.path, err)
}

// DuplicateError is a run that is in the history already.
type DuplicateError struct {
	Path string
	ID   int64
}

func (e *DuplicateError) Error() string {
	return fmt.Sprintf("the run is in history file %s already, as run %d: a run is appended once", e.Path, e.ID)
}

// Append adds a run, every row of it in one transaction, and returns its
// id. A run that is there already (Run.Key) is refused with a
// *DuplicateError.
func (h *DB) Append(r Run) (int64, error) {
	var id int64
	err := h.write(func(tx *sql.Conn) error {
		var err error
		id, err = h.insertRun(context.Background(), tx, r)
		return err
	})
	return id, err
}

// insertRun writes run r, every row of it, in the transaction tx.
func (h *DB) insertRun(ctx context.Context, tx *sql.Conn, r Run) (int64, error) {
	key := r.Key()
	var old int64
	err := tx.QueryRowContext(ctx, "SELECT id FROM runs WHERE run_key = ?", key).Scan(&old)
	if err == nil {
		return 0, &DuplicateError{Path: h.path, ID: old}
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return 0, err
	}
	s := r.Summary
	config, _ := json.Marshal(s.Config)
	res, err := tx.ExecContext(ctx, `INSERT INTO runs (run_key, started, ended, status, reason, checks_passed, baseline_ok,
		rsag_version, rsag_commit, backend, world_size, mpi_library, driver, config_digest, config, command, hosts, output_dir, appended, gpu_shared)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		key, s.Started, s.Ended, r.Status, r.Reason, s.ChecksPassed, r.BaselineOK(),
		s.RSAG.Version, s.RSAG.Commit, s.Backend, s.WorldSize, s.MPILibrary, s.Driver, r.ConfigDigest(), string(config),
		jsonText(s.Command), jsonText(r.Hosts()), r.Dir, time.Now().UTC().Format(time.RFC3339), s.GPUShared)
	if err != nil {
		return 0, err
	}
	id, err := res.LastInsertId()
	if err != nil {
		return 0, err
	}
	return id, insertRows(ctx, tx, id, r)
}

// insertRows writes a run's rows but its runs row.
func insertRows(ctx context.Context, tx *sql.Conn, id int64, r Run) error {
	s := r.Summary
	exec := func(query string, args ...any) error {
		_, err := tx.ExecContext(ctx, query, append([]any{id}, args...)...)
		return err
	}
	hostOf := map[int]string{}
	for _, n := range s.Nodes {
		for _, rk := range n.Ranks {
			hostOf[rk] = n.Host
		}
		if err := exec("INSERT INTO nodes (run_id, host, ranks, crowded, waited) VALUES (?, ?, ?, ?, ?)", n.Host, jsonText(n.Ranks), n.Crowded, n.Waited); err != nil {
			return err
		}
	}
	for _, t := range s.Timing {
		c := t.Case
		if err := exec(`INSERT INTO cases (run_id, case_key, case_text, run, size_bytes, dtype, op, placement, method, batch, buffers,
			cta_policy, offset_bytes, mode, samples, discarded, ranks, min_us, p10_us, median_us, p90_us, p99_us, max_us, mean_us, std_us,
			busbw_gbps, slowest_rank, slowest_host, correct) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			caseKey(c), c.String(), c.Run, c.SizeBytes, c.DType.String(), c.Op.String(), string(c.Placement), string(c.Method), c.Batch,
			string(c.Buffers), string(c.CTAPolicy), c.Offset, string(c.Mode), t.Samples, t.Discarded, t.Ranks,
			t.MinUS, t.P10US, t.MedianUS, t.P90US, t.P99US, t.MaxUS, t.MeanUS, t.StdUS, t.BusBWGBps, t.SlowestRank, t.SlowestHost, t.Correct); err != nil {
			return err
		}
		if len(r.Samples[c]) == 0 {
			continue
		}
		var caseID int64
		if _, err := tx.ExecContext(ctx, "INSERT OR IGNORE INTO case_ids (case_key) VALUES (?)", caseKey(c)); err != nil {
			return err
		}
		if err := tx.QueryRowContext(ctx, "SELECT id FROM case_ids WHERE case_key = ?", caseKey(c)).Scan(&caseID); err != nil {
			return err
		}
		for i, us := range r.Samples[c] {
			if err := exec("INSERT INTO samples (run_id, case_id, cycle, us) VALUES (?, ?, ?, ?)", caseID, t.Discarded+i, us); err != nil {
				return err
			}
		}
	}
	for _, f := range s.Fits {
		if err := exec(`INSERT INTO fits (run_id, series_key, series_text, mode, alpha_us, bandwidth_gbps, r2, max_rel_residual, sizes, reason)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, caseKey(f.Case), seriesText(f.Case), string(f.Mode),
			number(f.AlphaUS, f.Reason), number(f.BandwidthGBps, f.Reason), number(f.R2, f.Reason), number(f.MaxRelResidual, f.Reason),
			len(f.SizesBytes), f.Reason); err != nil {
			return err
		}
	}
	if l := s.Locate; l != nil {
		if err := insertLocate(exec, *l); err != nil {
			return err
		}
	}
	if k := s.Soak; k != nil {
		if err := exec(`INSERT INTO soak (run_id, seed, iterations, failed_iterations, failure_rate, elapsed_s, bytes_moved, verdict, suspect_ranks)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, int64(k.Seed), k.Iterations, k.FailedIterations, k.FailureRate, k.ElapsedS, k.BytesMoved,
			k.Verdict, jsonText(k.SuspectRanks)); err != nil {
			return err
		}
		if len(k.SuspectRanks) > 0 {
			var nodes []string
			for _, rk := range k.SuspectRanks {
				if h := hostOf[rk]; h != "" && !contains(nodes, h) {
					nodes = append(nodes, h)
				}
			}
			if err := exec("INSERT INTO suspects (run_id, source, kind, nodes, ranks, problem, text) VALUES (?, 'soak', 'rank', ?, ?, 'wrong result', ?)",
				jsonText(nodes), jsonText(k.SuspectRanks), k.Verdict); err != nil {
				return err
			}
		}
	}
	return nil
}

func insertLocate(exec func(string, ...any) error, l report.SummaryLocate) error {
	probe := func(i int) report.SummaryLocateProbe {
		if i >= 0 && i < len(l.Probes) {
			return l.Probes[i]
		}
		return report.SummaryLocateProbe{}
	}
	for _, n := range l.Nodes {
		for _, place := range []struct {
			name string
			figs []report.SummaryLocateFigure
		}{{"inside", n.Inside}, {"pairs", n.Pairs}} {
			for _, f := range place.figs {
				p := probe(f.Probe)
				if err := exec(`INSERT INTO locate_nodes (run_id, host, suspect, verdict, place, collective, size_bytes, figure, busbw_gbps,
					median_busbw_gbps, slow_repeats, figure_suspect) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
					n.Host, n.Suspect, n.Verdict, place.name, p.Collective, p.SizeBytes, f.Figure, f.BusBWGBps, f.MedianBusBWGBps,
					f.SlowRepeats, f.Suspect); err != nil {
					return err
				}
			}
		}
	}
	for _, set := range []struct {
		kind  string
		pairs []report.SummaryLocatePair
	}{{"nodes", l.Pairs}, {"ranks", l.RankPairs}} {
		for _, pr := range set.pairs {
			a, b := pairEnds(set.kind, pr)
			for _, f := range pr.Figures {
				p := probe(f.Probe)
				if err := exec(`INSERT INTO locate_links (run_id, kind, a, b, round, collective, size_bytes, figure, busbw_gbps,
					median_busbw_gbps, suspect) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
					set.kind, a, b, pr.Round, p.Collective, p.SizeBytes, f.Figure, f.BusBWGBps, f.MedianBusBWGBps, pr.Suspect); err != nil {
					return err
				}
			}
		}
	}
	for _, s := range l.Suspects {
		if err := exec("INSERT INTO suspects (run_id, source, kind, nodes, ranks, problem, text) VALUES (?, 'locate', ?, ?, ?, ?, ?)",
			s.Kind, jsonText(s.Nodes), jsonText(s.Ranks), s.Problem, s.Text); err != nil {
			return err
		}
	}
	return nil
}

// pairEnds names a pair's two ends: its nodes, or for a rank pair its ranks.
func pairEnds(kind string, p report.SummaryLocatePair) (string, string) {
	var ends []string
	if kind == "ranks" {
		for _, r := range p.Ranks {
			ends = append(ends, strconv.Itoa(r))
		}
	} else {
		ends = p.Nodes
	}
	for len(ends) < 2 {
		ends = append(ends, "")
	}
	return ends[0], ends[1]
}

// seriesText is a fit's series in words: the case without its size.
func seriesText(c coll.Case) string {
	s := c.String()
	return strings.Replace(s, " "+coll.SizeText(0)+" ", " ", 1)
}

// number is a fit's figure, or NULL when the fit is not there.
func number(v float64, reason string) any {
	if reason != "" || math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return v
}

func jsonText(v any) string {
	data, err := json.Marshal(v)
	if err != nil || string(data) == "null" {
		return "[]"
	}
	return string(data)
}

func contains(v []string, s string) bool {
	for _, x := range v {
		if x == s {
			return true
		}
	}
	return false
}
