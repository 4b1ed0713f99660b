package history

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"rsag/coll"
)

// RunRow is one run as the history lists it.
type RunRow struct {
	ID                     int64
	Started, Ended, Status string
	Reason                 string
	BaselineOK             bool
	Version, Commit        string
	Backend                string
	WorldSize              int
	Hosts                  []string
	Dir                    string
}

// Runs lists every run, oldest first (by id: the order they were appended).
func (h *DB) Runs() ([]RunRow, error) {
	rows, err := h.db.Query(`SELECT id, started, ended, status, reason, baseline_ok, rsag_version, rsag_commit, backend, world_size, hosts, output_dir
		FROM runs ORDER BY id`)
	if err != nil {
		return nil, h.wrap(err)
	}
	defer rows.Close()
	var out []RunRow
	for rows.Next() {
		var r RunRow
		var hosts string
		if err := rows.Scan(&r.ID, &r.Started, &r.Ended, &r.Status, &r.Reason, &r.BaselineOK, &r.Version, &r.Commit, &r.Backend,
			&r.WorldSize, &hosts, &r.Dir); err != nil {
			return nil, h.wrap(err)
		}
		_ = json.Unmarshal([]byte(hosts), &r.Hosts)
		out = append(out, r)
	}
	return out, h.wrapErr(rows.Err())
}

func (h *DB) wrapErr(err error) error {
	if err == nil {
		return nil
	}
	return h.wrap(err)
}

// Point is one run's median of a case.
type Point struct {
	RunID    int64
	Started  string
	MedianUS float64
	P10US    float64
	P90US    float64
}

// Trend is one case over the runs that may be baselines (complete, every
// check held), oldest first: a failed run's timings may be partial.
type Trend struct {
	Case   coll.Case
	Text   string
	Points []Point
}

// Trends are every case's trends, in the order cases first appear.
func (h *DB) Trends() ([]Trend, error) {
	rows, err := h.db.Query(`SELECT c.case_key, c.case_text, r.id, r.started, c.median_us, c.p10_us, c.p90_us
		FROM cases c JOIN runs r ON r.id = c.run_id WHERE r.baseline_ok = 1 ORDER BY r.id, c.rowid`)
	if err != nil {
		return nil, h.wrap(err)
	}
	defer rows.Close()
	index := map[string]int{}
	var out []Trend
	for rows.Next() {
		var key, text string
		var p Point
		if err := rows.Scan(&key, &text, &p.RunID, &p.Started, &p.MedianUS, &p.P10US, &p.P90US); err != nil {
			return nil, h.wrap(err)
		}
		i, ok := index[key]
		if !ok {
			c, err := parseCaseKey(key)
			if err != nil {
				return nil, fmt.Errorf("history file %s: case %q: %v", h.path, key, err)
			}
			i = len(out)
			index[key] = i
			out = append(out, Trend{Case: c, Text: text})
		}
		out[i].Points = append(out[i].Points, p)
	}
	return out, h.wrapErr(rows.Err())
}

// NodeRecord is one host over the runs it was in.
type NodeRecord struct {
	Host string
	// Runs are the ids of the runs it was in; Suspect and Intermittent
	// those that named it a suspect, and of them those whose suspect was
	// intermittent (a locate verdict that says so).
	Runs, Suspect, Intermittent []int64
}

