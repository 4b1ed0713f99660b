// Package suspects is rsag suspects DIR: a finished locate run's suspects
// and, for each, whether a health check drains it (Decide), as data a
// script reads (JSON, or NUL-separated fields) or as lines a person reads,
// every character of the file's text escaped. It reads the run with the
// one reader of a run's files (runfile.Read): regular files of
// a bounded size, and run.json's word on how the run ended.
package suspects

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"rsag/internal/termsafe"
	"rsag/outdir"
	"rsag/report/runfile"
)

// Exit statuses of rsag suspects.
const (
	ExitOK       = 0 // a complete run's suspects (perhaps none) were printed
	ExitNotFound = 1 // no complete locate run to read: unreadable, failed, not ended, no locate section
	ExitUsage    = 2 // bad flags
)

const usage = `usage: rsag suspects [-format text|json|nul] [-margin M] [-max-fraction F] DIR
       (DIR is a finished locate run's output dir, with its run.json)

Prints a locate run's suspects, from DIR/summary.json, and for each whether
a health check drains it (slurm/healthcheck.sbatch does what it says). A
node is drained only when the step that named it could judge (was not
inconclusive), its figure is M times beyond that step's healthy spread
(figure < 1/(M x spread)), and no more than F of the run's nodes are: more
is the fabric, not a node, and nothing is drained. A link, a rank, an
intermittent unit and a marginal node are kept, each with why.

  -format text  one suspect a line, tab-separated: ACTION KIND NODES FIGURE WHY,
                then "verdict: VERDICT: WHY"; every control character of
                the file's text escaped (\n, \x1b), odd node names quoted
  -format json  {"verdict", "why", "nodes", "suspects": [{"action", "kind",
                "nodes", "ranks", "problem", "figure", "spread", "intermittent",
                "figure_text", "short", "why", "text"}]}
  -format nul   records of 6 fields, each ended by a NUL byte: ACTION KIND
                NODES SHORT WHY TEXT; the first record is "verdict" VERDICT
                "" "" WHY "". NODES are joined by commas

ACTION is drain or keep; VERDICT drain, suspects (none to drain), fabric,
inconclusive (nothing drained, because a step could not judge) or healthy.
SHORT is the figure in a few columns ("0.003x bw"), for a drain reason.
Only the run whose run.json says complete is read. Exit status: 0 when
printed; 1 when DIR holds no complete locate run; 2 for bad usage.
`

// options are rsag suspects' flags.
type options struct {
	format string
	rule   Rule
	dir    string
}

func parse(args []string, stderr io.Writer) (options, error) {
	o := options{rule: DefaultRule}
	fs := flag.NewFlagSet("rsag suspects", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage) }
	fs.StringVar(&o.format, "format", "text", "text, json or nul")
	fs.Float64Var(&o.rule.Margin, "margin", DefaultRule.Margin, "how many healthy spreads below the median a drained node lies")
	fs.Float64Var(&o.rule.MaxFraction, "max-fraction", DefaultRule.MaxFraction, "the largest share of nodes drained at once")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	switch {
	case fs.NArg() != 1:
		return o, fmt.Errorf("want one DIR, got %d arguments: rsag suspects [flags] DIR (flags first)", fs.NArg())
	case o.format != "text" && o.format != "json" && o.format != "nul":
		return o, fmt.Errorf("-format %q: want text, json or nul", o.format)
	case !(o.rule.Margin >= 1) || math.IsInf(o.rule.Margin, 0):
		return o, fmt.Errorf("-margin %v: want a factor of 1 or more (4: four healthy spreads below)", o.rule.Margin)
	case !(o.rule.MaxFraction > 0 && o.rule.MaxFraction < 1):
		return o, fmt.Errorf("-max-fraction %v: want a fraction above 0 and below 1 (0.25: a quarter of the nodes)", o.rule.MaxFraction)
	}
	o.dir = fs.Arg(0)
	return o, nil
}

