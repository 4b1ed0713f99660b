package history

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"rsag/coll"
	"rsag/outdir"
	"rsag/report"
	"rsag/report/runfile"
)

// TimingsFile is the combined per-sample file a run's samples come from.
const TimingsFile = "timings.csv"

// maxTimingsBytes caps timings.csv: a row is about 120 bytes, so this is
// some eight million samples over every rank.
const maxTimingsBytes = 1 << 30

// Run is one finished run as the history keeps it.
type Run struct {
	Dir     string // its output dir, as given
	Summary report.Summary
	Status  string // run.json's word (outdir.StatusComplete or StatusFailed)
	Reason  string
	// Samples are each timing case's kept samples (report.CaseSamples),
	// nil when the dir has no timings.csv.
	Samples map[coll.Case][]float64
	// Host and PID are run.json's: rank 0's host and process id (PID 0
	// when the dir has no run.json).
	Host string
	PID  int
}

// BaselineOK is whether the run may be a baseline: it completed and every
// check held. A failed run is kept in the history, marked, and never
// taken as one.
func (r Run) BaselineOK() bool { return r.Status == outdir.StatusComplete && r.Summary.ChecksPassed }

// Hosts are the run's hosts in the order of their first rank.
func (r Run) Hosts() []string {
	var out []string
	for _, n := range r.Summary.Nodes {
		out = append(out, n.Host)
	}
	return out
}

// ConfigDigest is the SHA-256 of the resolved config as summary.json has
// it (JSON, keys sorted), less its history key: two runs of one config
// have one digest, wherever they were recorded.
func (r Run) ConfigDigest() string {
	cfg := r.Summary.Config
	if m, ok := cfg.(map[string]any); ok {
		if _, has := m["history"]; has {
			c := make(map[string]any, len(m))
			for k, v := range m {
				if k != "history" {
					c[k] = v
				}
			}
			cfg = c
		}
	}
	data, _ := json.Marshal(cfg)
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// Key is the run's identity in the history: rank 0's host and process id
// and the run's start, as run.json has them (two runs started together
// differ in their process ids), and its world and config. A run appended
// twice is refused by it. A summary copied without its run.json has no
// process id: its output dir stands in for it.
func (r Run) Key() string {
	id := []any{r.Summary.Started, r.Host, r.PID, r.ConfigDigest(), r.Summary.WorldSize}
	if r.PID == 0 {
		dir, _ := filepath.Abs(r.Dir)
		id = []any{r.Summary.Started, r.Hosts(), r.Summary.Command, r.ConfigDigest(), r.Summary.WorldSize, dir}
	}
	data, _ := json.Marshal(id)
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// LoadRun reads a finished run from its output dir (or its summary.json):
// summary.json and run.json as rsag compare reads them, and the samples
// from timings.csv beside them. A run still running is refused: it has
// not ended, and its files may be partial. A run that failed before it
// wrote summary.json is read from its run.json alone (failedEarly).
func LoadRun(path string) (Run, error) {
	if r, ok, err := failedEarly(path); ok {
		return r, err
	}
	in, err := runfile.Read(path)
	if err != nil {
		return Run{}, err
	}
	r := Run{Dir: filepath.Dir(in.Path), Summary: in.Summary, Status: in.Status, Reason: in.Reason}
	if in.RunPath != "" {
		if rec, err := outdir.ReadRecord(r.Dir); err == nil && rec.Started == r.Summary.Started {
			r.Host, r.PID = rec.Host, rec.PID
		}
	}
	if r.Status != outdir.StatusComplete && r.Status != outdir.StatusFailed {
		return r, fmt.Errorf("%s is from a run that has not ended (its status is %q): add it once run.json says complete or failed", in.Path, r.Status)
	}
	file := filepath.Join(r.Dir, TimingsFile)
	data, err := runfile.ReadBounded(file, maxTimingsBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return r, nil // no timing phase, or a summary copied alone
	}
	if err != nil {
		return r, err
	}
	rows, err := report.ReadCSV[report.TimingRow](bytes.NewReader(data))
	if err != nil {
		return r, fmt.Errorf("reading %s: %w", file, err)
	}
	discard := map[coll.Case]int{}
	for _, s := range r.Summary.Timing {
		discard[s.Case] = s.Discarded
	}
	r.Samples = report.CaseSamples(rows, func(c coll.Case) int { return discard[c] })
	// The file must be the summary's: every case with its number of samples.
	for _, s := range r.Summary.Timing {
		if got := len(r.Samples[s.Case]); got != s.Samples {
			return r, fmt.Errorf("%s has %d samples of case %s where %s says %d: it is not that run's; was it replaced?",
				file, got, s.Case, filepath.Base(in.Path), s.Samples)
		}
	}
	return r, nil
}

// failedEarly reads, from its run.json, a run in dir that failed before
// it wrote summary.json: the history keeps it, failed, with what run.json
// knows (its start and end, why, its version, backend, world and rank 0's
// host), so that a failure is in the record too. ok is false for any
// other path: a dir with a summary.json, or not a run's dir.
func failedEarly(dir string) (Run, bool, error) {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return Run{}, false, nil
	}
	if _, err := os.Lstat(filepath.Join(dir, report.SummaryFile)); !errors.Is(err, fs.ErrNotExist) {
		return Run{}, false, nil
	}
	rec, err := outdir.ReadRecord(dir)
	if err != nil {
		return Run{}, false, nil // runfile.Read names what is missing
	}
	if rec.Status != outdir.StatusFailed {
		return Run{}, true, fmt.Errorf("%s holds no %s and its %s says %q: add it once it has ended (a run that failed early is added as failed)",
			dir, report.SummaryFile, outdir.RunFile, rec.Status)
	}
	s := report.Summary{RSAG: report.SummaryBuild{Version: rec.Version, Commit: rec.Commit}, Status: rec.Status, Reason: rec.Reason,
		Started: rec.Started, Ended: rec.Ended, Backend: rec.Backend, WorldSize: rec.WorldSize, GPUShared: rec.GPUShared}
	if rec.Host != "" {
		s.Nodes = []report.SummaryNode{{Host: rec.Host}}
	}
	return Run{Dir: dir, Summary: s, Status: rec.Status, Reason: rec.Reason, Host: rec.Host, PID: rec.PID}, true, nil
}

// caseKey is a case's key in the database: the case as JSON, every
// dimension in it, so that two runs' cases match exactly as rsag compare
// matches them.
func caseKey(c coll.Case) string {
	data, _ := json.Marshal(c)
	return string(data)
}

// parseCaseKey is the case a key names.
func parseCaseKey(key string) (coll.Case, error) {
	var c coll.Case
	err := json.Unmarshal([]byte(key), &c)
	return c, err
}
