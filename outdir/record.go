package outdir

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"rsag/internal/atomicfile"
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

// Record is run.json's content: the output dir's contract with its
// readers.
type Record struct {
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
	// exists. A listed file's temporaries (atomicfile.TargetOf) are the
	// run's too. -overwrite removes exactly these and nothing else.
	Files []string `json:"files"`
	// Suspects are the locate phase's suspects, one line each ("node3
	// (bandwidth 0.31x median)"); absent when it found none or did not run.
	Suspects []string `json:"suspects,omitempty"`
}

// Stale reports whether r says "running" although its writer has stopped
// beating: no heartbeat for StaleAfter before now (or none readable). A
// stale run died without marking itself; its files are not to be trusted.
func Stale(r Record, now time.Time) bool {
	if r.Status != StatusRunning {
		return false
	}
	beat, err := time.Parse(time.RFC3339, r.Heartbeat)
	return err != nil || now.Sub(beat) > StaleAfter
}

// WriteRecord writes run.json atomically (a temporary file renamed into
// place).
func WriteRecord(dir string, r Record) error {
	if r.Files == nil {
		r.Files = []string{}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	path := filepath.Join(dir, RunFile)
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := atomicfile.Write(path, b.Bytes()); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// ReadRecord reads run.json.
func ReadRecord(dir string) (Record, error) {
	var r Record
	data, err := os.ReadFile(filepath.Join(dir, RunFile))
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return r, fmt.Errorf("%s: %w", filepath.Join(dir, RunFile), err)
	}
	return r, nil
}
