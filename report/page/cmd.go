package page

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"rsag/internal/atomicfile"
	"rsag/internal/termsafe"
	"rsag/outdir"
	"rsag/report"
	"rsag/report/runfile"
)

// Exit codes of rsag report.
const (
	ExitOK       = 0
	ExitFailed   = 1 // the page or the tables could not be made
	ExitBadInput = 2 // bad flags, no such run, not a summary, a page that cannot be written
)

const usage = `usage: rsag report [-html FILE [-overwrite]] DIR
       (DIR is a finished run's output dir, or its summary.json)

Writes DIR/report.html again from DIR/summary.json, and prints the run's
tables, as the run did. No MPI, no GPU. -html FILE writes the page there
instead, for a DIR you cannot write; a file already there is replaced
only when it is a page rsag wrote (or with -overwrite), never when it is
the summary.json or run.json read. Exit status: 0 when the page is
written, 2 on bad input.

`

// Command is rsag report with args (after "report"); it returns the exit
// code.
func Command(args []string, stdout, stderr io.Writer) int {
	// Every string of summary.json and run.json reaches the terminal
	// through termsafe: none of their ESC, BEL or CR is printed raw.
	stdout, stderr = termsafe.NewWriter(report.Terminal(stdout)), termsafe.NewWriter(stderr) // and the run's tables folded as the run printed them
	o, err := parseReport(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return ExitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "rsag report: %v\n", err)
		return ExitBadInput
	}
	in, err := runfile.Read(o.dir)
	if err != nil {
		fmt.Fprintf(stderr, "rsag report: %v\n", err)
		return ExitBadInput
	}
	// run.json has the last word on how the run ended: the banner and the
	// verdict line say what it says, not what a summary copied before the
	// end (or edited) claims.
	s := in.Summary
	s.Status, s.Reason = in.Status, in.Reason
	// The list of verdicts again, with run.json's status.
	s.Verdict = nil
	list := report.VerdictsOf(s)
	s.Verdict = &list
	// A run of an older rsag gets the model and the node table too.
	s = Complete(s)
	var page bytes.Buffer
	if err := Write(&page, s); err != nil {
		fmt.Fprintf(stderr, "rsag report: drawing the page of %s: %v\n", o.dir, err)
		return ExitFailed
	}
	out, fix := o.html, "choose a file in a directory you can write"
	inDir := out == ""
	if inDir {
		out = filepath.Join(dirOf(o.dir), File)
		fix = "make the directory writable, or write the page elsewhere with -html FILE"
	}
	if err := WriteBytes(out, page.Bytes(), Writing{Fix: fix, Overwrite: o.overwrite, Inputs: in.Files()}); err != nil {
		fmt.Fprintf(stderr, "rsag report: %v\n", err)
		return ExitBadInput
	}
	if inDir {
		if err := listPage(dirOf(o.dir)); err != nil {
			fmt.Fprintf(stderr, "rsag report: warning: %v\n", err)
		}
	}
	ran := report.RanIn(s)
	if err := report.WriteTables(stdout, s, ran); err != nil {
		fmt.Fprintf(stderr, "rsag report: %v\n", err)
		return ExitFailed
	}
	fmt.Fprintf(stdout, "wrote %s (%d bytes): %s\n", out, page.Len(), verdictWord(s))
	return ExitOK
}

// verdictWord is the run's verdict in a few words: "the run held", "the
// run FAILED", "the run is INCONCLUSIVE: a check could not judge", "NOT
// RUN: a phase the config enabled has no results".
func verdictWord(s report.Summary) string {
	switch v := verdictOf(s); v.Outcome {
	case report.Inconclusive:
		return "the run is INCONCLUSIVE: a check could not judge"
	case report.NotRun:
		return "NOT RUN: a phase the config enabled has no results"
	default:
		return "the run " + v.word()
	}
}

// reportOptions are rsag report's command line.
type reportOptions struct {
	dir, html string
	overwrite bool // replace a file at -html that rsag did not write
}

func parseReport(args []string, stderr io.Writer) (reportOptions, error) {
	var o reportOptions
	fs := flag.NewFlagSet("rsag report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	fs.StringVar(&o.html, "html", "", "write the page to `FILE` instead of DIR/report.html")
	fs.BoolVar(&o.overwrite, "overwrite", false, OverwriteHelp)
	var dirs []string
	for {
		if err := fs.Parse(args); err != nil {
			return o, err
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		dirs, args = append(dirs, args[0]), args[1:]
	}
	if len(dirs) != 1 {
		return o, fmt.Errorf("want one output dir, got %d (rsag report results/ch7)", len(dirs))
	}
	o.dir = dirs[0]
	return o, nil
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

// Load reads the summary of a finished run (see runfile.Read).
func Load(path string) (report.Summary, error) {
	in, err := runfile.Read(path)
	return in.Summary, err
}

// OverwriteHelp is -overwrite's help in rsag report and rsag compare.
const OverwriteHelp = "replace the file at -html even when it is not a page rsag wrote (never the command's own input)"

// Writing is how a page is written: fix says what to do when it cannot
// be; Overwrite replaces a file rsag did not write; Inputs are the files
// the command read, never replaced.
type Writing struct {
	Fix       string
	Overwrite bool
	Inputs    []string
	// What the file is, for messages ("the page" when empty), and Ours
	// whether a file there is rsag's (IsPage when nil): WriteBytes serves
	// rsag check's JUnit and metrics files under the same rule.
	What string
	Ours func(head []byte) bool
}

// IsPage reports whether head, the start of a file, is a page rsag wrote:
// its generator marker.
func IsPage(head []byte) bool { return bytes.Contains(head, []byte(pageMarker)) }

// pageMarker is in the head of every page rsag writes (page.tmpl).
const pageMarker = `<meta name="generator" content="rsag">`

// WriteBytes writes a page to path atomically, under the rule of every
// file rsag writes outside an output dir's manifest (atomicfile.Replace):
// a file already there is replaced only when it is a page rsag wrote, or
// with -overwrite, and never when it is one of the command's inputs. An
// error names the file, why it could not be written and what to do.
func WriteBytes(path string, data []byte, w Writing) error {
	what, ours := w.What, w.Ours
	if what == "" {
		what = "the page"
	}
	if ours == nil {
		ours = IsPage
	}
	st, err := os.Stat(path)
	if err == nil && st.IsDir() {
		return fmt.Errorf("cannot write %s to %s: it is a directory: give a file name, e.g. %s", what, path, filepath.Join(path, File))
	}
	if err == nil {
		for _, in := range w.Inputs {
			if ist, err := os.Stat(in); err == nil && os.SameFile(st, ist) {
				return fmt.Errorf("cannot write %s to %s: it is %s, which this command reads: give another file", what, path, in)
			}
		}
	}
	if w.Overwrite {
		ours = nil
	}
	err = atomicfile.Replace(path, data, ours)
	var exists *atomicfile.ExistsError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &exists):
		if w.Ours != nil {
			return fmt.Errorf("cannot write %s to %s: it exists and is not a file rsag wrote: give another file, or pass -overwrite to replace it", what, path)
		}
		return fmt.Errorf("cannot write the page to %s: it exists and is not a page rsag wrote: give another file, or pass -overwrite to replace it", path)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err // the temporary file's name would only confuse
	}
	return fmt.Errorf("cannot write %s to %s: %v: %s", what, path, err, w.Fix)
}
