package page

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"rsag/report"
)

// Comparison is what rsag compare found, for its page: two runs' summaries,
// the cases both have with the compared statistics of each and B/A, and
// the cases only one has. What each case's verdict is, compare decides;
// the page only shows it.
type Comparison struct {
	PathA, PathB string
	A, B         report.Summary
	Metric       string   // the metrics, "median" or "median, p99"
	Metrics      []string // each one, in the order of each row's A, B and Ratio
	Threshold    float64  // B/A above it is slower, beyond the spread
	Rows         []ComparedCase
	OnlyA, OnlyB []report.TimingStat
	Warnings     []string // what makes the comparison less fair: a failed run, different setups
	// Verdict is compare's closing line, which counts every row by its
	// verdict; Large points out each case beyond the threshold either way.
	Verdict                             string
	Large                               []string
	Slower, Inconclusive, Noise, Faster int
}

// ComparedCase is one case both runs have.
type ComparedCase struct {
	Case        report.TimingStat // A's
	A, B, Ratio []float64         // each metric in µs, and B/A
	Mark        string            // the verdict in words: "SLOWER", "within noise", "inconclusive: ..."
	Slower      bool              // beyond the threshold and A's spread
	// Inconclusive: above the threshold, with too few samples to judge.
	Inconclusive bool
}

// WriteComparison writes the comparison's page to w: a banner that says
// whether B is slower anywhere and counts every row by its verdict, the
// large changes both ways, then the common cases with their verdicts,
// then the cases only one run has.
func WriteComparison(w io.Writer, c Comparison) error {
	return render(w, comparisonView(c))
}

