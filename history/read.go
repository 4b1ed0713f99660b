package history

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"rsag/coll"
	"rsag/report"
)

// RunRow is one run as the history lists it.
type RunRow struct {
	ID                     int64
	Started, Ended, Status string
	Reason                 string
	BaselineOK             bool
	// Flagged: rsag check found it slower than its baseline, or held it
	// (a case looked slower on crowded ranks), and no one has accepted it
	// since (rsag history -accept): it is no baseline. Held is which of
	// the words it was ("flagged", "held"; "accepted" or "" otherwise).
	Flagged         bool
	Held            string
	Version, Commit string
	Backend         string
	WorldSize       int
	Hosts           []string
	Dir             string
	Kind            Kind
}

// Kind is what makes two runs' timings comparable: the same world, nodes,
// backend and config, and GPUs of their own or one shared (whose timings
// are of processes taking turns on it). The judge (rsag check, rsag
// compare) judges a run against runs of its kind only, and a trend is
// drawn per kind.
type Kind struct {
	WorldSize, Nodes int
	Backend          string
	ConfigDigest     string
	GPUShared        bool
}

func (k Kind) String() string {
	digest := k.ConfigDigest
	if len(digest) > 12 {
		digest = digest[:12]
	}
	shared := ""
	if k.GPUShared {
		shared = ", GPU shared"
	}
	return fmt.Sprintf("%d ranks on %d node(s), backend %s%s, config %s", k.WorldSize, k.Nodes, k.Backend, shared, digest)
}

// Differ names how k differs from o ("world size 4, not 2"), "" when alike.
func (k Kind) Differ(o Kind) string {
	var d []string
	if k.WorldSize != o.WorldSize {
		d = append(d, fmt.Sprintf("world size %d, not %d", k.WorldSize, o.WorldSize))
	}
	if k.Nodes != o.Nodes {
		d = append(d, fmt.Sprintf("%d node(s), not %d", k.Nodes, o.Nodes))
	}
	if k.Backend != o.Backend {
		d = append(d, fmt.Sprintf("backend %s, not %s", k.Backend, o.Backend))
	}
	if k.GPUShared != o.GPUShared {
		if k.GPUShared {
			d = append(d, "the GPU was shared between ranks, not one GPU a rank")
		} else {
			d = append(d, "one GPU a rank, not the GPU shared between ranks")
		}
	}
	if k.ConfigDigest != o.ConfigDigest {
		d = append(d, "another config (digest "+Kind{ConfigDigest: k.ConfigDigest}.short()+", not "+Kind{ConfigDigest: o.ConfigDigest}.short()+")")
	}
	return strings.Join(d, "; ")
}

func (k Kind) short() string {
	if len(k.ConfigDigest) > 12 {
		return k.ConfigDigest[:12]
	}
	return k.ConfigDigest
}

// Kind is the run's kind.
func (r Run) Kind() Kind {
	return Kind{WorldSize: r.Summary.WorldSize, Nodes: len(r.Summary.Nodes), Backend: r.Summary.Backend, ConfigDigest: r.ConfigDigest(),
		GPUShared: r.Summary.GPUShared != ""}
}

// DefaultLast is how many of the newest runs rsag history shows unless
// -last says otherwise; MaxLast bounds -last (and rsag check's), so that
// a reader's time and memory stay bounded whatever the history's size.
const (
	DefaultLast = 50
	MaxLast     = 10000
)

// runColumns are the runs columns a RunRow is read from, r the runs table.
const runColumns = `r.id, r.started, r.ended, r.status, r.reason, r.baseline_ok, r.rsag_version, r.rsag_commit, r.backend, r.world_size,
	r.hosts, r.output_dir, r.config_digest, (SELECT count(*) FROM nodes n WHERE n.run_id = r.id), r.gpu_shared`

// flaggedSQL is 1 when run r's last word from rsag check or an operator is
// "flagged" or "held" (not since accepted).
func (h *DB) flaggedSQL() string {
	return `(` + h.heldSQL() + ` IN ('flagged', 'held'))`
}

// heldSQL is run r's last word of flagged, held or accepted, "" when none.
func (h *DB) heldSQL() string {
	if !h.hasVerdicts {
		return "''"
	}
	return `COALESCE((SELECT v.verdict FROM verdicts v WHERE v.run_key = r.run_key AND v.verdict IN ('flagged', 'held', 'accepted')
		ORDER BY v.rowid DESC LIMIT 1), '')`
}

func scanRun(s scanner, r *RunRow) error {
	var hosts, shared string
	if err := s.Scan(&r.ID, &r.Started, &r.Ended, &r.Status, &r.Reason, &r.BaselineOK, &r.Version, &r.Commit, &r.Backend,
		&r.WorldSize, &hosts, &r.Dir, &r.Kind.ConfigDigest, &r.Kind.Nodes, &shared, &r.Held); err != nil {
		return err
	}
	r.Flagged = r.Held == VerdictFlagged || r.Held == VerdictHeld
	r.Kind.GPUShared = shared != ""
	_ = json.Unmarshal([]byte(hosts), &r.Hosts)
	r.Kind.WorldSize, r.Kind.Backend = r.WorldSize, r.Backend
	return nil
}

