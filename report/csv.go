package report

import (
	"encoding"
	"encoding/csv"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// Columns selects which columns a CSV writer emits.
type Columns int

const (
	// SeedColumns are the seed's columns only: the per-rank files of a run
	// that is the seed's.
	SeedColumns Columns = iota
	// SweepColumns add the sweep's case columns: the per-rank files of a sweep.
	SweepColumns
	// AllColumns add ours after them: the combined files.
	AllColumns
)

// column is one field of a row type that is a CSV column: its name, its
// class ("", "sweep" or "extra") and where it is in the row.
type column struct {
	name, class string
	index       []int
}

// columns lists a row type's columns in file order: every field, an
// embedded struct's in its place, then stably by class, the seed's first,
// then the sweep's, then ours; cols says which classes are written.
func columns(t reflect.Type, cols Columns) []column {
	var all []column
	var walk func(t reflect.Type, at []int)
	walk = func(t reflect.Type, at []int) {
		for i := range t.NumField() {
			f := t.Field(i)
			index := append(slices.Clone(at), i)
			if f.Anonymous && f.Type.Kind() == reflect.Struct && f.Tag.Get("csv") == "" {
				walk(f.Type, index)
				continue
			}
			name, class, _ := strings.Cut(f.Tag.Get("csv"), ",")
			if name == "" || name == "-" {
				continue
			}
			all = append(all, column{name, class, index})
		}
	}
	walk(t, nil)
	rank := map[string]int{"": 0, "sweep": 1, "extra": 2}
	slices.SortStableFunc(all, func(a, b column) int { return rank[a.class] - rank[b.class] })
	var out []column
	for _, c := range all {
		if c.class == "" || (c.class == "sweep" && cols >= SweepColumns) || (c.class == "extra" && cols == AllColumns) {
			out = append(out, c)
		}
	}
	return out
}

// Header returns the CSV header of a row type (a struct value).
func Header(row any, cols Columns) []string {
	var h []string
	for _, c := range columns(reflect.TypeOf(row), cols) {
		h = append(h, c.name)
	}
	return h
}

// WriteCSV writes rows (a slice of one row type) with a header line.
func WriteCSV[R any](w io.Writer, rows []R, cols Columns, header bool) error {
	cw := csv.NewWriter(w)
	// Python's csv module, which wrote the seed's files, ends lines with CRLF.
	cw.UseCRLF = true
	var zero R
	cs := columns(reflect.TypeOf(zero), cols)
	if header {
		if err := cw.Write(Header(zero, cols)); err != nil {
			return err
		}
	}
	record := make([]string, len(cs))
	for _, r := range rows {
		v := reflect.ValueOf(r)
		for i, c := range cs {
			record[i] = formatValue(v.FieldByIndex(c.index))
		}
		if err := cw.Write(record); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// formatValue spells values as the seed's Python csv module did.
func formatValue(v reflect.Value) string {
	// A typed name (coll.DType, coll.Op) is written as its name.
	if m, ok := v.Interface().(encoding.TextMarshaler); ok {
		if b, err := m.MarshalText(); err == nil {
			return string(b)
		}
	}
	switch v.Kind() {
	case reflect.Bool:
		if v.Bool() {
			return "True"
		}
		return "False"
	case reflect.Float64, reflect.Float32:
		return PyFloat(v.Float())
	case reflect.Int, reflect.Int64, reflect.Int32:
		return strconv.FormatInt(v.Int(), 10)
	case reflect.String:
		return v.String()
	}
	panic(fmt.Sprintf("report: no CSV spelling for %s", v.Kind()))
}

// PyFloat formats like Python's repr(float): the shortest text that reads
// back as the same float, always with a decimal point or an exponent.
func PyFloat(f float64) string {
	abs := f
	if abs < 0 {
		abs = -abs
	}
	if abs != 0 && (abs < 1e-4 || abs >= 1e16) {
		// Both languages pad the exponent to two digits: 1e-05, 1e+16.
		return strconv.FormatFloat(f, 'e', -1, 64)
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsAny(s, ".eEn") {
		s += ".0"
	}
	return s
}
