package outdir

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"rsag/internal/atomicfile"
	"rsag/internal/cadence"
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
// a "running" run.json dead. Both are internal/cadence's, which a test
// build shortens.
const (
	HeartbeatEvery = cadence.HeartbeatEvery
	StaleAfter     = cadence.StaleAfter
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
	// Stuck are the ranks named early as holding a collective up (stuck.go),
	// written as soon as known, while the run still runs.
	Stuck []Stuck `json:"stuck,omitempty"`
	// GPUShared says that ranks shared a GPU (coll.SharedGPUNote), and
	// what that means for the timings; absent when none did.
	GPUShared string `json:"gpu_shared,omitempty"`
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
// place). A "failed" record that cannot be written so for want of space
// (ENOSPC, EDQUOT: no room, or no inode, for the temporary) is written
// over the run.json there instead, in the room it already has: a run that
// failed because its disk filled must still say so.
func WriteRecord(dir string, r Record) error {
	data, err := encodeRecord(r)
	path := filepath.Join(dir, RunFile)
	if err == nil {
		err = atomicfile.Write(path, data)
	}
	if err != nil && r.Status == StatusFailed && (errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EDQUOT)) {
		ierr := rewriteInPlace(dir, r)
		if ierr == nil {
			return nil
		}
		err = fmt.Errorf("%w; and over the old one: %v", err, ierr)
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

func encodeRecord(r Record) ([]byte, error) {
	if r.Files == nil {
		r.Files = []string{}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	err := enc.Encode(r)
	return b.Bytes(), err
}

// rewriteInPlace writes r over run.json without allocating: within the
// blocks the file already has, with the reason clipped to fit. It is not
// atomic (a reader at that moment may see it half written); it is the
// last resort of a run that can write nothing else.
func rewriteInPlace(dir string, r Record) error {
	f, err := atomicfile.OpenIn(dir, RunFile, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	room := st.Size()
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		room = max(room, sys.Blocks*512)
	}
	data, err := encodeRecord(r)
	if err != nil {
		return err
	}
	// Clipped until it fits: JSON's escapes make a byte of the reason
	// cost up to six in the file.
	const mark = " ... (clipped: the disk is full)"
	for over := int64(len(data)) - room; over > 0; over = int64(len(data)) - room {
		reason := strings.TrimSuffix(r.Reason, mark)
		keep := int64(len(reason)) - over - int64(len(mark))
		if keep < 0 {
			return fmt.Errorf("no room in it for a failed record (%d bytes over)", over)
		}
		r.Reason = strings.ToValidUTF8(reason[:keep], "") + mark
		if data, err = encodeRecord(r); err != nil {
			return err
		}
	}
	if _, err := f.WriteAt(data, 0); err != nil {
		return err
	}
	return f.Truncate(int64(len(data)))
}

// Pending is run.json's final record written in full to its temporary,
// not yet in place (atomicfile.Prepared): once it is, only a rename, which
// needs no space, is left to make it final.
type Pending = atomicfile.Prepared

// PrepareRecord writes r to run.json's temporary, for Commit or Abort.
func PrepareRecord(dir string, r Record) (*Pending, error) {
	data, err := encodeRecord(r)
	path := filepath.Join(dir, RunFile)
	if err == nil {
		var p *Pending
		if p, err = atomicfile.Prepare(path, data); err == nil {
			return p, nil
		}
	}
	return nil, fmt.Errorf("writing %s: %w", path, err)
}

// maxRecordBytes bounds a run.json read back: it lists a run's files.
const maxRecordBytes = 16 << 20

// ReadRecord reads run.json, never through a link (atomicfile.ReadIn).
func ReadRecord(dir string) (Record, error) {
	var r Record
	data, err := atomicfile.ReadIn(dir, RunFile, maxRecordBytes)
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return r, fmt.Errorf("%s: %w", filepath.Join(dir, RunFile), err)
	}
	return r, nil
}
