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
type Phases struct{ Contracts, Timing, Memory, Numerics, Sweep bool }

// WriteRankFiles writes this rank's rank{r}_{contracts,timings,memory}.csv
// with exactly the seed's columns.
func WriteRankFiles(dir string, rank int, rows Rows, ran Phases) error {
	name := func(kind string) string { return filepath.Join(dir, fmt.Sprintf("rank%d_%s.csv", rank, kind)) }
	cols := SeedColumns
	if ran.Sweep {
		cols = SweepColumns
	}
	return writeSet(name, rows, ran, cols)
}

// WriteCombined writes contracts.csv, timings.csv and memory.csv holding
// every rank's rows (Merge), with our columns after the seed's.
// numerics.csv is rank 0's alone: it has no seed columns to keep per rank.
func WriteCombined(dir string, merged Rows, ran Phases) error {
	name := func(kind string) string { return filepath.Join(dir, kind+".csv") }
	if err := writeSet(name, merged, ran, AllColumns); err != nil {
		return err
	}
	if !ran.Numerics {
		return nil
	}
	return writeFile(name("numerics"), func(b *bytes.Buffer) error { return WriteCSV(b, merged.Numerics, AllColumns, true) })
}

// Merge concatenates every rank's rows in rank order.
func Merge(all []Rows) Rows {
	var merged Rows
	for _, r := range all {
		merged.Contracts = append(merged.Contracts, r.Contracts...)
		merged.Timings = append(merged.Timings, r.Timings...)
		merged.Memory = append(merged.Memory, r.Memory...)
		merged.Numerics = append(merged.Numerics, r.Numerics...)
	}
	return merged
}

func writeSet(name func(string) string, rows Rows, ran Phases, cols Columns) error {
	var errs []error
	if ran.Contracts {
		errs = append(errs, writeFile(name("contracts"), func(b *bytes.Buffer) error { return WriteCSV(b, rows.Contracts, cols, true) }))
	}
	if ran.Timing {
		errs = append(errs, writeFile(name("timings"), func(b *bytes.Buffer) error { return WriteCSV(b, rows.Timings, cols, true) }))
	}
	if ran.Memory {
		errs = append(errs, writeFile(name("memory"), func(b *bytes.Buffer) error { return WriteCSV(b, rows.Memory, cols, true) }))
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
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