// Command is rsag suspects with args (after "suspects"); it returns the
// exit status.
func Command(args []string, stdout, stderr io.Writer) int {
	stderr = termsafe.NewWriter(stderr)
	o, err := parse(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return ExitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "rsag suspects: %v\n", err)
		return ExitUsage
	}
	p, err := read(o)
	if err != nil {
		fmt.Fprintf(stderr, "rsag suspects: %v\n", err)
		return ExitNotFound
	}
	var b bytes.Buffer
	switch o.format {
	case "json":
		data, err := json.MarshalIndent(p, "", "  ")
		if err != nil {
			fmt.Fprintf(stderr, "rsag suspects: %v\n", err)
			return ExitNotFound
		}
		b.Write(escapeC1(data))
		b.WriteByte('\n')
	case "nul":
		writeNUL(&b, p)
	default:
		writeText(termsafe.NewWriter(&b), p)
	}
	if _, err := stdout.Write(b.Bytes()); err != nil {
		fmt.Fprintf(stderr, "rsag suspects: %v\n", err)
		return ExitNotFound
	}
	return ExitOK
}

// read reads o.dir's run and decides; only a run whose run.json says
// complete is read: a failed or unended run's findings are not whole.
func read(o options) (Plan, error) {
	in, err := runfile.Read(o.dir)
	switch {
	case err != nil:
		return Plan{}, err
	case in.RunPath == "":
		return Plan{}, fmt.Errorf("%s has no %s beside it: suspects are read only from a run's output dir, whose %s says complete "+
			"(give the dir the run wrote, not a copy of its summary)", in.Path, outdir.RunFile, outdir.RunFile)
	case !in.Complete():
		return Plan{}, fmt.Errorf("%s %s: nothing to drain from it; find why (its log, rsag report), fix that and run again",
			o.dir, in.Incomplete())
	case in.Summary.Locate == nil:
		return Plan{}, fmt.Errorf("%s has no locate section: run configs/locate.toml (locate.enabled = true)", in.Path)
	}
	return Decide(*in.Summary.Locate, len(in.Summary.Nodes), o.rule), nil
}

// nodesText is the nodes joined by commas, each as the terminal may show
// it: escaped, and quoted when it is no host name (a space, a comma).
func nodesText(nodes []string) string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n
		if !hostName.MatchString(n) {
			out[i] = strconv.Quote(n)
		}
		out[i] = termsafe.String(out[i])
	}
	return strings.Join(out, ",")
}

func writeText(w io.Writer, p Plan) {
	for _, e := range p.Entries {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", e.Action, e.Kind, nodesText(e.Nodes), e.FigureText, e.Why)
	}
	fmt.Fprintf(w, "verdict: %s: %s\n", p.Verdict, p.Why)
}

// writeNUL writes p's records. No field holds a NUL or any other control
// character: every string but the node names is escaped by Decide, and a
// node name that is no host name (a NUL, a newline, a space) is written
// escaped and quoted, as in the text format; such a node is never drained.
func writeNUL(b *bytes.Buffer, p Plan) {
	record := func(fields ...string) {
		for _, f := range fields {
			b.WriteString(f)
			b.WriteByte(0)
		}
	}
	record("verdict", p.Verdict, "", "", p.Why, "")
	for _, e := range p.Entries {
		record(e.Action, e.Kind, nodesText(e.Nodes), e.Short, e.Why, e.Text)
	}
}

// escapeC1 writes JSON's U+007F-U+009F (which encoding/json leaves raw,
// and some terminals take as ESC) as \u escapes: the same string.
func escapeC1(data []byte) []byte {
	var b bytes.Buffer
	for len(data) > 0 {
		r, n := utf8.DecodeRune(data)
		if r >= 0x7f && r <= 0x9f {
			fmt.Fprintf(&b, `\u%04x`, r)
		} else {
			b.Write(data[:n])
		}
		data = data[n:]
	}
	return b.Bytes()
}