// Runs lists the last runs (at most last; all when last is 0), oldest
// first by their start (then by the order they were appended).
func (h *DB) Runs(last int) ([]RunRow, error) {
	limit := -1
	if last > 0 {
		limit = last
	}
	var out []RunRow
	err := h.each(`SELECT `+runColumns+`, `+h.heldSQL()+` FROM runs r ORDER BY r.started DESC, r.id DESC LIMIT ?`, func(s scanner) error {
		var r RunRow
		if err := scanRun(s, &r); err != nil {
			return err
		}
		out = append(out, r)
		return nil
	}, limit)
	slices.Reverse(out)
	return out, err
}

// RunCount is the number of runs in the history.
func (h *DB) RunCount() (int, error) { return h.Count("runs") }

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

// Trend is one case over the runs of one kind that may be baselines
// (complete, every check held), oldest first: a failed run's timings may
// be partial, and runs of another kind are not comparable.
type Trend struct {
	Case   coll.Case
	Kind   Kind
	Text   string
	Points []Point
}

// Trends are every case's trends over runs (as Runs lists them), per
// kind, in the order kinds and cases first appear.
func (h *DB) Trends(runs []RunRow) ([]Trend, error) {
	kindOf := map[int64]Kind{}
	var ids []string
	for _, r := range runs {
		if r.BaselineOK {
			kindOf[r.ID] = r.Kind
			ids = append(ids, strconv.FormatInt(r.ID, 10))
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	type key struct {
		kind Kind
		c    string
	}
	index := map[key]int{}
	var out []Trend
	err := h.each(`SELECT c.case_key, c.case_text, r.id, r.started, c.median_us, c.p10_us, c.p90_us
		FROM cases c JOIN runs r ON r.id = c.run_id WHERE r.id IN (`+strings.Join(ids, ",")+`) ORDER BY r.started, r.id, c.rowid`, func(s scanner) error {
		var ck, text string
		var p Point
		if err := s.Scan(&ck, &text, &p.RunID, &p.Started, &p.MedianUS, &p.P10US, &p.P90US); err != nil {
			return err
		}
		k := key{kindOf[p.RunID], ck}
		i, ok := index[k]
		if !ok {
			c, err := parseCaseKey(ck)
			if err != nil {
				return fmt.Errorf("case %q: %v", ck, err)
			}
			i = len(out)
			index[k] = i
			out = append(out, Trend{Case: c, Kind: k.kind, Text: text})
		}
		out[i].Points = append(out[i].Points, p)
		return nil
	})
	if err != nil {
		return nil, err
	}
	// Grouped by kind, each kind's cases in their order.
	var kinds []Kind
	for _, t := range out {
		if !slices.Contains(kinds, t.Kind) {
			kinds = append(kinds, t.Kind)
		}
	}
	slices.SortStableFunc(out, func(a, b Trend) int { return slices.Index(kinds, a.Kind) - slices.Index(kinds, b.Kind) })
	return out, nil
}

// NodeRecord is one host over the runs it was in.
type NodeRecord struct {
	Host string
	// Runs are the ids of the runs it was in; Suspect and Intermittent
	// those that named it a suspect, and of them those whose suspect was
	// intermittent (a locate verdict that says so).
	Runs, Suspect, Intermittent []int64
}

// Nodes are every host's record over runs (as Runs lists them, in their
// order), by host name.
func (h *DB) Nodes(runs []RunRow) ([]NodeRecord, error) {
	pos := map[int64]int{}
	var ids []string
	for i, r := range runs {
		pos[r.ID] = i
		ids = append(ids, strconv.FormatInt(r.ID, 10))
	}
	in := "run_id IN (" + strings.Join(ids, ",") + ")"
	byHost := map[string]*NodeRecord{}
	get := func(host string) *NodeRecord {
		n := byHost[host]
		if n == nil {
			n = &NodeRecord{Host: host}
			byHost[host] = n
		}
		return n
	}
	if err := h.each("SELECT host, run_id FROM nodes WHERE "+in, func(s scanner) error {
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
	if err := h.each(`SELECT run_id, nodes, kind || ' ' || problem || ' ' || text FROM suspects WHERE `+in, func(s scanner) error {
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
	if err := h.each(`SELECT DISTINCT run_id, host FROM locate_nodes WHERE `+in+` AND lower(verdict) LIKE '%intermittent%'`, func(s scanner) error {
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
	byPos := func(a, b int64) int { return pos[a] - pos[b] }
	for _, n := range byHost {
		slices.SortFunc(n.Runs, byPos)
		slices.SortFunc(n.Suspect, byPos)
		slices.SortFunc(n.Intermittent, byPos)
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

// BaselineRun is one run of a baseline from the history: its samples,
// and its nodes with what crowded their ranks (report.SummaryNode's Host,
// Crowded and Waited; empty where the run said nothing or an older rsag
// appended it).
type BaselineRun struct {
	ID      int64
	Started string
	Samples map[coll.Case][]float64
	Nodes   []report.SummaryNode
}

// Baseline is the last n runs of kind that may be baselines (complete,
// every check held, not flagged by rsag check unless accepted since)
// started no later than before, newest first, leaving out the run whose
// key is except (the run being checked, when it is in the history too):
// a run is judged against the runs before it, never those after. When
// there is none, other is the newest such run of another kind (ID 0 when
// there is none either).
func (h *DB) Baseline(n int, except, before string, kind Kind) (out []BaselineRun, other RunRow, err error) {
	where := `r.baseline_ok = 1 AND r.run_key != ? AND r.started <= ? AND NOT ` + h.flaggedSQL()
	if err := h.each(`SELECT r.id, r.started FROM runs r WHERE `+where+` AND r.world_size = ? AND r.backend = ? AND r.config_digest = ?
		AND (SELECT count(*) FROM nodes n WHERE n.run_id = r.id) = ? AND (r.gpu_shared != '') = ? ORDER BY r.started DESC, r.id DESC LIMIT ?`, func(s scanner) error {
		var b BaselineRun
		if err := s.Scan(&b.ID, &b.Started); err != nil {
			return err
		}
		out = append(out, b)
		return nil
	}, except, before, kind.WorldSize, kind.Backend, kind.ConfigDigest, kind.Nodes, kind.GPUShared, n); err != nil {
		return nil, other, err
	}
	if len(out) == 0 {
		err := h.each(`SELECT `+runColumns+`, '' FROM runs r WHERE `+where+` ORDER BY r.started DESC, r.id DESC LIMIT 1`, func(s scanner) error {
			return scanRun(s, &other)
		}, except, before)
		return nil, other, err
	}
	for i := range out {
		samples := map[coll.Case][]float64{}
		var last string
		var c coll.Case
		if err := h.each("SELECT k.case_key, s.us FROM samples s JOIN case_ids k ON k.id = s.case_id WHERE s.run_id = ? ORDER BY s.case_id, s.cycle", func(s scanner) error {
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
			return nil, other, err
		}
		out[i].Samples = samples
		if out[i].Nodes, err = h.crowding(out[i].ID); err != nil {
			return nil, other, err
		}
	}
	return out, other, nil
}

// crowding is run id's nodes, each with what crowded its ranks
// (BaselineRun.Nodes), in the run's order.
func (h *DB) crowding(id int64) ([]report.SummaryNode, error) {
	col := func(c string) string {
		if h.lacks["nodes."+c] {
			return "''"
		}
		return "n." + c
	}
	var nodes []report.SummaryNode
	err := h.each("SELECT n.host, "+col("crowded")+", "+col("waited")+" FROM nodes n WHERE n.run_id = ? ORDER BY n.rowid", func(s scanner) error {
		var n report.SummaryNode
		if err := s.Scan(&n.Host, &n.Crowded, &n.Waited); err != nil {
			return err
		}
		nodes = append(nodes, n)
		return nil
	}, id)
	return nodes, err
}

// Verdicts a run's rows in the verdicts table hold.
const (
	VerdictOK           = "ok"
	VerdictFlagged      = "flagged"
	VerdictInconclusive = "inconclusive"
	// VerdictHeld is an inconclusive run some of whose cases looked
	// slower on crowded ranks: like a flagged one, no baseline until
	// accepted, or a slowdown on a busy machine would become its own
	// baseline (judge-proof at 4 ranks on 2 processors: the planted 1.4x
	// was inconclusive the first night, a baseline the next).
	VerdictHeld     = "held"
	VerdictAccepted = "accepted"
)

// Record writes a verdict on the run with key (rsag check's on a run,
// appended or not yet, or an operator's acceptance), with its words.
func (h *DB) Record(key, verdict, text, dir string) error {
	return h.write(func(tx *sql.Conn) error {
		_, err := tx.ExecContext(context.Background(), "INSERT INTO verdicts (run_key, at, verdict, text, output_dir) VALUES (?, ?, ?, ?, ?)",
			key, time.Now().UTC().Format(time.RFC3339Nano), verdict, text, dir)
		return err
	})
}

// KeyOf is the key and output dir of the run with id.
func (h *DB) KeyOf(id int64) (key, dir string, err error) {
	err = h.db.QueryRow("SELECT run_key, output_dir FROM runs WHERE id = ?", id).Scan(&key, &dir)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", fmt.Errorf("history file %s has no run %d (rsag history %s lists its runs)", h.path, id, h.path)
	}
	return key, dir, h.wrapErr(err)
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
var Tables = []string{"meta", "runs", "nodes", "cases", "case_ids", "samples", "fits", "locate_nodes", "locate_links", "suspects", "soak", "verdicts"}
