package config

import (
	"fmt"
	"os"
	"rsag/coll"
	"rsag/phases"
	"slices"
	"strings"
	"testing"
)

// runsDoc has two named runs, for the -set run.NAME.key cases.
const runsDoc = "[timing]\nsizes_bytes = [\"4K\"]\ncycles = 5\n[[run]]\nname = \"a\"\n[[run]]\nname = \"b.c\"\nmin_bytes = \"4K\"\nmax_bytes = \"16K\"\nfactor = 2\n"

// hostileInputs are the classes of issue 10 a config can hold: numbers that
// wrap, overflow or are not numbers, counts past their bound, duplicates,
// keys a table does not take, -set for runs, one key spelt twice, and a file
// whose bad value a flag would hide. Each names the key and the fix; they
// also seed FuzzParse.
var hostileInputs = []struct {
	name, file string
	sets       []string
	world      int
	key, want  string
}{
	// Sizes: one parser, overflow caught on both signs, a documented bound.
	{"size wraps negative", "[timing]\nsizes_bytes = [\"-18014398509481983K\"]\n", nil, 2, "timing.sizes_bytes", "out of range for a byte size: a size is positive and at most 1024G"},
	{"size overflows positive", "[timing]\nsizes_bytes = [\"9007199254740992K\"]\n", nil, 2, "timing.sizes_bytes", "out of range for a byte size"},
	{"size beyond int64", "[timing]\nsizes_bytes = [\"99999999999999999999\"]\n", nil, 2, "timing.sizes_bytes", "out of range for a byte size"},
	{"payload wraps", "", []string{`memory.payload_bytes="-18014398509481983K"`}, 2, "memory.payload_bytes", "out of range for a byte size"},
	{"size above the bound", "[timing]\nsizes_bytes = [\"2048G\"]\n", nil, 2, "timing.sizes_bytes", "above rsag's bound of 1024G (1099511627776 bytes)"},
	{"payload above the bound", "[memory]\npayload_bytes = 9223372036854775807\n", nil, 2, "memory.payload_bytes", "above rsag's bound of 1024G"},
	{"fraction of a byte", "[timing]\nsizes_bytes = [1.5]\n", nil, 2, "timing.sizes_bytes", "not a byte size"},
	{"range past the bound", "[timing]\nmin_bytes = 1\nmax_bytes = \"8589934591G\"\nfactor = 3\n", nil, 2, "timing.max_bytes", "above rsag's bound of 1024G"},
	{"factor past the bound", "[timing]\nmin_bytes = 1\nmax_bytes = \"1G\"\nfactor = 4611686018427387904\n", nil, 2, "timing.factor", "use an integer from 2 to 1024"},
	{"factor of one", "[timing]\nmin_bytes = 1\nmax_bytes = \"1G\"\nfactor = 1\n", nil, 2, "timing.factor", "from 2 to 1024"},
	{"negative step", "[timing]\nmin_bytes = 1024\nmax_bytes = 4096\nstep_bytes = -1024\n", nil, 2, "timing.step_bytes", "not a positive size"},
	{"step range too long", "[timing]\nmin_bytes = 4\nmax_bytes = \"1G\"\nstep_bytes = 4\n", nil, 2, "timing.max_bytes", "more than 64 sizes, rsag's bound per sweep: raise step_bytes"},
	{"too many listed sizes", "[timing]\nsizes_bytes = [" + manySizes(65) + "]\n", nil, 2, "timing.sizes_bytes", "lists 65 sizes, above rsag's bound of 64"},
	{"factor with a list", "[timing]\nsizes_bytes = [1024]\nfactor = 2\n", nil, 2, "timing.sizes_bytes", "given together with factor: use either a list"},
	{"inherited list with a factor", "[timing]\nsizes_bytes = [1024]\n[[run]]\nname = \"x\"\nfactor = 2\n", nil, 2, "run x: factor", "apply to a range (min_bytes..max_bytes), but these sizes are a list"},
	{"list and range in a run", "[[run]]\nname = \"x\"\nsizes_bytes = [64]\nstep_bytes = 64\n", nil, 2, "run[1].sizes_bytes", "given together with step_bytes"},
	// Integers: every count bounded, the bound named.
	{"timeout overflows a duration", "timeout_s = 10000000000\n", nil, 2, "timeout_s", "above rsag's bound of 86400 seconds (one day): use at most 86400"},
	{"cycles as a float", "[timing]\ncycles = 1e12\n", nil, 2, "timing.cycles", "takes an integer"},
	{"cycles past the bound", "[timing]\ncycles = 1000000000000\n", nil, 2, "timing.cycles", "above rsag's bound of 100000000 cycles"},
	{"cycles past the bound by -set", "", []string{"timing.cycles=1000000000000"}, 2, "timing.cycles", "use at most 100000000"},
	{"cycles beyond int64 by -set", "", []string{"timing.cycles=99999999999999999999"}, 2, "timing.cycles", "99999999999999999999 is out of range for int64 (timing.cycles takes an integer)"},
	{"cycles below int64 by -set", "", []string{"timing.cycles=-99999999999999999999"}, 2, "timing.cycles", "is out of range for int64"},
	{"payload beyond int64 by -set", "", []string{"memory.payload_bytes=99999999999999999999"}, 2, "memory.payload_bytes", "out of range"},
	{"warmups past the bound", "[timing]\nwarmups = 1000001\n", nil, 2, "timing.warmups", "above rsag's bound of 1000000 warm-ups"},
	{"batch past the bound", "[timing]\nbatch = 10001\n", nil, 2, "timing.batch", "above rsag's bound of 10000 operations per sample"},
	{"discard past cycles", "[timing]\ncycles = 10\ndiscard = 9223372036854775807\n", nil, 2, "timing.discard", "0 to cycles-1 (9)"},
	{"negative discard", "[timing]\ndiscard = -1\n", nil, 2, "timing.discard", "0 to cycles-1"},
	{"required ranks past the bound", "required_ranks = 100000000\n", nil, 2, "required_ranks", "above rsag's bound of 16777216 ranks"},
	{"int64 overflow", "[timing]\ncycles = 9223372036854775808\n", nil, 2, "timing.cycles", "out of range for int64"},
	{"negative seed", "[numerics]\nenabled = true\nseed = -1\n", nil, 2, "numerics.seed", "give a seed from 0 to 9007199254740991"},
	{"seed past 2^53", "[numerics]\nenabled = true\nseed = 9007199254740992\n", nil, 2, "numerics.seed", "above rsag's bound of 9007199254740991"},
	{"too many runs", strings.Repeat("[[run]]\n", 65), nil, 2, "run", "65 [[run]] tables are above rsag's bound of 64"},
	// Floats: NaN and the infinities refused everywhere.
	{"nan gate", "[timing]\nmin_busbw_gbps = nan\n", nil, 2, "timing.min_busbw_gbps", "nan is not a number: give the bus bandwidth in GB/s"},
	{"inf gate", "[timing]\nmin_busbw_gbps = inf\n", nil, 2, "timing.min_busbw_gbps", "+Inf is not finite"},
	{"-inf gate", "[timing]\nmin_busbw_gbps = -inf\n", nil, 2, "timing.min_busbw_gbps", "-Inf is not finite"},
	{"nan gate by -set", "", []string{"timing.min_busbw_gbps=nan"}, 2, "timing.min_busbw_gbps", "nan is not a number"},
	{"nan gate in a run", "[[run]]\nname = \"x\"\nmin_busbw_gbps = -nan\n", nil, 2, "run x: min_busbw_gbps", "nan is not a number"},
	{"absurd gate", "[timing]\nmin_busbw_gbps = 1e9\n", nil, 2, "timing.min_busbw_gbps", "above rsag's bound of 100000 GB/s"},
	{"unknown check", "[timing]\ncheck = \"some\"\n", nil, 2, "timing.check", `"some" is not a check policy: use "every"`},
	{"empty check in a run", "[[run]]\nname = \"x\"\ncheck = \"\"\n", nil, 2, "run x: check", `"" is not a check policy`},
	{"check by -set", "", []string{"timing.check=1"}, 2, "timing.check", "check takes a string"},
	// Duplicates, named.
	{"duplicate size", "[timing]\nsizes_bytes = [1024, \"1K\"]\n", nil, 2, "timing.sizes_bytes", "1024 is listed twice"},
	{"duplicate dtype", "[timing]\ndtypes = [\"float32\", \"int8\", \"float32\"]\n", nil, 2, "timing.dtypes", `"float32" is listed twice`},
	{"duplicate op", "[timing]\nops = [\"max\", \"max\"]\n", nil, 2, "timing.ops", `"max" is listed twice`},
	{"duplicate placement", "[timing]\nplacements = [\"in-place\", \"in-place\"]\n", nil, 2, "timing.placements", `"in-place" is listed twice`},
	{"duplicate method", "[timing]\nmethods = [\"batched\", \"batched\"]\n", nil, 2, "timing.methods", `"batched" is listed twice`},
	{"duplicate mode", "[timing]\nmodes = [\"direct\", \"decomposed\", \"direct\"]\n", nil, 2, "timing.modes", `"direct" is listed twice`},
	{"duplicate buffers", "[timing]\nbuffers = [\"plain\", \"plain\"]\n", nil, 2, "timing.buffers", `"plain" is listed twice`},
	{"duplicate cta policy", "[timing]\ncta_policies = [\"zero\", \"zero\"]\n", nil, 2, "timing.cta_policies", `"zero" is listed twice`},
	{"duplicate memory mode", "[memory]\nmodes = [\"allreduce-full\", \"allreduce-full\"]\n", nil, 2, "memory.modes", `"allreduce-full" is listed twice`},
	{"duplicate numerics dtype", "[numerics]\nenabled = true\ndtypes = [\"float64\", \"float64\"]\n", nil, 2, "numerics.dtypes", `"float64" is listed twice`},
	{"duplicate numerics size", "[numerics]\nenabled = true\nsizes_bytes = [\"1M\", 1048576]\n", nil, 2, "numerics.sizes_bytes", "1048576 is listed twice"},
	{"duplicate in a run", "[[run]]\nname = \"x\"\nops = [\"sum\", \"sum\"]\n", nil, 2, "run x: ops", `"sum" is listed twice`},
	// Unknown names, with the known ones listed.
	{"unknown mode", "[timing]\nmodes = [\"tree\"]\n", nil, 2, "timing.modes", `"tree" is unknown: use direct, decomposed, reduce-scatter, all-gather, hierarchical`},
	{"unknown buffers", "[timing]\nbuffers = [\"pinned\"]\n", nil, 2, "timing.buffers", "use plain, registered, symmetric"},
	{"unknown cta policy", "[timing]\ncta_policies = [\"none\"]\n", nil, 2, "timing.cta_policies", "use default, efficiency, zero"},
	{"unknown dtype in a run", "[[run]]\nname = \"x\"\ndtypes = [\"float8\"]\n", nil, 2, "run.dtypes", `"float8" is unknown: use int8, uint8`},
	{"numerics on integers", "[numerics]\nenabled = true\ndtypes = [\"int32\"]\n", nil, 2, "numerics.dtypes", "int32 is not a float type, and only floats round: use float16, bfloat16, float32, float64"},
	{"empty numerics", "[numerics]\nenabled = true\nsizes_bytes = []\n", nil, 2, "numerics.sizes_bytes", "is empty"},
	{"empty modes", "[timing]\nmodes = []\n", nil, 2, "timing.modes", "is empty: list at least one of direct, decomposed"},
	// Keys a table does not take; one key spelt twice.
	{"enabled in a run", "[[run]]\nname = \"x\"\nenabled = false\n", nil, 2, "run.enabled", "a [[run]] takes batch, buffers, check, cta_policies, cycles"},
	{"unknown in a run", "[[run]]\nname = \"x\"\nwarmup = 1\n", nil, 2, "run.warmup", `in [[run]] 1: did you mean "run.warmups"?`},
	{"empty run list", "run = []\n", nil, 2, "run", "lists no runs"},
	{"run as a table", "[run]\ncycles = 3\n", nil, 2, "run", "write each sweep as a [[run]] table"},
	{"quoted twice", "[timing]\ncycles = 3\n\"cycles\" = 4\n", nil, 2, "timing.cycles", "line 3: is given twice (written bare, quoted or dotted, it is one key): give it once"},
	{"dotted and table", "timing.\"cycles\" = 3\n[timing]\ncycles = 4\n", nil, 2, "timing.cycles", "is given twice"},
	{"case twice", "[timing]\ncycles = 3\nCycles = 4\n", nil, 2, "timing.Cycles", `did you mean "timing.cycles"? (keys are case-sensitive)`},
	{"case at the top", "backend = \"mpi\"\nBackend = \"nccl\"\n", nil, 2, "Backend", `did you mean "backend"?`},
	{"case of a table", "[Timing]\ncycles = 4\n", nil, 2, "Timing.cycles", `did you mean "timing.cycles"?`},
	{"case in a run", "[[run]]\nname = \"x\"\nCYCLES = 3\n", nil, 2, "run.CYCLES", `did you mean "run.cycles"? (keys are case-sensitive)`},
	{"case by -set", "", []string{"timing.Cycles=3"}, 2, "timing.Cycles", `did you mean "timing.cycles"?`},
	// -set for runs.
	{"-set run.key", runsDoc, []string{"run.cycles=3"}, 2, "run.cycles", "-set run.NAME.cycles=3 changes the run named NAME, and -set timing.cycles=3 every run that does not set cycles itself; the runs are a, b.c"},
	{"-set run.key without runs", "", []string{"run.cycles=3"}, 2, "run.cycles", "no [[run]] tables, so [timing] is its one run: use -set timing.cycles=3"},
	{"-set run.NAME without runs", "", []string{"run.default.cycles=3"}, 2, "run.default.cycles", "use -set timing.cycles=3"},
	{"-set unknown run", runsDoc, []string{"run.z.cycles=3"}, 2, "run.z.cycles", `no [[run]] is named "z": the runs are a, b.c`},
	{"-set unknown run key", runsDoc, []string{"run.a.cycle=3"}, 2, "run.cycle", `did you mean "run.cycles"?`},
	{"-set run enabled", runsDoc, []string{"run.a.enabled=false"}, 2, "run.enabled", "a [[run]] takes batch"},
	{"-set run bad value", runsDoc, []string{"run.a.cycles=0"}, 2, "run a: cycles", "use at least 1"},
	{"-set run wrong type", runsDoc, []string{"run.a.cycles=[1]"}, 2, "run.a.cycles", "(run.cycles takes an integer)"},
	{"-set run whole", runsDoc, []string{`run=[{name="x"}]`}, 2, "run", "[[run]] tables are the file's: change one run's key with -set run.NAME.key=value; the runs are a, b.c"},
	{"-set quoted run", runsDoc, []string{`"run"=[{name="x"}]`}, 2, "run", "[[run]] tables are the file's"},
	{"-set quoted run table", runsDoc, []string{`"run".cycles=3`}, 2, "run", "[[run]] tables are the file's"},
	{"-set run list and range", runsDoc, []string{`run.a.sizes_bytes=[64]`, `run.a.min_bytes=64`}, 2, "run a: min_bytes", "the range 64..0 is empty"},
	{"-set with a line break", "", []string{"timing.cycles=3\n[memory]\nenabled=false"}, 2, "", "holds a line break: give one key per -set"},
	// A file's bad value is bad whatever the flags say.
	{"bad backend under -backend", "backend = \"gloo\"\n", []string{"backend=mpi"}, 2, "backend", `"gloo" is not a backend: use one of auto, nccl, mpi`},
	{"bad file value under -set", "[timing]\ncycles = 0\n", []string{"timing.cycles=3"}, 2, "timing.cycles", "0: use at least 1"},
	// Hierarchy.
	{"grouped memory mode without groups", "", []string{`memory.modes=["hierarchical-lifetime"]`}, 2, "memory.modes", `"hierarchical-lifetime" runs within and across the hierarchy's groups, but [hierarchy] is off: set [hierarchy] enabled = true (-set hierarchy.enabled=true), or drop it`},
	{"grouped memory mode with groups off", "[hierarchy]\nenabled = false\n[memory]\nmodes = [\"allreduce-full\", \"hierarchical-lifetime\"]\n", nil, 2, "memory.modes", `"hierarchical-lifetime" runs within and across`},
	{"grouped timed mode without groups", "", []string{`timing.modes=["direct","hierarchical-all-gather"]`}, 2, "timing.modes", `"hierarchical-all-gather" runs within and across the hierarchy's groups, but [hierarchy] is off`},
	{"grouped timed mode in a run", "[[run]]\nname = \"h\"\nmodes = [\"hierarchical\"]\n", nil, 2, "run h: modes", `"hierarchical" runs within and across`},
	{"group of one", "[hierarchy]\nenabled = true\ngroup_size = 1\n", nil, 4, "hierarchy.group_size", "at least 2, or 0 for the ranks per node"},
	{"negative group", "[hierarchy]\nenabled = true\ngroup_size = -2\n", nil, 4, "hierarchy.group_size", "at least 2"},
	{"group does not divide", "[hierarchy]\nenabled = true\ngroup_size = 3\n", nil, 4, "hierarchy.group_size", "group_size 3 does not divide the world size 4, so the ranks cannot form equal groups: use a divisor of 4 (2, 4)"},
	{"group larger than the world", "[hierarchy]\nenabled = true\ngroup_size = 8\n", nil, 4, "hierarchy.group_size", "group_size 8 does not divide the world size 4"},
	// Soak.
	{"soak without a length", "[soak]\nenabled = true\n", nil, 2, "soak.duration_s", "is missing: give soak.duration_s (the seconds the soak runs, e.g. 60) or soak.iterations"},
	{"soak with both lengths", "[soak]\nenabled = true\nduration_s = 5\niterations = 5\n", nil, 2, "soak.iterations", "is given together with soak.duration_s: give one of them"},
	{"soak negative duration", "[soak]\nenabled = true\nduration_s = -5\n", nil, 2, "soak.duration_s", "-5 is negative: give the seconds the soak runs"},
	{"soak absurd duration", "[soak]\nenabled = true\nduration_s = 99999999\n", nil, 2, "soak.duration_s", "above rsag's bound of 604800 seconds (a week)"},
	{"soak absurd iterations by -set", "", []string{"soak.enabled=true", "soak.iterations=1e12"}, 2, "soak.iterations", "takes an integer"},
	{"soak negative fail_after", "[soak]\nenabled = true\niterations = 5\nfail_after = -1\n", nil, 2, "soak.fail_after", "-1 is negative: give the failed iterations after which the soak stops"},
	{"soak negative seed", "[soak]\nenabled = true\niterations = 5\nseed = -1\n", nil, 2, "soak.seed", "-1 is negative"},
	{"soak list and range", "[soak]\nenabled = true\niterations = 5\nsizes_bytes = [64]\nmax_bytes = 128\n", nil, 2, "soak.sizes_bytes", "given together with min_bytes or max_bytes"},
	{"soak empty range", "[soak]\nenabled = true\niterations = 5\nmin_bytes = 128\nmax_bytes = 64\n", nil, 2, "soak.min_bytes", "the range 128..64 is empty"},
	{"soak size past the bound", "[soak]\nenabled = true\niterations = 5\nmax_bytes = \"2048G\"\n", nil, 2, "soak.max_bytes", "above rsag's bound of 1024G"},
	{"soak unknown dtype", "[soak]\nenabled = true\niterations = 5\ndtypes = [\"int16\"]\n", nil, 2, "soak.dtypes", `"int16" is unknown: use`},
	{"soak no ops", "[soak]\nenabled = true\niterations = 5\nops = []\n", nil, 2, "soak.ops", "is empty: list at least one of sum"},
	{"soak placement twice", "[soak]\nenabled = true\niterations = 5\nplacements = [\"in-place\", \"in-place\"]\n", nil, 2, "soak.placements", `"in-place" is listed twice`},
	{"soak misaligned offset", "[timing]\nenabled = false\n[memory]\nenabled = false\n[soak]\nenabled = true\niterations = 5\noffsets = [0, 4]\n", nil, 2, "soak.offsets", "4 bytes is not a multiple of int64's 8-byte elements"},
	{"soak offset past the bound", "[soak]\nenabled = true\niterations = 5\noffsets = [\"2M\"]\n", nil, 2, "soak.offsets", "give offsets from 0 to rsag's bound of 1048576 bytes"},
	{"soak size does not divide", "[timing]\nenabled = false\n[memory]\nenabled = false\n[soak]\nenabled = true\niterations = 5\nsizes_bytes = [100]\n", nil, 3, "soak.sizes_bytes", "100 bytes does not divide by 3 ranks x 1 bytes (int8)"},
	{"soak with nothing checkable on many ranks", "[timing]\nenabled = false\n[memory]\nenabled = false\n[soak]\nenabled = true\niterations = 5\ndtypes = [\"int8\", \"uint8\"]\nops = [\"prod\"]\n", nil, 16, "soak.dtypes", "no pair of soak.dtypes and soak.ops (int8 prod, uint8 prod) can be checked on 16 ranks"},
	{"soak unknown key", "[soak]\nenabled = true\niterations = 5\nfail_afer = 2\n", nil, 2, "soak.fail_afer", `did you mean "soak.fail_after"?`},
	{"numerics not divisible", "[timing]\nsizes_bytes = [1536]\n[memory]\nenabled = false\n[numerics]\nenabled = true\n", nil, 3, "numerics.sizes_bytes", "4096 bytes does not divide by 3 ranks x 4 bytes (float32) = 12"},
}

