package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"reflect"
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

// Header returns the CSV header of a row type (a struct value or pointer).
func Header(row any, cols Columns) []string {
	var h []string
	t := reflect.TypeOf(row)
	for i := 0; i < t.NumField(); i++ {
		if name, ok := tag(t.Field(i), cols); ok {
			h = append(h, name)
		}
	}
	return h
}

// tag returns a field's column name and whether cols includes it.
func tag(f reflect.StructField, cols Columns) (name string, included bool) {
	name, opt, _ := strings.Cut(f.Tag.Get("csv"), ",")
	switch opt {
	case "sweep":
		return name, cols >= SweepColumns
	case "extra":
		return name, cols == AllColumns
	}
	return name, true
}

// WriteCSV writes rows (a slice of one row type) with a header line.
func WriteCSV[R any](w io.Writer, rows []R, cols Columns, header bool) error {
	cw := csv.NewWriter(w)
	// Python's csv module, which wrote the seed's files, ends lines with CRLF.
	cw.UseCRLF = true
	if header {
		var zero R
		if err := cw.Write(Header(zero, cols)); err != nil {
			return err
		}
	}
	for _, r := range rows {
		if err := cw.Write(record(r, cols)); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

func record(row any, cols Columns) []string {
	v := reflect.ValueOf(row)
	var out []string
	for i := 0; i < v.NumField(); i++ {
		if _, ok := tag(v.Type().Field(i), cols); !ok {
			continue
		}
		out = append(out, formatValue(v.Field(i)))
	}
	return out
}

// formatValue spells values as the seed's Python csv module did.
func formatValue(v reflect.Value) string {
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
