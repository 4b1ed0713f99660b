package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParse feeds Parse arbitrary config bytes and one arbitrary -set
// override. Whatever the input, Parse and Validate must not panic, and every
// error must be a *config.Error (so that main can name the key). The seed
// corpus (every shipped config, every bad input of TestBadInputs and every
// hostile one of TestHostileInputs) runs in
// plain `go test`; `go test -fuzz FuzzParse ./config` explores further.
func FuzzParse(f *testing.F) {
	files, err := filepath.Glob("../configs/*.toml")
	if err != nil || len(files) == 0 {
		f.Fatalf("no configs found: %v", err)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, "")
		f.Add(data, "timing.sizes_bytes=[1024,\"64K\"]")
	}
	for _, c := range badInputs {
		f.Add([]byte(c.file), strings.Join(c.sets, ""))
	}
	for _, c := range hostileInputs {
		for _, set := range append(c.sets, "") {
			f.Add([]byte(c.file), set)
		}
	}
	f.Add([]byte(runsDoc), "run.b.c.min_bytes=\"1K\"")
	f.Add([]byte(runsDoc), "run..cycles=3")
	f.Add([]byte(runsDoc), "run.=3")
	f.Add([]byte("[[run]]\n[[run]]\nname = \"run1\"\n"), "run.run1.name=\"run2\"")
	f.Add([]byte("timeout_s = 9223372036854775807\n[memory]\npayload_bytes = \"8589934591G\"\n"), "required_ranks=3")
	// Past the shape's bounds, and strings that hide brackets from it.
	f.Add([]byte("x = "+nestedTables(40)+"\n"), "timing.cycles="+nestedArrays(40))
	f.Add([]byte("a = \"\"\"[[[\n\"\"\"\"\nb = '''[[['''\n[[run]]\nname = \"[[[\"\n"), "run.[[[.cycles=[[[1]]]")
	f.Fuzz(func(t *testing.T, data []byte, set string) {
		var sets []string
		if set != "" {
			sets = []string{set}
		}
		cfg, err := Parse("fuzz.toml", data, sets)
		if err == nil {
			for _, world := range []int{1, 2, 3, 4, 7} {
				if verr := cfg.Validate(world); verr != nil {
					err = verr
					break
				}
			}
		}
		var cerr *Error
		if err != nil && !errors.As(err, &cerr) {
			t.Fatalf("error %v (%T) is not a *config.Error", err, err)
		}
		if err != nil && err.Error() == "" {
			t.Fatal("empty error message")
		}
	})
}
