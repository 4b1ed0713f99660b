// Package page writes report.html: one self-contained page per run that a
// person opens, on a cluster's shared file system or an air-gapped laptop,
// to learn whether AllReduce == ReduceScatter + AllGather held, what the
// decomposition costs, and what to do. Like the tables, CSVs, summary.json
// and figures, it is a separate writer over the same Summary, so that
// `rsag report DIR` writes the same page again from summary.json alone.
//
// The page is one file: its style, its figures (inline SVG) and a few lines
// of script (sortable tables, which are plain tables without it) are in
// it, and its Content-Security-Policy lets it fetch nothing, not a font, a
// style or an image. It starts with a verdict banner (every check, the busbw
// gate, the model's headline and the numerics), then one section per
// subject, each with a sentence on how to read it: contracts, timing,
// model and crossover, where the decomposition's time goes, memory,
// numerics, nodes, the fastest configuration and the environment. Every
// section is always there; one whose phase did not run says why.
package page

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"rsag/coll"
	"rsag/internal/atomicfile"
	"rsag/report"
	"rsag/report/plot"
)

// File is the page's name in a run's output directory.
const File = "report.html"

var (
	//go:embed page.css
	css string
	//go:embed sort.js
	script string
	//go:embed page.tmpl
	pageTemplate string
)

var tmpl = template.Must(template.New("page").Parse(pageTemplate))

// The page registers itself as one of a run's last outputs, written from
// the summary once the run's status is known, in the step that makes
// run.json final: its verdict must not outlive a run.json that says
// otherwise (report.Last).
func init() {
	report.Register(report.Output{Stage: report.Last, Patterns: []string{File},
		Plan: func(in report.Input) ([]string, func(string) error) {
			return []string{File}, func(dir string) error { return WriteFile(filepath.Join(dir, File), *in.Summary) }
		}})
}

// Write writes the page of a run's summary to w.
func Write(w io.Writer, s report.Summary) error {
	v, err := runView(s)
	if err != nil {
		return err
	}
	return render(w, v)
}

