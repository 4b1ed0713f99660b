package page

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"rsag/report"
)

// Comparison is what rsag compare found, for its page: two runs' summaries,
// the cases both have with the compared statistic of each and B/A, and the
// cases only one has.
type Comparison struct {
	PathA, PathB string
	A, B         report.Summary
	Metric       string  // median, p90 or min
	Threshold    float64 // B/A above it is slower
	Rows         []ComparedCase
	OnlyA, OnlyB []report.TimingStat
	Warnings     []string // what makes the comparison less fair: a failed run, different setups
}

// ComparedCase is one case both runs have.
type ComparedCase struct {
	Case        report.TimingStat // A's
	A, B, Ratio float64           // the statistic in µs, and B/A (0 when A is not positive)
	Over        bool              // Ratio > Threshold and beyond noise: B is slower
	// Noise: over the threshold, but B's p10..p90 overlaps A's, so the
	// runs' own spreads cannot tell them apart.
	Noise bool
}

// WriteComparison writes the comparison's page to w: a banner that says
// whether B is slower anywhere, then the common cases with the slower ones
// marked, then the cases only one run has.
func WriteComparison(w io.Writer, c Comparison) error {
	return render(w, comparisonView(c))
}

func comparisonView(c Comparison) view {
	slower := 0
	for _, r := range c.Rows {
		if r.Over {
			slower++
		}
	}
	limit := strconv.FormatFloat(c.Threshold, 'f', -1, 64)
	v := view{Verdict: verdict{Held: slower == 0}}
	if slower == 0 {
		v.Verdict.Headline = fmt.Sprintf("No case slower: every one of the %s is within %s x A (%s) in B", plural(len(c.Rows), "common case", "common cases"), limit, c.Metric)
	} else {
		v.Verdict.Headline = fmt.Sprintf("SLOWER: %d of %s slower in B than %s x A (%s)", slower, plural(len(c.Rows), "common case", "common cases"), limit, c.Metric)
	}
	v.Title = fmt.Sprintf("rsag compare: %d of %d cases slower", slower, len(c.Rows))
	v.Verdict.About = []string{"A: " + describe(c.PathA, c.A), "B: " + describe(c.PathB, c.B)}
	state := "ok"
	if slower > 0 {
		state = "bad"
	}
	v.Verdict.Checks = []check{
		{"Slower in B", fmt.Sprintf("%d of %d common cases have B/A above %s", slower, len(c.Rows), limit), state},
		{"Only in A", plural(len(c.OnlyA), "case", "cases"), "none"},
		{"Only in B", plural(len(c.OnlyB), "case", "cases"), "none"},
	}
	for _, w := range c.Warnings {
		v.Verdict.Checks = append(v.Verdict.Checks, check{"Warning", w, "none"})
	}
	common := section{ID: "common", Title: "Cases both runs have",
		How: fmt.Sprintf("The %s time per operation of each case in A and in B, and B/A: above %s the case is marked slower, unless B's p10..p90 overlaps A's (within noise). "+
			"A click on a column's heading sorts by it (B/A: the worst last, or first).", c.Metric, limit)}
	if len(c.Rows) == 0 {
		common.Empty = "No case in common."
	} else {
		stats := make([]report.TimingStat, len(c.Rows))
		for i, r := range c.Rows {
			stats[i] = r.Case
		}
		dims, fixed := splitDims(stats)
		t := &table{Sortable: true, Caption: joinDot(append(fixed, c.Metric+", µs per operation")),
			Head: append(dimHeadsOf(dims), heads("size", "mode", "A µs", "B µs", "B/A", "> "+limit)...)}
		for _, r := range c.Rows {
			rw := row{Cells: append(dimCellsOf(dims, r.Case), size(r.Case.SizeBytes), plain(modeLabel(text(r.Case.Mode))),
				num("%.2f", r.A), num("%.2f", r.B))}
			if r.A > 0 {
				rw.Cells = append(rw.Cells, num("%.3f", r.Ratio))
			} else {
				rw.Cells = append(rw.Cells, plain("n/a"))
			}
			switch {
			case r.Over:
				rw.Class = "bad"
				rw.Cells = append(rw.Cells, cell{Text: "✗ SLOWER", Class: "bad"})
			case r.Noise:
				rw.Cells = append(rw.Cells, plain("within noise"))
			default:
				rw.Cells = append(rw.Cells, plain(""))
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
