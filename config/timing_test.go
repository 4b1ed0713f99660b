package config

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"rsag/coll"
)

func TestSizeRanges(t *testing.T) {
	cfg, err := Parse("r.toml", []byte("[timing]\nmin_bytes = \"1K\"\nmax_bytes = \"1M\"\nfactor = 4\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Sweeps[0].SizesBytes; !slices.Equal(got, []int64{1024, 4096, 16384, 65536, 262144, 1048576}) {
		t.Errorf("factor range: %v", got)
	}
	cfg, err = Parse("r.toml", []byte("[timing]\nmin_bytes = 4096\nmax_bytes = 16384\nstep_bytes = 4096\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Sweeps[0].SizesBytes; !slices.Equal(got, []int64{4096, 8192, 12288, 16384}) {
		t.Errorf("step range: %v", got)
	}
	// A -set list replaces a range from the file, and the other way round.
	cfg, err = Parse("r.toml", []byte("[timing]\nmin_bytes = 4096\nmax_bytes = 16384\nstep_bytes = 4096\n"), []string{"timing.sizes_bytes=[64]"})
	if err != nil || !slices.Equal(cfg.Sweeps[0].SizesBytes, []int64{64}) {
		t.Errorf("-set list over a range: %v, %v", cfg.Runs, err)
	}
}

func TestRunsOverrideTiming(t *testing.T) {
	doc := `
[timing]
sizes_bytes = ["1K", "1M"]
cycles = 5
[[run]]
name = "fp32"
[[run]]
name = "narrow"
dtypes = ["bfloat16", "int8"]
ops = ["sum", "max"]
methods = ["batched", "graph"]
min_bytes = "4K"
max_bytes = "16K"
factor = 2
`
	cfg, err := Parse("runs.toml", []byte(doc), []string{"timing.warmups=1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Runs) != 2 || cfg.Runs[0].Name != "fp32" || cfg.Runs[1].Name != "narrow" {
		t.Fatalf("runs: %+v", cfg.Runs)
	}
	a, b := cfg.Sweeps[0], cfg.Sweeps[1]
	if a.Name != "fp32" || !slices.Equal(a.SizesBytes, []int64{1024, 1 << 20}) || a.Cycles != 5 || a.Warmups != 1 ||
		!slices.Equal(a.DTypes, []coll.DType{coll.Float32}) {
		t.Errorf("run fp32 did not inherit [timing]: %+v", a)
	}
	if b.Name != "narrow" || !slices.Equal(b.SizesBytes, []int64{4096, 8192, 16384}) || b.Cycles != 5 ||
		!slices.Equal(b.DTypes, []coll.DType{coll.BFloat16, coll.Int8}) ||
		!slices.Equal(b.Ops, []coll.Op{coll.Sum, coll.Max}) ||
		!slices.Equal(b.Methods, []coll.Method{coll.Batched, coll.GraphReplay}) {
		t.Errorf("run narrow: %+v", b)
	}
	if !slices.Equal(cfg.Timing.DTypes, []coll.DType{coll.Float32}) {
		t.Errorf("a run wrote into [timing]: %v", cfg.Timing.DTypes)
	}
	if cfg.IsSeedCase() {
		t.Error("a two-run sweep is not the seed's case")
	}
	if err := cfg.Validate(2); err != nil {
		t.Errorf("valid on 2 ranks: %v", err)
	}
	// int8 sum on 16 ranks reaches 136 > 127: no exact check is possible.
	if err := cfg.Validate(16); err == nil || !strings.Contains(err.Error(), "int8 with sum on 16 ranks reaches 136") {
		t.Errorf("on 16 ranks: %v", err)
	}
}

func TestDefaultsAreTheSeedsCase(t *testing.T) {
	cfg, err := Parse("d.toml", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.IsSeedCase() || len(cfg.Runs) != 1 || cfg.Runs[0].Name != "default" {
		t.Errorf("defaults: %+v", cfg.Runs)
	}
}

// Every list of [timing] but the sizes is a dimension of the seed's case:
// set to another value, the run is a sweep, and the per-rank CSVs gain the
// case's columns. The keys come from Timing's fields, so a new dimension
// fails here until it has another value below.
func TestEveryDimensionLeavesTheSeedsCase(t *testing.T) {
	other := map[string]string{"dtypes": `["float64"]`, "ops": `["max"]`, "placements": `["in-place"]`,
		"methods": `["batched"]`, "modes": `["direct"]`, "buffers": `["registered"]`, "cta_policies": `["zero"]`,
		"offsets": `[64]`}
	typ := reflect.TypeFor[Timing]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		key, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
		if f.Type.Kind() != reflect.Slice || key == "sizes_bytes" {
			continue
		}
		v, ok := other[key]
		if !ok {
			t.Errorf("timing.%s is a list this test has no other value for: give it one", key)
			continue
		}
		cfg, err := Parse("d.toml", nil, []string{"timing." + key + "=" + v})
		if err != nil {
			t.Errorf("timing.%s = %s: %v", key, v, err)
			continue
		}
		if cfg.IsSeedCase() {
			t.Errorf("timing.%s = %s is still the seed's case", key, v)
		}
	}
}

func TestBadSweeps(t *testing.T) {
	cases := []struct {
		name, doc string
		world     int
		key, want string
	}{
		{"list and range", "[timing]\nsizes_bytes = [1024]\nmin_bytes = 1024\n", 2, "timing.sizes_bytes", "given together with min_bytes: use either a list of sizes"},
		{"range without factor", "[timing]\nmin_bytes = 1024\nmax_bytes = 4096\n", 2, "timing.factor", "exactly one of factor"},
		{"empty range", "[timing]\nmin_bytes = 4096\nmax_bytes = 1024\nfactor = 2\n", 2, "timing.min_bytes", "is empty"},
		{"huge range", "[timing]\nmin_bytes = 4\nmax_bytes = \"1G\"\nstep_bytes = 4\n", 2, "timing.max_bytes", "more than 64 sizes"},
		{"unknown dtype", "[timing]\ndtypes = [\"float8\"]\n", 2, "timing.dtypes", `"float8" is unknown`},
		{"unknown op", "[timing]\nops = [\"xor\"]\n", 2, "timing.ops", `"xor" is unknown`},
		{"unknown method", "[timing]\nmethods = [\"cuda-graph\"]\n", 2, "timing.methods", `use per-op, batched, barrier, graph`},
		{"unknown placement", "[timing]\nplacements = [\"inplace\"]\n", 2, "timing.placements", `use out-of-place, in-place`},
		{"zero batch", "[timing]\nbatch = 0\n", 2, "timing.batch", "at least 1"},
		{"discard all", "[timing]\ncycles = 3\ndiscard = 3\n", 2, "timing.discard", "0 to cycles-1 (2)"},
		{"negative gate", "[timing]\nmin_busbw_gbps = -1.0\n", 2, "timing.min_busbw_gbps", "negative"},
		{"gate on p90", "[timing]\nmin_busbw_statistic = \"p90\"\n", 2, "timing.min_busbw_statistic", `use "median" (the default) or "p99"`},
		{"avg on ints", "[timing]\ndtypes = [\"int32\"]\nops = [\"avg\"]\n", 2, "timing.dtypes", "avg on int32 rounds"},
		{"avg on 3 ranks", "[timing]\nsizes_bytes = [1536]\nops = [\"avg\"]\n[memory]\nenabled = false\n", 3, "timing.dtypes", "power-of-two"},
		{"float64 divisibility", "[timing]\nsizes_bytes = [1040]\ndtypes = [\"float64\"]\n[memory]\nenabled = false\n", 3, "timing.sizes_bytes", "3 ranks x 8 bytes (float64) = 24"},
		{"duplicate run", "[[run]]\nname = \"a\"\n[[run]]\nname = \"a\"\n", 2, "run[2].name", "names two runs"},
		{"unknown run key", "[[run]]\nname = \"a\"\nmethod = [\"batched\"]\n", 2, "run.method", `did you mean "run.methods"`},
		{"bad run value", "[[run]]\nname = \"b\"\nbatch = 0\n", 2, "run b: batch", "at least 1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wantError(t, c.doc, nil, c.world, c.key, c.want)
		})
	}
}
