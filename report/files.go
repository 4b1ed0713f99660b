package report

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"

	"rsag/internal/atomicfile"
)

// Phases says which phases ran, by name, so that a disabled phase leaves
// no file, and whether the timing phase swept beyond the seed's single
// case (Sweep), so that the per-rank timing files say which case each row
// is. The names are the phases' own (phase.Register); an output names the
// phase whose rows it holds.
type Phases struct {
	names map[string]bool
	Sweep bool
	// RankFolder puts every rank's own files in RankFolder/ rather than
	// beside the files a person opens: a large world's (more ranks than
	// the config's rank_folder_above). Small runs keep the seed's names
	// and places.
	RankFolder bool
}

// RankFolder is the folder of a large world's per-rank files.
const RankFolder = "ranks"

// The names of the phases whose rows report's own outputs hold.
const (
	Contracts = "contracts"
	Timing    = "timing"
	Memory    = "memory"
	Numerics  = "numerics"
	Locate    = "locate"
	Soak      = "soak"
)

// Ran is the set of phases named.
func Ran(names ...string) Phases {
	p := Phases{names: map[string]bool{}}
	for _, n := range names {
		p.names[n] = true
	}
	return p
}

// Has reports whether the phase named ran.
func (p Phases) Has(name string) bool { return p.names[name] }

// With is p with the phase named added.
func (p Phases) With(name string) Phases {
	q := Ran(p.Names()...)
	q.Sweep, q.RankFolder = p.Sweep, p.RankFolder
	q.names[name] = true
	return q
}

// Names are the phases that ran, sorted.
func (p Phases) Names() []string {
	var names []string
	for n := range p.names {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// csvFile is one kind of CSV: its name, the phase whose rows it holds, and
// how to write those rows with some columns.
type csvFile struct {
	kind  string // "timings": rank{r}_timings.csv and timings.csv
	phase string // the phase whose rows it holds
	write func(b *bytes.Buffer, rows Rows, cols Columns) error
	// perRank: every rank writes its own file with exactly the seed's
	// columns (and the sweep's, in a sweep), as well as rank 0 the
	// combined one with ours after them. numerics.csv has no seed columns
	// to keep per rank: rank 0 alone writes it.
	perRank bool
}

var csvFiles = []csvFile{
	{kind: "contracts", perRank: true, phase: Contracts,
		write: func(b *bytes.Buffer, r Rows, c Columns) error { return WriteCSV(b, r.Contracts, c, true) }},
	{kind: "timings", perRank: true, phase: Timing,
		write: func(b *bytes.Buffer, r Rows, c Columns) error { return WriteCSV(b, r.Timings, c, true) }},
	{kind: "memory", perRank: true, phase: Memory,
		write: func(b *bytes.Buffer, r Rows, c Columns) error { return WriteCSV(b, r.Memory, c, true) }},
	{kind: "numerics", phase: Numerics,
		write: func(b *bytes.Buffer, r Rows, c Columns) error { return WriteCSV(b, r.Numerics, c, true) }},
}

// The CSVs register themselves: every rank's files first, then the
// combined ones, each kind in csvFiles' order.
func init() {
	for _, f := range csvFiles {
		if f.perRank {
			pattern := "rank[0-9]*_" + f.kind + ".csv"
			Register(Output{Stage: EachRank, Patterns: []string{pattern, RankFolder + "/" + pattern}, Plan: f.plan(perRankName, perRankColumns)})
		}
	}
	for _, f := range csvFiles {
		Register(Output{Stage: Combined, Patterns: []string{f.kind + ".csv"}, Plan: f.plan(combinedName, func(Phases) Columns { return AllColumns })})
	}
}

// perRankName is a rank's file: rank3_timings.csv, in RankFolder/ when
// the run puts them there.
func perRankName(kind string, in Input) string {
	name := fmt.Sprintf("rank%d_%s.csv", in.Rank, kind)
	if in.Ran.RankFolder {
		return RankFolder + "/" + name
	}
	return name
}
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
		if !in.Ran.Has(f.phase) {
			return nil, nil
		}
		file := name(f.kind, in)
		return []string{file}, func(dir string) error {
			return writeFileIn(dir, file, func(b *bytes.Buffer) error { return f.write(b, in.Rows, cols(in.Ran)) })
		}
	}
}

// Merge concatenates every rank's rows in rank order.
func Merge(all []Rows) Rows {
	var merged Rows
	for _, r := range all {
		merged.Contracts = append(merged.Contracts, r.Contracts...)
		merged.Timings = append(merged.Timings, r.Timings...)
		merged.TimingRanks = append(merged.TimingRanks, r.TimingRanks...)
		merged.Memory = append(merged.Memory, r.Memory...)
		merged.Numerics = append(merged.Numerics, r.Numerics...)
		merged.Locate = append(merged.Locate, r.Locate...)
		merged.LocateComms = append(merged.LocateComms, r.LocateComms...)
		merged.LocateRanks = append(merged.LocateRanks, r.LocateRanks...)
		merged.Soak = append(merged.Soak, r.Soak...)
		if r.SoakSummary != nil {
			merged.SoakSummary = r.SoakSummary
		}
		merged.Tables = append(merged.Tables, r.Tables...)
	}
	return merged
}

// writeFile fills a buffer and writes it atomically, so that a reader
// never sees a half-written file.
func writeFile(path string, fill func(*bytes.Buffer) error) error {
	return writeFileIn(filepath.Dir(path), filepath.Base(path), fill)
}

// writeFileIn is writeFile of name in dir, where name may lie in a folder
// of rsag's (RankFolder), reached without following a link.
func writeFileIn(dir, name string, fill func(*bytes.Buffer) error) error {
	path := filepath.Join(dir, name)
	var b bytes.Buffer
	if err := fill(&b); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := atomicfile.WriteIn(dir, name, b.Bytes()); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// RanIn is the phases whose results summary s holds: what a summary read
// back (rsag report) shows.
func RanIn(s Summary) Phases {
	p := Ran()
	for _, ph := range s.Phases {
		p.names[ph.Name] = true
	}
	// A summary of an older rsag lists no phases: its sections say which
	// ran, each as its checks say (checks.go).
	for _, c := range checkers {
		if c.Has != nil && c.Has(s) {
			p.names[c.Phase] = true
		}
	}
	return p
}
