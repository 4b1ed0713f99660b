package page

import (
	"fmt"
	"slices"

	"rsag/report"
)

// phaseSections are the sections of the phases with a table of their
// own: the table as the phase wrote it, its failed rows marked.
func phaseSections(s report.Summary) []section {
	var secs []section
	for _, p := range s.Phases {
		t := p.Table
		if t == nil {
			continue
		}
		sec := section{ID: "phase-" + p.Name, Title: t.Title,
			How: fmt.Sprintf("The %s phase's own table, every rank's rows (%s.csv); it took %.1f s on rank 0.", p.Name, p.Name, p.Seconds)}
		if len(t.Rows) == 0 {
			sec.Empty = "The phase wrote no rows."
			secs = append(secs, sec)
			continue
		}
		tb := &table{Sortable: true, Head: heads(t.Columns...)}
		for i, r := range t.Rows {
			var cells []cell
			for _, c := range r {
				cells = append(cells, plain(c))
			}
			row := row{Cells: cells}
			if slices.Contains(t.Failed, i) {
				row.Class = "bad"
			} else if slices.Contains(t.Inconclusive, i) {
				row.Class = "warn"
			}
			tb.Rows = append(tb.Rows, row)
		}
		sec.Blocks = []block{{Table: tb}}
		secs = append(secs, sec)
	}
	return secs
}
