package config

import (
	"fmt"
	"strings"
	"testing"
)

// nested is a value nested n levels deep: {a = {a = ... 1}} counts two
// levels per table (the table, its key), [[... 1]] one per array.
func nestedTables(n int) string { return strings.Repeat("{a = ", n) + "1" + strings.Repeat("}", n) }
func nestedArrays(n int) string { return strings.Repeat("[", n) + "1" + strings.Repeat("]", n) }

// Documents past a bound are refused by the scan, naming the bound and the
// line, before the TOML decoder sees them: the refusal is the scan's own
// message, whatever the decoder would have said.
func TestShapeBoundsAreRefusedBeforeDecoding(t *testing.T) {
	dotted := func(n int) string { return strings.TrimSuffix(strings.Repeat("a.", n), ".") }
	cases := []struct {
		name, file string
		sets       []string
		want       string
	}{
		{"inline tables 5,000 deep", "x = " + nestedTables(5000) + "\n", nil,
			"x.toml: line 1: nests 33 levels deep, above rsag's bound of 32 (each part of a table header or dotted key, each inline table and each array is a level): no config needs more than a few; flatten it"},
		{"inline tables 100,000 deep", "[timing]\n\nx = " + nestedTables(100_000) + "\n", nil, "x.toml: line 3: nests 33 levels deep"},
		{"arrays", "[timing]\nsizes_bytes = " + nestedArrays(31) + "\n", nil, "nests 33 levels deep"},
		{"a dotted header", "[" + dotted(33) + "]\n", nil, "nests 33 levels deep"},
		{"an array of tables' dotted header", "[[" + dotted(40) + "]]\n", nil, "nests 40 levels deep"},
		{"a dotted key under a header", "[timing]\n" + dotted(32) + " = 1\n", nil, "line 2: nests 33 levels deep"},
		{"a quoted dotted key", "[timing]\n" + strings.Repeat(`"a".`, 32) + `"b" = 1` + "\n", nil, "nests 34 levels deep"},
		{"arrays across lines and comments", "x = [ # [[[\n" + strings.Repeat("[\n", 40), nil, "nests 33 levels deep"},
		{"by -set", "", []string{"timing.cycles=" + nestedTables(3000)}, "-set timing.cycles={a = {a = {a = {a = {a = {a = {a = {a = {a = {a = {a = {a = {a = {... (18015 bytes): line 2: nests 33 levels deep"},
		{"by -set for a run", runsDoc, []string{"run.a.cycles=" + nestedArrays(100)}, "nests 33 levels deep"},
		{"too many keys", strings.Repeat("[[run]]\n", MaxKeys+1), nil, fmt.Sprintf("line %d: holds more than 10000 keys (each part of a dotted key or table header counted), rsag's bound: a config has a few dozen; is it the config?", MaxKeys+1)},
		{"too many keys in inline tables", "x = [" + strings.Repeat("{a=1,b=2},", MaxKeys/2+1) + "]\n", nil, "holds more than 10000 keys"},
		{"too many values", "[timing]\nsizes_bytes = [" + strings.Repeat("1,", MaxValues) + "]\n", nil, "line 2: holds more than 100000 values (each element of an array counted), rsag's bound"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("x.toml", []byte(c.file), c.sets)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v\nwant %q", err, c.want)
			}
			if len(err.Error()) > 600 {
				t.Errorf("the message is %d bytes: it echoes the input", len(err.Error()))
			}
		})
	}
}

// The bounds are limits, not typos: a document at each bound passes the
// scan, and brackets and quotes inside strings and comments are not
// structure.
func TestShapeWithinTheBoundsPasses(t *testing.T) {
	for _, c := range []struct{ name, doc string }{
		{"32 levels", "x = " + nestedTables(15) + "\ny = " + nestedArrays(31) + "\n"},
		{"a header of 32 parts", "[" + strings.TrimSuffix(strings.Repeat("a.", 32), ".") + "]\n"},
		{"the keys' bound", strings.Repeat("[[run]]\n", MaxKeys)},
		{"the values' bound", "x = [" + strings.Repeat("1,", MaxValues-1) + "]\n"},
		{"brackets in strings", `a = "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{"` + "\n" +
			`b = '[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[['` + "\n" +
			`c = """` + "\n" + `[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[ \""" ]]""""` + "\n" +
			`d = '''` + "\n" + `[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[ ''''` + "\n" +
			`"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[" = 1` + "\n"},
		{"brackets in comments", "# " + strings.Repeat("[", 100) + "\nx = [1, # " + strings.Repeat("[", 100) + "\n2]\n"},
		{"a date's space", "x = [1979-05-27 07:32:00Z, 1]\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := checkShape("x.toml", c.doc); err != nil {
				t.Errorf("%v", err)
			}
		})
	}
}

// A bad value is named by its first 80 bytes and its length, not echoed:
// a megabyte of it would be printed once per run, into every log.
func TestErrorsClipWhatTheyEcho(t *testing.T) {
	long := strings.Repeat("x", 1<<20)
	for _, c := range []struct {
		name, file string
		sets       []string
		want       string
	}{
		{"a long backend", "backend = \"" + long + "\"\n", nil, `backend: "` + strings.Repeat("x", 80) + `"... (1048576 bytes) is not a backend: use one of auto, nccl, mpi`},
		{"a long name in a list", "[timing]\nmodes = [\"" + long + "\"]\n", nil, `"... (1048576 bytes) is unknown: use direct, decomposed`},
		{"a long size", "[timing]\nsizes_bytes = [\"" + long + "\"]\n", nil, `"... (1048576 bytes)`},
		{"a long unknown key", long + " = 1\n", nil, "x.toml: " + strings.Repeat("x", 80) + "... (1048576 bytes): unknown key"},
		{"a long -set", "", []string{"timing.warmups=" + long}, "-set timing.warmups=" + strings.Repeat("x", 65) + "... (1048591 bytes): timing.warmups: "},
		{"a long -set with a line break", "", []string{"timing.warmups=1\n" + long}, `-set "timing.warmups=1\n`},
		{"a long memory mode", "[memory]\nmodes = [\"" + long + "\"]\n", nil, `"... (1048576 bytes) is not a memory mode`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("x.toml", []byte(c.file), c.sets)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %.1000v\nwant %q", err, c.want)
			}
			// The longest message names a table's keys: a few hundred bytes.
			if len(err.Error()) > 1200 {
				t.Errorf("the message is %d bytes: %.1000s", len(err.Error()), err)
			}
		})
	}
	if got := Clip(strings.Repeat("é", 50)); got != strings.Repeat("é", 40)+"... (100 bytes)" {
		t.Errorf("Clip cut a character: %q", got)
	}
	if got := ClipQuoted(`a "` + strings.Repeat(`\\`, 60) + `" b`); !strings.HasPrefix(got, `a "`+strings.Repeat(`\\`, 40)+`"... (120 bytes) b`) {
		t.Errorf("ClipQuoted: %s", got)
	}
}