func comparisonView(c Comparison) view {
	limit := strconv.FormatFloat(c.Threshold, 'f', -1, 64)
	n := len(c.Rows)
	v := view{Verdict: verdict{Held: c.Slower == 0 && c.Inconclusive == 0}}
	cases := plural(n, "common case", "common cases")
	switch {
	case c.Slower > 0:
		v.Verdict.Headline = fmt.Sprintf("SLOWER: %d of %s slower in B than %s x A (%s), beyond A's spread", c.Slower, cases, limit, c.Metric)
	case c.Inconclusive > 0:
		v.Verdict.Headline = fmt.Sprintf("INCONCLUSIVE: %d of %s above %s x A (%s) with too few samples to judge; none slower beyond A's spread",
			c.Inconclusive, cases, limit, c.Metric)
	case c.Noise > 0 || c.Faster > 0:
		v.Verdict.Headline = fmt.Sprintf("No case slower beyond A's spread: of the %s, %d beyond %s x A (%s) either way are within noise, %d faster",
			cases, c.Noise, limit, c.Metric, c.Faster)
	default:
		v.Verdict.Headline = fmt.Sprintf("No case slower: every one of the %s is within %s x A (%s) in B", cases, limit, c.Metric)
	}
	v.Title = fmt.Sprintf("rsag compare: %d of %d cases slower", c.Slower, n)
	v.Verdict.About = []string{"A: " + describe(c.PathA, c.A), "B: " + describe(c.PathB, c.B)}
	state := func(bad bool) string {
		if bad {
			return "bad"
		}
		return "ok"
	}
	v.Verdict.Checks = []check{
		{"Slower in B", fmt.Sprintf("%d of %d common cases have B/A above %s beyond A's spread", c.Slower, n, limit), state(c.Slower > 0)},
		{"Inconclusive", fmt.Sprintf("%d of %d above %s with too few samples to judge", c.Inconclusive, n, limit), state(c.Inconclusive > 0)},
		{"Within noise", fmt.Sprintf("%d of %d beyond %s x A either way, within A's spread", c.Noise, n, limit), "none"},
		{"Faster in B", fmt.Sprintf("%d of %d below 1/%s x A beyond A's spread", c.Faster, n, limit), "none"},
		{"Only in A", plural(len(c.OnlyA), "case", "cases"), "none"},
		{"Only in B", plural(len(c.OnlyB), "case", "cases"), "none"},
	}
	for _, w := range c.Warnings {
		v.Verdict.Checks = append(v.Verdict.Checks, check{"Warning", w, "none"})
	}
	v.Verdict.Findings = c.Large
	common := section{ID: "common", Title: "Cases both runs have",
		How: fmt.Sprintf("The %s time per operation of each case in A and in B, and B/A. Above %s a case is slower only when B's statistic lies beyond A's own spread "+
			"(the median above A's p90, p90 above A's p99, p99 above A's max) or every sample of B is slower than every sample of A; otherwise it is within noise, "+
			"and inconclusive when there are too few samples to place the spread. Below 1/%s the same rule calls it faster. "+
			"A click on a column's heading sorts by it (B/A: the worst last, or first).", c.Metric, limit, limit)}
	if n == 0 {
		common.Empty = "No case in common."
	} else {
		stats := make([]report.TimingStat, n)
		for i, r := range c.Rows {
			stats[i] = r.Case
		}
		dims, fixed := splitDims(stats)
		head := append(dimHeadsOf(dims), heads("size", "mode")...)
		for _, m := range c.Metrics {
			if len(c.Metrics) == 1 {
				head = append(head, heads("A µs", "B µs", "B/A")...)
			} else {
				head = append(head, heads("A "+m+" µs", "B "+m+" µs", "B/A "+m)...)
			}
		}
		t := &table{Sortable: true, Caption: joinDot(append(fixed, c.Metric+", µs per operation")), Head: append(head, heads("> "+limit)...)}
		for _, r := range c.Rows {
			rw := row{Cells: append(dimCellsOf(dims, r.Case), size(r.Case.SizeBytes), plain(modeLabel(text(r.Case.Mode))))}
			for i := range r.A {
				rw.Cells = append(rw.Cells, num("%.2f", r.A[i]), num("%.2f", r.B[i]), num("%.3f", r.Ratio[i]))
			}
			switch {
			case r.Slower:
				rw.Class = "bad"
				rw.Cells = append(rw.Cells, cell{Text: "✗ " + r.Mark, Class: "bad"})
			default:
				rw.Cells = append(rw.Cells, plain(r.Mark))
			}
			t.Rows = append(t.Rows, rw)
		}
		common.Blocks = []block{{Table: t}}
	}
	v.Sections = []section{common, onlySection("only-a", "Only in A", c.PathA, c.OnlyA), onlySection("only-b", "Only in B", c.PathB, c.OnlyB)}
	v.Footer = "Written by rsag compare from two runs' summary.json."
	return v
}

func onlySection(id, title, path string, stats []report.TimingStat) section {
	sec := section{ID: id, Title: title, How: "Cases that " + path + " has and the other run has not: they are not compared."}
	if len(stats) == 0 {
		sec.Empty = "None."
		return sec
	}
	dims, fixed := splitDims(stats)
	t := &table{Sortable: true, Caption: joinDot(fixed), Head: append(dimHeadsOf(dims), heads("size", "mode", "median µs")...)}
	for _, s := range stats {
		t.Rows = append(t.Rows, row{Cells: append(dimCellsOf(dims, s), size(s.SizeBytes), plain(modeLabel(text(s.Mode))), num("%.2f", s.MedianUS))})
	}
	sec.Blocks = []block{{Table: t}}
	return sec
}

func describe(path string, s report.Summary) string {
	return fmt.Sprintf("%s (rsag %s, commit %s; %s on %s; %s)", path, s.RSAG.Version, s.RSAG.Commit, s.Backend,
		plural(s.WorldSize, "rank", "ranks"), whenText(s.Started, s.Ended))
}

func dimHeadsOf(dims []dim) []headCell {
	var out []headCell
	for _, d := range dims {
		out = append(out, headCell{Text: d.Name})
	}
	return out
}

func dimCellsOf(dims []dim, s report.TimingStat) []cell {
	var out []cell
	for _, d := range dims {
		out = append(out, plain(orDash(d.Text(s.Case))))
	}
	return out
}

func joinDot(parts []string) string { return strings.Join(parts, " · ") }