func manySizes(n int) string {
	var s []string
	for i := 1; i <= n; i++ {
		s = append(s, fmt.Sprint(i*4096))
	}
	return strings.Join(s, ", ")
}

// Every hostile input is refused with a *config.Error that names the key
// and says the fix.
func TestHostileInputs(t *testing.T) {
	for _, c := range hostileInputs {
		t.Run(c.name, func(t *testing.T) {
			wantError(t, c.file, c.sets, c.world, c.key, c.want)
		})
	}
}

// The error names the input at fault: the file for its own values, -set
// for what the flags made of a valid file.
func TestErrorsNameTheirSource(t *testing.T) {
	_, err := Parse("x.toml", []byte("backend = \"gloo\"\n"), []string{"backend=mpi"})
	if err == nil || !strings.HasPrefix(err.Error(), "x.toml: backend: ") {
		t.Errorf("a bad file value: %v", err)
	}
	_, err = Parse("x.toml", nil, []string{"timing.cycles=0"})
	if err == nil || !strings.HasPrefix(err.Error(), "-set: timing.cycles: 0: use at least 1") {
		t.Errorf("a bad -set value: %v", err)
	}
	_, err = Parse("x.toml", nil, []string{"timing.warmups=x y"})
	if err == nil || !strings.HasPrefix(err.Error(), "-set timing.warmups=x y: timing.warmups: ") {
		t.Errorf("a -set of the wrong type: %v", err)
	}
}