// Nodes are every host's record, by host name.
func (h *DB) Nodes() ([]NodeRecord, error) {
	byHost := map[string]*NodeRecord{}
	get := func(host string) *NodeRecord {
		n := byHost[host]
		if n == nil {
			n = &NodeRecord{Host: host}
			byHost[host] = n
		}
		return n
	}
	if err := h.each("SELECT host, run_id FROM nodes ORDER BY run_id", func(s scanner) error {
		var host string
		var id int64
		if err := s.Scan(&host, &id); err != nil {
			return err
		}
		n := get(host)
		n.Runs = append(n.Runs, id)
		return nil
	}); err != nil {
		return nil, err
	}
	// A suspect row names its nodes; a run counts once per node.
	if err := h.each(`SELECT run_id, nodes, kind || ' ' || problem || ' ' || text FROM suspects ORDER BY run_id`, func(s scanner) error {
		var id int64
		var nodes, words string
		if err := s.Scan(&id, &nodes, &words); err != nil {
			return err
		}
		var hosts []string
		_ = json.Unmarshal([]byte(nodes), &hosts)
		for _, host := range hosts {
			n := get(host)
			if !slices.Contains(n.Suspect, id) {
				n.Suspect = append(n.Suspect, id)
			}
			if strings.Contains(strings.ToLower(words), "intermittent") && !slices.Contains(n.Intermittent, id) {
				n.Intermittent = append(n.Intermittent, id)
			}
		}
		return nil
	}); err != nil {
		return nil, err
	}
	// A locate verdict of intermittent names its node too.
	if err := h.each(`SELECT DISTINCT run_id, host FROM locate_nodes WHERE lower(verdict) LIKE '%intermittent%'`, func(s scanner) error {
		var id int64
		var host string
		if err := s.Scan(&id, &host); err != nil {
			return err
		}
		if n := get(host); !slices.Contains(n.Intermittent, id) {
			n.Intermittent = append(n.Intermittent, id)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	out := make([]NodeRecord, 0, len(byHost))
	for _, n := range byHost {
		out = append(out, *n)
	}
	slices.SortFunc(out, func(a, b NodeRecord) int { return strings.Compare(a.Host, b.Host) })
	return out, nil
}

type scanner interface{ Scan(...any) error }

func (h *DB) each(query string, fn func(scanner) error, args ...any) error {
	rows, err := h.db.Query(query, args...)
	if err != nil {
		return h.wrap(err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return h.wrap(err)
		}
	}
	return h.wrapErr(rows.Err())
}

// BaselineRun is one run of a baseline from the history: its samples.
type BaselineRun struct {
	ID      int64
	Started string
	Samples map[coll.Case][]float64
}

// Baseline is the last n runs that may be baselines (complete, every
// check held), newest first, leaving out the run whose key is except (the
// run being checked, when it is in the history too).
func (h *DB) Baseline(n int, except string) ([]BaselineRun, error) {
	var out []BaselineRun
	if err := h.each(`SELECT id, started FROM runs WHERE baseline_ok = 1 AND run_key != ? ORDER BY id DESC LIMIT ?`, func(s scanner) error {
		var b BaselineRun
		if err := s.Scan(&b.ID, &b.Started); err != nil {
			return err
		}
		out = append(out, b)
		return nil
	}, except, n); err != nil {
		return nil, err
	}
	for i := range out {
		samples := map[coll.Case][]float64{}
		var last string
		var c coll.Case
		if err := h.each("SELECT case_key, us FROM samples WHERE run_id = ? ORDER BY case_key, cycle", func(s scanner) error {
			var key string
			var us float64
			if err := s.Scan(&key, &us); err != nil {
				return err
			}
			if key != last {
				var err error
				if c, err = parseCaseKey(key); err != nil {
					return err
				}
				last = key
			}
			samples[c] = append(samples[c], us)
			return nil
		}, out[i].ID); err != nil {
			return nil, err
		}
		out[i].Samples = samples
	}
	return out, nil
}

// Count is the number of rows of each table, for a reader's check.
func (h *DB) Count(table string) (int, error) {
	if !slices.Contains(Tables, table) {
		return 0, fmt.Errorf("no table %q in the history", table)
	}
	var n int
	err := h.db.QueryRow("SELECT count(*) FROM " + table).Scan(&n)
	if err == sql.ErrNoRows {
		return 0, nil
	}
	return n, h.wrapErr(err)
}

// Tables are the database's tables, in schema order.
var Tables = []string{"meta", "runs", "nodes", "cases", "samples", "fits", "locate_nodes", "locate_links", "suspects", "soak"}
