// Package runfile is the one reader of a finished run's files, which rsag
// report, rsag compare and rsag check (through history), rsag history and
// rsag suspects share: summary.json, checked, and the run.json beside it,
// regular files of a bounded size only.
package runfile

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"rsag/internal/regularfile"
	"rsag/outdir"
	"rsag/report"
)

// MaxSummaryBytes caps a summary.json read back: a summary of 64 runs of
// 64 sizes in every dtype, op and mode is a few tens of megabytes, so
// anything larger is not one (/dev/zero, a core file), refused before it
// is read.
const MaxSummaryBytes = 256 << 20

// maxRunBytes caps the run.json beside a summary: it lists the run's files.
const maxRunBytes = 16 << 20

// Input is a finished run read back: its
// summary, checked (report.CheckSummary), and how the run ended as its
// run.json says when there is one beside the summary (summary.json is
// never trusted over run.json), else as the summary says.
type Input struct {
	Path    string // the summary.json
	RunPath string // the run.json beside it, "" when there is none
	Summary report.Summary
	Status  string
	Reason  string
	From    string // the file Status was read from
}

// Files are the files Read read: never to be written over.
func (in Input) Files() []string {
	if in.RunPath == "" {
		return []string{in.Path}
	}
	return []string{in.Path, in.RunPath}
}

// Complete says whether the run completed, as its run.json says.
func (in Input) Complete() bool { return in.Status == outdir.StatusComplete }

// Incomplete says how a run that did not complete ended, for messages.
func (in Input) Incomplete() string {
	msg := fmt.Sprintf("(%s) is from a run that did not complete: its %s says %q", in.Path, filepath.Base(in.From), in.Status)
	if in.Reason != "" {
		msg += " (" + in.Reason + ")"
	}
	return msg
}

// Read reads a run back: path is its output dir or its summary.json. It is
// the one reader of every command that reads a run: regular files only, of a
// bounded size (a FIFO cannot block it, /dev/zero cannot fill memory), a
// summary whose numbers are checked, and the run.json beside it. Every
// error names the file and says what to do.
func Read(path string) (Input, error) {
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Input{}, fmt.Errorf("%s does not exist: give the output dir of a finished rsag run (the -output-dir it ran with), or its summary.json", path)
	case err != nil:
		return Input{}, fmt.Errorf("%s: %w", path, err)
	}
	file := path
	if st.IsDir() {
		file = filepath.Join(path, report.SummaryFile)
	}
	in := Input{Path: file, From: file}
	data, err := ReadBounded(file, MaxSummaryBytes)
	switch {
	case errors.Is(err, fs.ErrNotExist) && st.IsDir():
		return in, fmt.Errorf("%s holds no %s: it is not the output dir of a finished rsag run "+
			"(a run that failed before its end writes none; its run.json says why)", path, report.SummaryFile)
	case err != nil:
		return in, err
	}
	if in.Summary, err = report.ReadSummary(file, data); err != nil {
		return in, fmt.Errorf("%w%s", err, readHint(data))
	}
	if err := report.CheckSummary(file, in.Summary); err != nil {
		return in, err
	}
	in.Status, in.Reason = in.Summary.Status, in.Summary.Reason
	runPath := filepath.Join(filepath.Dir(file), outdir.RunFile)
	data, err = ReadBounded(runPath, maxRunBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return in, nil // a summary copied on its own: its own status is all there is
	}
	if err != nil {
		return in, err
	}
	in.RunPath = runPath
	// Only what is needed of run.json: which run it is and how it ended.
	var run struct {
		Status  string `json:"status"`
		Reason  string `json:"reason"`
		Started string `json:"started"`
	}
	if err := json.Unmarshal(data, &run); err != nil || run.Status == "" {
		return in, fmt.Errorf("%s, beside %s, is not an rsag run.json (%v): move it away, or read a copy of the summary on its own", runPath, file, err)
	}
	if run.Started != in.Summary.Started {
		return in, fmt.Errorf("%s (started %s) is another run's than %s (started %s) beside it: its results were replaced; give a directory one run wrote",
			runPath, run.Started, file, in.Summary.Started)
	}
	// The worse of the two counts, and run.json's word first: a run is
	// complete only once run.json says so.
	if run.Status != outdir.StatusComplete || in.Status == outdir.StatusComplete {
		in.Status, in.Reason, in.From = run.Status, run.Reason, runPath
	}
	return in, nil
}

// ReadBounded reads an input file of at most limit bytes (a regular file,
// a size cap), as summary.json and run.json are read; errors name it.
func ReadBounded(path string, limit int64) ([]byte, error) {
	data, err := regularfile.Read(path, limit)
	var kind *regularfile.KindError
	var size *regularfile.SizeError
	switch {
	case errors.As(err, &kind):
		return nil, fmt.Errorf("reading %s: it is %s, not a file rsag wrote", path, kind.Kind)
	case errors.As(err, &size):
		return nil, fmt.Errorf("reading %s: it is larger than rsag's cap of %d MiB for it: is it rsag's?", path, limit>>20)
	case err != nil:
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the path is named once, here
		}
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return data, nil
}

// readHint says how to read a summary this rsag cannot: with the rsag that
// wrote it, when the file names one.
func readHint(data []byte) string {
	var head struct {
		RSAG *struct{ Version, Commit string } `json:"rsag"`
	}
	if json.Unmarshal(data, &head) != nil || head.RSAG == nil {
		return ": give the summary.json of an rsag run"
	}
	return fmt.Sprintf(": read it with the rsag that wrote it (rsag %s, commit %s)", head.RSAG.Version, head.RSAG.Commit)
}
