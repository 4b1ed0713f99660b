package report

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"io"
	"path/filepath"
	"slices"
)

// PhaseTable is the rows of a phase that report has no struct for: a phase
// registered with a table of its own (phase.Phase's Table) brings its
// columns, and report writes them as they are, in its CSV (NAME.csv),
// summary.json's phases, the page and the terminal.
type PhaseTable struct {
	Phase   string     `json:"phase"`
	Title   string     `json:"title"` // what the phase shows, one line
	Columns []string   `json:"columns"`
	Rows    [][]string `json:"rows"`
	// Failed are the rows (indices) that failed the phase's check; the
	// phase checks nothing when Checks is false.
	Checks bool  `json:"checks"`
	Failed []int `json:"failed"`
	// Inconclusive are the rows (indices) the phase's check could not
	// judge: neither held nor failed, said as such in every output.
	Inconclusive []int `json:"inconclusive,omitempty"`
}

// SummaryPhase is one phase that ran, in the order they ran: how long it
// took on rank 0 and, for a phase with a table of its own, the table and
// whether its check held.
type SummaryPhase struct {
	Name    string  `json:"name"`
	Seconds float64 `json:"seconds"` // on rank 0
	// Table is every rank's rows of a phase with a table of its own, in
	// rank order; nil for the phases summary.json has a section for.
	Table *PhaseTable `json:"table,omitempty"`
}

// PhaseTime is how long one phase took on one rank.
type PhaseTime struct {
	Name    string
	Seconds float64
}

// PhasesOf is summary.json's phases: those that ran (times, rank 0's,
// in order), each with its table from every rank's rows.
func PhasesOf(times []PhaseTime, tables []PhaseTable) []SummaryPhase {
	out := []SummaryPhase{}
	for _, t := range times {
		p := SummaryPhase{Name: t.Name, Seconds: t.Seconds}
		for _, tb := range tables {
			if tb.Phase == t.Name {
				p.Table = mergeTable(p.Table, tb)
			}
		}
		out = append(out, p)
	}
	return out
}

// mergeTable is into with t's rows after its own.
func mergeTable(into *PhaseTable, t PhaseTable) *PhaseTable {
	if into == nil {
		c := t
		c.Rows, c.Failed, c.Inconclusive = slices.Clone(t.Rows), slices.Clone(t.Failed), slices.Clone(t.Inconclusive)
		if c.Failed == nil {
			c.Failed = []int{}
		}
		return &c
	}
	for _, f := range t.Failed {
		into.Failed = append(into.Failed, len(into.Rows)+f)
	}
	for _, f := range t.Inconclusive {
		into.Inconclusive = append(into.Inconclusive, len(into.Rows)+f)
	}
	into.Rows = append(into.Rows, t.Rows...)
	return into
}

// RegisterTable registers NAME.csv, the combined file of the phase
// named's table: rank 0's, from every rank's rows.
func RegisterTable(phase string) {
	file := phase + ".csv"
	Register(Output{Stage: Combined, Patterns: []string{file}, Plan: func(in Input) ([]string, func(string) error) {
		if !in.Ran.Has(phase) {
			return nil, nil
		}
		return []string{file}, func(dir string) error {
			var merged *PhaseTable
			for _, t := range in.Rows.Tables {
				if t.Phase == phase {
					merged = mergeTable(merged, t)
				}
			}
			return writeFile(filepath.Join(dir, file), func(b *bytes.Buffer) error { return writeTableCSV(b, merged) })
		}
	}})
}

// writeTableCSV writes t with its columns as the header, as the seed's
// files are written (CRLF); nil writes nothing.
func writeTableCSV(w io.Writer, t *PhaseTable) error {
	if t == nil {
		return nil
	}
	cw := csv.NewWriter(w)
	cw.UseCRLF = true
	if err := cw.Write(t.Columns); err != nil {
		return err
	}
	for i, r := range t.Rows {
		if len(r) != len(t.Columns) {
			return fmt.Errorf("%s.csv: row %d has %d cells for %d columns", t.Phase, i, len(r), len(t.Columns))
		}
	}
	if err := cw.WriteAll(t.Rows); err != nil {
		return err
	}
	return cw.Error()
}

// PhaseTables prints the table of every phase that has one of its own.
func PhaseTables(w io.Writer, ps []SummaryPhase) error {
	for _, p := range ps {
		t := p.Table
		if t == nil {
			continue
		}
		verdict := ""
		if t.Checks {
			verdict = fmt.Sprintf(": %d of %d rows failed", len(t.Failed), len(t.Rows))
			if n := len(t.Inconclusive); n > 0 {
				verdict += fmt.Sprintf(", %d inconclusive", n)
			}
			if len(t.Failed) == 0 && len(t.Inconclusive) == 0 {
				verdict = ": every row held"
			}
		}
		fmt.Fprintf(w, "%s (phase %s%s)\n", t.Title, p.Name, verdict)
		tw := newTable(w, t.Columns...)
		for _, r := range t.Rows {
			tw.Append(r)
		}
		if err := tw.Render(); err != nil {
			return err
		}
	}
	return nil
}
