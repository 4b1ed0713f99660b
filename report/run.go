package report

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
)

// RunFile is rank 0's record of the run in the output directory. It says
// "running" from the moment the run starts writing there, and "complete"
// only after every file is written and every check passed; a run that fails
// says "failed" with the reason. A directory whose run.json does not say
// "complete" holds no results to trust.
const RunFile = "run.json"

// Run statuses.
const (
	StatusRunning  = "running"
	StatusComplete = "complete"
	StatusFailed   = "failed"
)

// Run is run.json's content.
type Run struct {
	Status    string   `json:"status"`
	Reason    string   `json:"reason,omitempty"`
	Version   string   `json:"version"`
	Commit    string   `json:"commit"`
	Backend   string   `json:"backend"`
	WorldSize int      `json:"world_size"`
	Config    string   `json:"config"`
	Started   string   `json:"started"`         // RFC 3339, UTC
	Ended     string   `json:"ended,omitempty"` // RFC 3339, UTC; once complete or failed
	Files     []string `json:"files"`           // result files written, relative to the directory
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

// resultFileRE matches the files rsag writes, and the temporary files it
// writes them through: nothing else in a directory is rsag's to remove.
const resultNames = `(run\.json|summary\.json|(contracts|timings|memory|numerics)\.csv|rank[0-9]+_(contracts|timings|memory)\.csv|` +
	`((time_vs_size|busbw_vs_size|ratio_vs_size|crossover_vs_size)(_[A-Za-z0-9._-]+)?|memory_by_mode)\.(png|svg))`

var resultFileRE = regexp.MustCompile(`^` + resultNames + `$`)
var tempFileRE = regexp.MustCompile(`^\.` + resultNames + `\.tmp[0-9]*$`)

func b0(b bool) int {
	if b {
		return 1
	}
	return 0
}

// IsResultFile reports whether name (a base name) is a file rsag writes.
func IsResultFile(name string) bool { return resultFileRE.MatchString(name) }

// FindResults lists the result files an earlier run left in dir (none when
// dir does not exist).
func FindResults(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var found []string
	for _, e := range entries {
		if e.Type().IsRegular() && IsResultFile(e.Name()) {
			found = append(found, e.Name())
		}
	}
	// run.json first: it says what the earlier run was.
	slices.SortStableFunc(found, func(a, b string) int {
		return cmp.Compare(b0(a != RunFile), b0(b != RunFile))
	})
	return found, nil
}

// RemoveResults removes the result files (and leftover temporary files) an
// earlier run left in dir, and nothing else.
func RemoveResults(dir string) error {
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !e.Type().IsRegular() || !(IsResultFile(e.Name()) || tempFileRE.MatchString(e.Name())) {
			continue
		}
		// Ranks sharing a directory remove the same files: one that is
		// already gone is not an error.
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	return nil
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
