package page

import (
	"fmt"
	"html/template"
	"io"
	"strings"

	"rsag/report"
	"rsag/report/plot"
)

// Against is the judge's finding (rsag check, rsag compare), for the run's
// page: each case against the baseline with the interval on the ratio.
type Against struct {
	Baseline  string  // what the baseline is, in words
	Tolerance float64 // 0.05
	Level     float64 // 0.95
	Verdict   string  // the closing line
	Slower    int
	Cases     []AgainstCase
}

// AgainstCase is one case against the baseline.
type AgainstCase struct {
	Case                 report.TimingStat // its case and sample count
	BaseUS, RunUS, Ratio float64
	Lo, Hi               float64 // the interval on Ratio
	Verdict              string  // "SLOWER", "faster" or ""
	Missing              bool    // not in the baseline
}

// WriteAgainst writes the run's page with a section "Against the
// baseline" after the timing section and a line for it in the banner.
func WriteAgainst(w io.Writer, s report.Summary, a Against) error {
	v, err := runView(s)
	if err != nil {
		return err
	}
	state := "ok"
	if a.Slower > 0 {
		state, v.Verdict.Held, v.Verdict.Outcome = "bad", false, report.Failed
	}
	v.Verdict.Checks = append(v.Verdict.Checks, check{"Against the baseline", a.Verdict, state})
	sec := againstSection(a)
	for i, old := range v.Sections {
		if old.ID == "timing" {
			v.Sections = append(v.Sections[:i+1], append([]section{sec}, v.Sections[i+1:]...)...)
			return render(w, v)
		}
	}
	v.Sections = append(v.Sections, sec)
	return render(w, v)
}

func againstSection(a Against) section {
	sec := section{ID: "baseline", Title: "Against the baseline",
		How: fmt.Sprintf("Each case's median time per operation against %s, and their ratio with its interval at %.0f%% over all the cases: "+
			"the baseline runs' spread from run to run, or, wider, what the samples leave open (a seeded bootstrap). "+
			"A case is slower or faster only when the interval excludes 1 and the ratio is beyond %.3g%%. "+
			"One baseline run cannot separate the run from the machine: against it only a change beyond 1.5x is called, and a smaller one is inconclusive, "+
			"as is a case with too few samples.",
			a.Baseline, a.Level*100, a.Tolerance*100)}
	if len(a.Cases) == 0 {
		sec.Empty = "No case."
		return sec
	}
	stats := make([]report.TimingStat, len(a.Cases))
	for i, c := range a.Cases {
		stats[i] = c.Case
	}
	dims, fixed := splitDims(stats)
	t := &table{Sortable: true, Caption: joinDot(append(fixed, "median, µs per operation")),
		Head: append(dimHeadsOf(dims), heads("size", "mode", "n", "baseline µs", "run µs", "ratio", "interval", "verdict")...)}
	for _, c := range a.Cases {
		rw := row{Cells: append(dimCellsOf(dims, c.Case), size(c.Case.SizeBytes), plain(modeLabel(text(c.Case.Mode))), num("%.0f", float64(c.Case.Samples)))}
		if c.Missing {
			rw.Cells = append(rw.Cells, plain("-"), num("%.2f", c.RunUS), plain("-"), plain("-"), plain("not in the baseline"))
		} else {
			interval := "-" // too few samples: none
			if c.Lo != 0 || c.Hi != 0 {
				interval = fmt.Sprintf("%.3f..%.3f", c.Lo, c.Hi)
			}
			rw.Cells = append(rw.Cells, num("%.2f", c.BaseUS), num("%.2f", c.RunUS), num("%.3f", c.Ratio), plain(interval))
			switch c.Verdict {
			case "SLOWER":
				rw.Class = "bad"
				rw.Cells = append(rw.Cells, cell{Text: "✗ SLOWER", Class: "bad"})
			default:
				rw.Cells = append(rw.Cells, plain(c.Verdict))
			}
		}
		t.Rows = append(t.Rows, rw)
	}
	sec.Blocks = []block{{Notes: []string{a.Verdict}, Table: t}}
	return sec
}

// History is rsag history's page: the runs, each case's median over them
// and each node's record as a suspect.
type History struct {
	Path  string
	Runs  int
	About []string // one line per fact: the runs, the complete ones
	// Runs table, cases table and nodes table: rows of text cells, with
	// their heads, as the terminal prints them.
	RunHead, CaseHead, NodeHead []string
	RunRows, CaseRows, NodeRows [][]string
	Figures                     []plot.Inline // a trend per case, then per node
}

// WriteHistory writes the history's page to w.
func WriteHistory(w io.Writer, h History) error {
	v := view{Title: "rsag history: " + h.Path, Verdict: verdict{Held: true, Headline: fmt.Sprintf("History of %s: %s", h.Path, plural(h.Runs, "run", "runs")), About: h.About}}
	tableOf := func(head []string, rows [][]string) *table {
		t := &table{Sortable: true, Head: heads(head...)}
		for _, r := range rows {
			var cells []cell
			for _, c := range r {
				cells = append(cells, plain(c))
			}
			t.Rows = append(t.Rows, row{Cells: cells})
		}
		return t
	}
	var caseFigs, nodeFigs []block
	for _, f := range h.Figures {
		b := block{Figure: &figure{ID: "fig-" + f.Name, Caption: f.Title, SVG: template.HTML(f.SVG)}}
		if len(f.Name) > 5 && f.Name[:5] == "node-" {
			nodeFigs = append(nodeFigs, b)
		} else {
			caseFigs = append(caseFigs, b)
		}
	}
	v.Sections = []section{
		{ID: "runs", Title: "Runs", How: "Every run in the file, oldest first. Only a complete run whose checks held may be a baseline or a point of a trend.",
			Blocks: []block{{Table: tableOf(h.RunHead, h.RunRows)}}},
		{ID: "cases", Title: "Each case over the runs", How: "Each case's median time per operation over the complete runs; last / before is the last run's median over the median of the runs before it. " +
			"A vermillion dot is a run more than 5% above the median of the runs before it: a hint of a step, which rsag check judges from the samples.",
			Blocks: append([]block{{Table: tableOf(h.CaseHead, h.CaseRows)}}, caseFigs...)},
		{ID: "nodes", Title: "Each node over the runs", How: "How often each node was a suspect (of the locate or the soak phase), or an intermittent one, in the runs it was in; the figures mark the runs that named it.",
			Blocks: append([]block{{Table: tableOf(h.NodeHead, h.NodeRows)}}, nodeFigs...)},
	}
	v.Footer = "Written by rsag history from " + h.Path + "."
	return render(w, v)
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