// WriteFile writes the page of s to path atomically (a temporary file
// renamed into place), readable by everyone like the other results.
func WriteFile(path string, s report.Summary) error {
	var b bytes.Buffer
	if err := Write(&b, s); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := atomicfile.Write(path, b.Bytes()); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// view is what the template shows: the banner, then the sections.
type view struct {
	Title      string
	CSS        template.CSS
	Script     template.JS
	ScriptHash string // the script's CSP hash, so that nothing else may run
	Verdict    verdict
	Sections   []section
	Footer     string
}

// verdict is the banner: the answer first, then every check behind it.
type verdict struct {
	// Outcome is the run's list of verdicts' (report.Verdicts); Held
	// is whether it held.
	Outcome  report.Outcome
	Held     bool
	Headline string   // the h1
	About    []string // what ran, where, when
	Reason   string   // why the run failed, from run.json's reason
	Checks   []check
	Findings []string // the model's headline, the numerics
	// Suspects are the nodes, links and ranks that the locate and soak
	// phases name, one phrase each, for the banner (suspectsOf).
	Suspects []string
}

// check is one line of the banner: ok, bad, or none (did not run).
type check struct {
	Name, Text, State string
}

// section is one part of the page: a heading, how to read it, and its
// blocks; Empty says why there is nothing when there is nothing.
type section struct {
	ID, Title, How, Empty string
	Blocks                []block
}

// block is a sub-heading, a table, a figure, notes or preformatted text,
// any of them; they are shown in that order.
type block struct {
	Heading string
	Notes   []string
	Table   *table
	Figure  *figure
	Pre     string
}

// table is a table of text cells; a sortable one sorts by a column when
// its heading is clicked, by each cell's Sort key when it has one.
type table struct {
	Caption  string
	Head     []headCell
	Rows     []row
	Sortable bool
}

// tallRows is how many rows a table shows before it scrolls within the
// page, its heading kept in view; printed, it is shown whole.
const tallRows = 30

// Tall says whether the table scrolls within the page.
func (t *table) Tall() bool { return len(t.Rows) > tallRows }

type headCell struct {
	Text, Class string
}

type row struct {
	Class string
	Cells []cell
}

type cell struct {
	Text, Sort, Class string
	HTML              template.HTML // drawn instead of Text when set: a strip of the row's distribution
}

type figure struct {
	ID, Caption, File string
	SVG               template.HTML
}

func render(w io.Writer, v view) error {
	v.CSS = template.CSS(css + modeCSS() + distCSS())
	v.Script = template.JS(script)
	sum := sha256.Sum256([]byte(script))
	v.ScriptHash = "sha256-" + base64.StdEncoding.EncodeToString(sum[:])
	return tmpl.Execute(w, v)
}

// modeCSS gives each timed mode's column heading its colour in the
// figures, so that a table and a figure are read alike.
func modeCSS() string {
	var b strings.Builder
	for _, m := range coll.Modes {
		fmt.Fprintf(&b, "th.m-%s{border-bottom:.3em solid %s}\ntd.m-%s{border-left:.3em solid %s}\n", m, plot.ModeColour(string(m)),
			m, plot.ModeColour(string(m)))
	}
	return b.String()
}

// figuresOf draws the summary's figures for the page, by kind and run.
func figuresOf(s report.Summary) (map[string][]plot.Inline, error) {
	figs, err := plot.FiguresOf(s).Inline()
	if err != nil {
		return nil, err
	}
	byKind := map[string][]plot.Inline{}
	for _, f := range figs {
		byKind[f.Kind] = append(byKind[f.Kind], f)
	}
	return byKind, nil
}

func figureBlock(f plot.Inline) block {
	return block{Figure: &figure{ID: "fig-" + f.Name, Caption: f.Title, File: f.Name + ".svg", SVG: template.HTML(f.SVG)}}
}

// figuresFor are the blocks of the figures of one kind for one run.
func figuresFor(figs map[string][]plot.Inline, kind, run string) []block {
	var out []block
	for _, f := range figs[kind] {
		if f.Run == run {
			out = append(out, figureBlock(f))
		}
	}
	return out
}

// text turns a value into its text: a string, or a named type with a
// String method, so that the page reads the summary's fields alike
// whether they are strings or typed names.
func text(v any) string { return fmt.Sprint(v) }

func num(format string, v float64) cell {
	return cell{Text: fmt.Sprintf(format, v), Sort: sortKey(v), Class: "n"}
}

// sortKey is a number's sort key, to six digits: a sweep's table has
// thousands of them.
func sortKey(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }

// us is a time in microseconds as the terminal writes it (report.USText).
func us(v float64) cell { return cell{Text: report.USText(v), Sort: sortKey(v), Class: "n"} }

// bytesCell is a count of bytes in binary units (268435456: 256 MiB),
// sorted by the count.
func bytesCell(b int64) cell { return cell{Text: report.BytesText(b), Sort: fmt.Sprint(b), Class: "n"} }

func size(b int64) cell {
	return cell{Text: report.SizeText(b), Sort: fmt.Sprint(b), Class: "n"}
}

func plain(s string) cell { return cell{Text: s} }

// wrap is a cell of prose, which may wrap; the others keep to one line.
func wrap(s string) cell { return cell{Text: s, Class: "wrap"} }

func yesNo(ok bool) cell {
	if ok {
		return cell{Text: "yes", Class: "ok"}
	}
	return cell{Text: "NO", Class: "bad"}
}

func heads(names ...string) []headCell {
	out := make([]headCell, len(names))
	for i, n := range names {
		out[i] = headCell{Text: n}
	}
	return out
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// listText writes ranks as "0-3, 6, 8": runs of three or more as ranges.
func listText(v []int) string { return report.ListText(v, ", ") }

// plural is "1 case" or "3 cases".
func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

func unique[T any](v []T, key func(T) string) []string {
	var out []string
	for _, x := range v {
		if k := key(x); !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}
