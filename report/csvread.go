package report

import (
	"encoding"
	"encoding/csv"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strconv"
)

// ReadCSV reads back rows that WriteCSV wrote, by the header's column
// names: a column the row type lacks is an error, and one the file lacks
// leaves its field zero (a per-rank file has fewer columns than the
// combined one). rsag history and rsag check read a run's timings.csv
// with it, for the per-cycle samples summary.json does not keep.
func ReadCSV[R any](r io.Reader) ([]R, error) {
	cr := csv.NewReader(r)
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("reading the header: %w", err)
	}
	header = slices.Clone(header) // the reader reuses its record
	var zero R
	byName := map[string][]int{}
	for _, c := range columns(reflect.TypeOf(zero), AllColumns) {
		byName[c.name] = c.index
	}
	index := make([][]int, len(header))
	for i, h := range header {
		at, ok := byName[h]
		if !ok {
			return nil, fmt.Errorf("column %q is not one of rsag's", h)
		}
		index[i] = at
	}
	var out []R
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		var row R
		v := reflect.ValueOf(&row).Elem()
		for i, cell := range rec {
			if err := parseValue(v.FieldByIndex(index[i]), cell); err != nil {
				return nil, fmt.Errorf("line %d, column %s: %q: %w", line, header[i], cell, err)
			}
		}
		out = append(out, row)
	}
}

// parseValue reads what formatValue wrote into v.
func parseValue(v reflect.Value, s string) error {
	if u, ok := v.Addr().Interface().(encoding.TextUnmarshaler); ok {
		return u.UnmarshalText([]byte(s))
	}
	switch v.Kind() {
	case reflect.Bool:
		switch s {
		case "True":
			v.SetBool(true)
		case "False":
		default:
			return fmt.Errorf("not True or False")
		}
	case reflect.Float64, reflect.Float32:
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return err
		}
		v.SetFloat(f)
	case reflect.Int, reflect.Int64, reflect.Int32:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return err
		}
		v.SetInt(n)
	case reflect.String:
		v.SetString(s)
	default:
		return fmt.Errorf("no CSV reading for %s", v.Kind())
	}
	return nil
}
