package history

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
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
}

// Open opens the history file at path, making it (and its tables) when it
// is missing. It refuses a directory, a file that is not SQLite, and a
// schema version this rsag does not know.
func Open(path string) (*DB, error) {
	if err := checkName(path); err != nil {
		return nil, err
	}
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
		return nil, fmt.Errorf("history file %s is not a regular file (a directory?): give a file, e.g. %s/history.db", path, strings.TrimSuffix(path, "/"))
	}
	// The rollback journal, not WAL: WAL needs shared memory that a shared
	// file system between hosts does not give. Writers take the lock at
	// BEGIN IMMEDIATE and wait for each other up to the busy timeout.
	dsn := path + "?_pragma=busy_timeout(" + strconv.FormatInt(BusyTimeout.Milliseconds(), 10) + ")&_pragma=foreign_keys(1)&_pragma=journal_mode(DELETE)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("history file %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	h := &DB{path: path, db: db}
	if err := h.init(); err != nil {
		db.Close()
		return nil, err
	}
	return h, nil
}

// Close closes the database.
func (h *DB) Close() error { return h.db.Close() }

// Path is the file's name, as opened.
func (h *DB) Path() string { return h.path }

// init makes the tables when they are missing and checks the version.
func (h *DB) init() error {
	return h.write(func(tx *sql.Conn) error {
		ctx := context.Background()
		if _, err := tx.ExecContext(ctx, schema); err != nil {
			return err
		}
		var v string
		err := tx.QueryRowContext(ctx, "SELECT value FROM meta WHERE key = 'schema_version'").Scan(&v)
		if errors.Is(err, sql.ErrNoRows) {
			_, err = tx.ExecContext(ctx, "INSERT INTO meta (key, value) VALUES ('schema_version', ?), ('written_by', 'rsag')", strconv.Itoa(SchemaVersion))
			return err
		}
		if err != nil {
			return err
		}
		if v != strconv.Itoa(SchemaVersion) {
			return fmt.Errorf("its schema_version is %s and this rsag knows %d: read it with the rsag that wrote it, or start a new file", v, SchemaVersion)
		}
		return nil
	})
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
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return h.wrap(err)
	}
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

func (h *DB) wrap(err error) error {
	var dup *DuplicateError
	if errors.As(err, &dup) {
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
		ctx := context.Background()
		key := r.Key()
		var old int64
		err := tx.QueryRowContext(ctx, "SELECT id FROM runs WHERE run_key = ?", key).Scan(&old)
		if err == nil {
			return &DuplicateError{Path: h.path, ID: old}
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		s := r.Summary
		config, _ := json.Marshal(s.Config)
		res, err := tx.ExecContext(ctx, `INSERT INTO runs (run_key, started, ended, status, reason, checks_passed, baseline_ok,
			rsag_version, rsag_commit, backend, world_size, mpi_library, driver, config_digest, config, command, hosts, output_dir, appended)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			key, s.Started, s.Ended, r.Status, r.Reason, s.ChecksPassed, r.BaselineOK(),
			s.RSAG.Version, s.RSAG.Commit, s.Backend, s.WorldSize, s.MPILibrary, s.Driver, r.ConfigDigest(), string(config),
			jsonText(s.Command), jsonText(r.Hosts()), r.Dir, time.Now().UTC().Format(time.RFC3339))
		if err != nil {
			return err
		}
		if id, err = res.LastInsertId(); err != nil {
			return err
		}
		return insertRows(ctx, tx, id, r)
	})
	return id, err
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
		if err := exec("INSERT INTO nodes (run_id, host, ranks) VALUES (?, ?, ?)", n.Host, jsonText(n.Ranks)); err != nil {
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
		for i, us := range r.Samples[c] {
			if err := exec("INSERT INTO samples (run_id, case_key, cycle, us) VALUES (?, ?, ?, ?)", caseKey(c), t.Discarded+i, us); err != nil {
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
