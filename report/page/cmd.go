package page

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"rsag/internal/atomicfile"
	"rsag/internal/exitcode"
	"rsag/outdir"
	"rsag/report"
)

// Exit codes of rsag report.
const (
	ExitOK       = 0
	ExitFailed   = 1 // the page or the tables could not be made
	ExitBadInput = 2 // bad flags, no such run, not a summary, a page that cannot be written
)

const usage = `usage: rsag report [-html FILE] DIR
       (DIR is a finished run's output dir, or its summary.json)

Writes DIR/report.html again from DIR/summary.json, and prints the run's
tables, as the run did. No MPI, no GPU. -html FILE writes the page there
instead, for a DIR you cannot write. Exit status: 0 when the page is
written, 2 on bad input.

`

// Command is rsag report with args (after "report"); its error carries the
// exit status (internal/exitcode), which main alone passes to os.Exit.
func Command(args []string, stdout, stderr io.Writer) error {
	dir, out, err := parseReport(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return exitcode.New(ExitBadInput, err)
	}
	s, err := Load(dir)
	if err != nil {
		return exitcode.New(ExitBadInput, err)
	}
	// A run of an older rsag gets the model and the node table too.
	s = Complete(s)
	var page bytes.Buffer
	if err := Write(&page, s); err != nil {
		return exitcode.New(ExitFailed, fmt.Errorf("drawing the page of %s: %v", dir, err))
	}
	fix := "choose a file in a directory you can write"
	inDir := out == ""
	if inDir {
		out = filepath.Join(dirOf(dir), File)
		fix = "make the directory writable, or write the page elsewhere with -html FILE"
	}
	if err := WriteBytes(out, page.Bytes(), fix); err != nil {
		return exitcode.New(ExitBadInput, err)
	}
	if inDir {
		if err := listPage(dirOf(dir)); err != nil {
			fmt.Fprintf(stderr, "rsag report: warning: %v\n", err)
		}
	}
	ran := report.Phases{Contracts: len(s.Contracts) > 0, Timing: len(s.Timing) > 0, Memory: len(s.Memory) > 0, Numerics: len(s.Numerics) > 0}
	if err := report.WriteTables(stdout, s, ran); err != nil {
		return exitcode.New(ExitFailed, err)
	}
	fmt.Fprintf(stdout, "wrote %s (%d bytes): the run %s\n", out, page.Len(), verdictWord(s))
	return nil
}

func verdictWord(s report.Summary) string {
	if s.Status == outdir.StatusComplete && s.ChecksPassed {
		return "held"
	}
	return "FAILED"
}

func parseReport(args []string, stderr io.Writer) (dir, out string, err error) {
	fs := flag.NewFlagSet("rsag report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	fs.StringVar(&out, "html", "", "write the page to `FILE` instead of DIR/report.html")
	var dirs []string
	for {
		if err := fs.Parse(args); err != nil {
			return "", "", err
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		dirs, args = append(dirs, args[0]), args[1:]
	}
	if len(dirs) != 1 {
		return "", "", fmt.Errorf("want one output dir, got %d (rsag report results/ch7)", len(dirs))
	}
	return dirs[0], out, nil
}

// listPage makes dir's run.json list the page among the run's files, so
// that -overwrite removes it with them: a run of an older rsag wrote no
// page and listed none, and -overwrite refuses a file with rsag's name that
// run.json does not list. A dir without run.json (a summary.json copied
// alone) has nothing to list it in; a run still running is left alone.
func listPage(dir string) error {
	r, err := outdir.ReadRecord(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%v: the page is written, but -overwrite will not know it as the run's; move it away before you overwrite", err)
	}
	if r.Status == outdir.StatusRunning || slices.Contains(r.Files, File) {
		return nil
	}
	r.Files = append(r.Files, File)
	return outdir.WriteRecord(dir, r)
}

// dirOf is the output dir that path (a dir, or its summary.json) names.
func dirOf(path string) string {
	if st, err := os.Stat(path); err == nil && !st.IsDir() {
		return filepath.Dir(path)
	}
	return path
}

// Load reads the summary.json of a finished run: path is its output dir or
// the file itself. Every error names the file and says what to do.
func Load(path string) (report.Summary, error) {
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return report.Summary{}, fmt.Errorf("%s does not exist: give the output dir of a finished rsag run (the -output-dir it ran with)", path)
	case err != nil:
		return report.Summary{}, fmt.Errorf("%s: %w", path, err)
	}
	file := path
	if st.IsDir() {
		file = filepath.Join(path, report.SummaryFile)
	}
	data, err := os.ReadFile(file)
	switch {
	case errors.Is(err, fs.ErrNotExist) && st.IsDir():
		return report.Summary{}, fmt.Errorf("%s holds no %s: it is not the output dir of a finished rsag run "+
			"(a run that failed before its end writes none; its run.json says why)", path, report.SummaryFile)
	case err != nil:
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the path is named once, here
		}
		return report.Summary{}, fmt.Errorf("reading %s: %w", file, err)
	}
	s, err := report.ReadSummary(file, data)
	if err != nil {
		return report.Summary{}, fmt.Errorf("%w%s", err, readHint(data))
	}
	return s, nil
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

// WriteBytes writes a page to path atomically; an error names the file,
// why it could not be written and fix, what to do about it.
func WriteBytes(path string, data []byte, fix string) error {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return fmt.Errorf("cannot write the page to %s: it is a directory: give a file name, e.g. %s", path, filepath.Join(path, File))
	}
	err := atomicfile.Write(path, data)
	if err == nil {
		return nil
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err // the temporary file's name would only confuse
	}
	return fmt.Errorf("cannot write the page to %s: %v: %s", path, err, fix)
}
