package compare

import "rsag/report"

// Run is a finished run as rsag compare reads it, for the commands that
// read runs too (rsag history, rsag check): its summary, and how it ended
// by its run.json, or without one by its summary.
type Run struct {
	Path    string // the summary.json read
	Summary report.Summary
	Status  string // outdir.StatusComplete, or how it did not complete
	Reason  string
}

// Load reads a summary.json, or the one in an output dir, and the run.json
// beside it, as rsag compare does: bounded regular files, a run.json of
// another run refused, a case listed twice or out of order refused.
func Load(path string) (Run, error) {
	in, err := load(path)
	return Run{Path: in.path, Summary: in.summary, Status: in.status, Reason: in.reason}, err
}

// ReadBounded reads an input file of at most limit bytes, with rsag
// compare's errors (not a regular file, too large).
func ReadBounded(path string, limit int64) ([]byte, error) { return read(path, limit) }
