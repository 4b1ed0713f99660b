package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"time"
)

// RunFile is rank 0's record of the run in the output directory. It says
// "running" from the moment the run starts writing there, and "complete"
// only after every file is written and every check passed; a run that fails
// says "failed" with the reason. A directory whose run.json does not say
// "complete" holds no results to trust.
//
// While the run is live, its writer (rank 0, Host and PID) rewrites
// Heartbeat every HeartbeatEvery. A run.json that says "running" with a
// heartbeat older than StaleAfter was left by a writer that died without a
// word (SIGKILL, the OOM killer, a lost node): see Stale.
const RunFile = "run.json"

// Run statuses.
const (
	StatusRunning  = "running"
	StatusComplete = "complete"
	StatusFailed   = "failed"
)

// HeartbeatEvery is how often a live run rewrites run.json's heartbeat;
// StaleAfter, six missed beats, is how long a reader waits before it calls
// a "running" run.json dead.
const (
	HeartbeatEvery = 5 * time.Second
	StaleAfter     = 30 * time.Second
)

// Run is run.json's content.
type Run struct {
	Status    string `json:"status"`
	Reason    string `json:"reason,omitempty"`
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	Backend   string `json:"backend"`
	WorldSize int    `json:"world_size"`
	Config    string `json:"config"`
	Host      string `json:"host"`            // the writer's: rank 0's host
	PID       int    `json:"pid"`             // the writer's process id on Host
	Started   string `json:"started"`         // RFC 3339, UTC
	Heartbeat string `json:"heartbeat"`       // RFC 3339, UTC: the writer was alive then
	Ended     string `json:"ended,omitempty"` // RFC 3339, UTC; once complete or failed
	// Files is every file the run writes in the directory, relative to it:
	// run.json first, then each file before it is written (so a run killed
	// half way lists what it may have left). Once complete, every one
	// exists. A listed file's temporaries (".NAME.tmp*", see TempFor) are
	// the run's too. -overwrite removes exactly these and nothing else.
	Files []string `json:"files"`
}

// Stale reports whether r says "running" although its writer has stopped
// beating: no heartbeat for StaleAfter before now (or none readable). A
// stale run died without marking itself; its files are not to be trusted.
func Stale(r Run, now time.Time) bool {
	if r.Status != StatusRunning {
		return false
	}
	beat, err := time.Parse(time.RFC3339, r.Heartbeat)
	return err != nil || now.Sub(beat) > StaleAfter
}

// WriteRun writes run.json atomically (a temporary file renamed into place).
func WriteRun(dir string, r Run) error {
	if r.Files == nil {
		r.Files = []string{}
	}
	return writeFile(filepath.Join(dir, RunFile), func(b *bytes.Buffer) error {
		enc := json.NewEncoder(b)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	})
}

// ReadRun reads run.json.
func ReadRun(dir string) (Run, error) {
	var r Run
	data, err := os.ReadFile(filepath.Join(dir, RunFile))
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return r, fmt.Errorf("%s: %w", filepath.Join(dir, RunFile), err)
	}
	return r, nil
}

// resultNames matches the files rsag writes; tempFileRE the temporary
// files it writes them through (internal/atomicfile: ".NAME.tmpDIGITS").
// Nothing else in a directory can be rsag's.
const resultNames = `(run\.json|summary\.json|(contracts|timings|memory|numerics)\.csv|rank[0-9]+_(contracts|timings|memory)\.csv|` +
	`((time_vs_size|busbw_vs_size|ratio_vs_size|crossover_vs_size)(_[A-Za-z0-9._-]+)?|memory_by_mode)\.(png|svg)|report\.html)`

var resultFileRE = regexp.MustCompile(`^` + resultNames + `$`)
var tempFileRE = regexp.MustCompile(`^\.(` + resultNames + `)\.tmp[0-9]*$`)

// IsResultFile reports whether name (a base name) is a file rsag writes.
func IsResultFile(name string) bool { return resultFileRE.MatchString(name) }

// TempFor returns the result file that name (a base name) is a temporary
// file of, if it is one.
func TempFor(name string) (string, bool) {
	m := tempFileRE.FindStringSubmatch(name)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// ResultFiles names the files a run of world ranks writes for the phases
// that ran: every rank's files, then the combined ones.
func ResultFiles(world int, ran Phases) []string {
	var kinds []string
	for _, k := range []struct {
		on   bool
		name string
	}{{ran.Contracts, "contracts"}, {ran.Timing, "timings"}, {ran.Memory, "memory"}} {
		if k.on {
			kinds = append(kinds, k.name)
		}
	}
	var files []string
	for r := 0; r < world; r++ {
		for _, k := range kinds {
			files = append(files, fmt.Sprintf("rank%d_%s.csv", r, k))
		}
	}
	for _, k := range kinds {
		files = append(files, k+".csv")
	}
	if ran.Numerics {
		files = append(files, "numerics.csv")
	}
	return files
}