// The bounds themselves are accepted: they are limits, not typos.
func TestBoundsAreInclusive(t *testing.T) {
	doc := fmt.Sprintf("timeout_s = %d\nrequired_ranks = 2\n[timing]\nsizes_bytes = [\"1024G\"]\ncycles = %d\nwarmups = %d\nbatch = %d\nmin_busbw_gbps = %d\n"+
		"[numerics]\nenabled = true\nseed = %d\n[hierarchy]\nenabled = true\ngroup_size = 2\n",
		MaxTimeoutS, MaxCycles, MaxWarmups, MaxBatch, MaxBusBWGBps, MaxSeed)
	cfg, err := Parse("b.toml", []byte(doc), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(2); err != nil {
		t.Fatal(err)
	}
	r := cfg.Sweeps[0]
	if r.Cycles != MaxCycles || r.SizesBytes[0] != MaxSizeBytes || cfg.Numerics.Seed != MaxSeed {
		t.Errorf("bounds not kept: %+v", r)
	}
	// The widest factor range: 1 byte to 1 TiB by 2 is 41 sizes, none wrapped.
	cfg, err = Parse("b.toml", []byte("[timing]\nmin_bytes = 1\nmax_bytes = \"1024G\"\nfactor = 2\n"), nil)
	if err != nil || len(cfg.Sweeps[0].SizesBytes) != 41 || cfg.Sweeps[0].SizesBytes[40] != MaxSizeBytes {
		t.Errorf("1..1T by 2: %v, %v", cfg.Sweeps, err)
	}
	if s, err := ParseSize("-8388608T"); err == nil {
		t.Errorf("ParseSize accepted an unknown suffix: %d", s)
	}
	if s, err := ParseSize("-9007199254740992K"); err != nil || s != -1<<63 {
		t.Errorf("ParseSize(-2^53 K) = %d, %v: the one value at the edge must parse exactly", s, err)
	}
}

// The shipped soak config runs on any width: on 16 and 64 ranks the pairs
// it cannot check there (int8 and uint8 products on 16; every product and
// int8's sums, maxima and minima on 64) are skipped, not refused, and the
// rest are drawn.
func TestTheSoakConfigRunsAtWidth(t *testing.T) {
	data, err := os.ReadFile("../configs/soak.toml")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := Parse("soak.toml", data, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, world := range []int{16, 64} {
		if err := cfg.Validate(world); err != nil {
			t.Errorf("%d ranks: %v", world, err)
		}
		drawn, skipped := cfg.Soak.Spec().Pairs(world)
		t.Logf("%d ranks: %d pairs drawn, %v skipped", world, len(drawn), skipped)
		if len(drawn)+len(skipped) != 32 || len(drawn) < 20 || !slices.Contains(drawn, phases.SoakPair{DType: coll.Float64, Op: coll.Sum}) {
			t.Errorf("%d ranks: %v drawn, %v skipped", world, drawn, skipped)
		}
		if world == 16 && fmt.Sprint(skipped) != "[int8 prod uint8 prod]" {
			t.Errorf("16 ranks: %v skipped, want the int8 and uint8 products alone", skipped)
		}
	}
}
