package report

import (
	"bytes"
	"fmt"
	"path/filepath"

	"rsag/internal/atomicfile"
)

// Phases says which phases ran, so that a disabled phase leaves no file,
// and whether the timing phase swept beyond the seed's single case, so that
// the per-rank timing files say which case each row is.
type Phases struct{ Contracts, Timing, Memory, Numerics, Sweep, Locate, Soak bool }

// csvFile is one kind of CSV: its name, the phase whose rows it holds, and
// how to write those rows with some columns.
type csvFile struct {
	kind  string // "timings": rank{r}_timings.csv and timings.csv
	ran   func(Phases) bool
	write func(b *bytes.Buffer, rows Rows, cols Columns) error
	// perRank: every rank writes its own file with exactly the seed's
	// columns (and the sweep's, in a sweep), as well as rank 0 the
	// combined one with ours after them. numerics.csv has no seed columns
	// to keep per rank: rank 0 alone writes it.
	perRank bool
}

var csvFiles = []csvFile{
	{kind: "contracts", perRank: true, ran: func(p Phases) bool { return p.Contracts },
		write: func(b *bytes.Buffer, r Rows, c Columns) error { return WriteCSV(b, r.Contracts, c, true) }},
	{kind: "timings", perRank: true, ran: func(p Phases) bool { return p.Timing },
		write: func(b *bytes.Buffer, r Rows, c Columns) error { return WriteCSV(b, r.Timings, c, true) }},
	{kind: "memory", perRank: true, ran: func(p Phases) bool { return p.Memory },
		write: func(b *bytes.Buffer, r Rows, c Columns) error { return WriteCSV(b, r.Memory, c, true) }},
	{kind: "numerics", ran: func(p Phases) bool { return p.Numerics },
		write: func(b *bytes.Buffer, r Rows, c Columns) error { return WriteCSV(b, r.Numerics, c, true) }},
}

// The CSVs register themselves: every rank's files first, then the
// combined ones, each kind in csvFiles' order.
func init() {
	for _, f := range csvFiles {
		if f.perRank {
			Register(Output{Stage: EachRank, Patterns: []string{"rank[0-9]*_" + f.kind + ".csv"}, Plan: f.plan(perRankName, perRankColumns)})
		}
	}
	for _, f := range csvFiles {
		Register(Output{Stage: Combined, Patterns: []string{f.kind + ".csv"}, Plan: f.plan(combinedName, func(Phases) Columns { return AllColumns })})
	}
}

func perRankName(kind string, in Input) string { return fmt.Sprintf("rank%d_%s.csv", in.Rank, kind) }
func combinedName(kind string, _ Input) string { return kind + ".csv" }

// perRankColumns are the seed's columns, and the sweep's case in a sweep.
func perRankColumns(ran Phases) Columns {
	if ran.Sweep {
		return SweepColumns
	}
	return SeedColumns
}

// plan is the file's Output.Plan: nothing when its phase did not run.
func (f csvFile) plan(name func(string, Input) string, cols func(Phases) Columns) func(Input) ([]string, func(string) error) {
	return func(in Input) ([]string, func(string) error) {
		if !f.ran(in.Ran) {
			return nil, nil
		}
		file := name(f.kind, in)
		return []string{file}, func(dir string) error {
			return writeFile(filepath.Join(dir, file), func(b *bytes.Buffer) error { return f.write(b, in.Rows, cols(in.Ran)) })
		}
	}
}

// Merge concatenates every rank's rows in rank order.
func Merge(all []Rows) Rows {
	var merged Rows
	for _, r := range all {
		merged.Contracts = append(merged.Contracts, r.Contracts...)
		merged.Timings = append(merged.Timings, r.Timings...)
		merged.Memory = append(merged.Memory, r.Memory...)
		merged.Numerics = append(merged.Numerics, r.Numerics...)
		merged.Locate = append(merged.Locate, r.Locate...)
		merged.LocateComms = append(merged.LocateComms, r.LocateComms...)
		merged.LocateRanks = append(merged.LocateRanks, r.LocateRanks...)
		merged.Soak = append(merged.Soak, r.Soak...)
		if r.SoakSummary != nil {
			merged.SoakSummary = r.SoakSummary
		}
	}
	return merged
}

// writeFile fills a buffer and writes it atomically, so that a reader
// never sees a half-written file.
func writeFile(path string, fill func(*bytes.Buffer) error) error {
	var b bytes.Buffer
	if err := fill(&b); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := atomicfile.Write(path, b.Bytes()); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
