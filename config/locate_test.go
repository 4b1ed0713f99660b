package config

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// Every [locate] key is bounded, checked for its type, sign, overflow,
// NaN and infinity, and duplicates, and named with its fix.
var locateInputs = []struct {
	name, file string
	sets       []string
	key, want  string
}{
	{"one size", "sizes_bytes = [\"8K\"]", nil, "locate.sizes_bytes", "give at least two, a latency-bound one and a bandwidth-bound one"},
	{"no sizes", "sizes_bytes = []", nil, "locate.sizes_bytes", "lists 0 size"},
	{"a size twice", "sizes_bytes = [\"8K\", 8192]", nil, "locate.sizes_bytes", "8192 is listed twice"},
	{"too many sizes", "sizes_bytes = [" + manySizes(65) + "]", nil, "locate.sizes_bytes", "lists 65 sizes, above rsag's bound of 64"},
	{"size above the bound", "sizes_bytes = [\"8K\", \"2048G\"]", nil, "locate.sizes_bytes", "above rsag's bound of 1024G"},
	{"negative size", "sizes_bytes = [-8, 8192]", nil, "locate.sizes_bytes", "not a positive size"},
	{"size wraps", "", []string{`locate.sizes_bytes=["8K","-18014398509481983K"]`}, "locate.sizes_bytes", "out of range for a byte size"},
	{"no collectives", "collectives = []", nil, "locate.collectives", "is empty: list at least one of all-reduce, reduce-scatter, all-gather"},
	{"unknown collective", "collectives = [\"broadcast\"]", nil, "locate.collectives", `"broadcast" is not a collective: use all-reduce, reduce-scatter, all-gather`},
	{"a collective twice", "collectives = [\"all-reduce\", \"all-reduce\"]", nil, "locate.collectives", `"all-reduce" is listed twice`},
	{"collectives not strings", "collectives = [1]", nil, "locate.collectives", "locate.collectives takes a list of strings"},
	{"no repeats", "repeats = 0", nil, "locate.repeats", "0: give the measurements of each unit, at least 1"},
	{"repeats past the bound", "repeats = 1001", nil, "locate.repeats", "above rsag's bound of 1000 repeats: use at most 1000"},
	{"repeats overflow", "repeats = 9223372036854775808", nil, "locate.repeats", "out of range for int64"},
	{"repeats as a float", "repeats = 3.5", nil, "locate.repeats", "takes an integer"},
	{"no iterations", "iterations = 0", nil, "locate.iterations", "at least 1"},
	{"iterations past the bound", "", []string{"locate.iterations=10001"}, "locate.iterations", "above rsag's bound of 10000 operations per measurement"},
	{"negative warmups", "warmups = -1", nil, "locate.warmups", "-1 is negative"},
	{"warmups past the bound", "warmups = 1001", nil, "locate.warmups", "above rsag's bound of 1000 warm-ups"},
	{"max_full_nodes of one", "max_full_nodes = 1", nil, "locate.max_full_nodes", "at least 2 (default 64)"},
	{"max_full_nodes past the bound", "max_full_nodes = 16777217", nil, "locate.max_full_nodes", "above rsag's bound of 16777216 nodes"},
	{"min_partners of one", "min_partners = 1", nil, "locate.min_partners", "at least 2 (default 8)"},
	{"min_partners past the bound", "min_partners = 1025", nil, "locate.min_partners", "above rsag's bound of 1024 partners"},
	{"nan threshold", "threshold = nan", nil, "locate.threshold", "nan is not a number: give the fraction of the median"},
	{"inf threshold", "threshold = inf", nil, "locate.threshold", "+Inf is not finite"},
	{"negative threshold", "threshold = -0.5", nil, "locate.threshold", "-0.5 is negative"},
	{"zero threshold", "threshold = 0.0", nil, "locate.threshold", "0: give the fraction of the median below which a unit is slow, above 0 and below 1"},
	{"threshold of one", "threshold = 1.0", nil, "locate.threshold", "above 0 and below 1"},
	{"threshold above one", "threshold = 1.5", nil, "locate.threshold", "1.5 is above rsag's bound of 1"},
	{"threshold as a string", "threshold = \"0.8\"", nil, "locate.threshold", "takes a number"},
	{"gate as a number", "fail_on_suspect = 1", nil, "locate.fail_on_suspect", "takes true or false"},
	{"misspelt key", "treshold = 0.8", nil, "locate.treshold", `did you mean "locate.threshold"?`},
	{"key in another case", "Repeats = 3", nil, "locate.Repeats", "(keys are case-sensitive)"},
	{"key twice", "repeats = 3\n\"repeats\" = 4", nil, "locate.repeats", "is given twice"},
}

func TestLocateInputsAreRefused(t *testing.T) {
	for _, c := range locateInputs {
		t.Run(c.name, func(t *testing.T) {
			file := "[locate]\nenabled = true\n" + c.file + "\n"
			wantError(t, file, c.sets, 4, c.key, c.want)
		})
	}
}

// Off, [locate]'s values are checked all the same (issue 34 class 9: a
// bad value is refused before the run, not at its end), and its defaults
// are the issue's: two sizes, three collectives, three repeats, 0.8, every
// pair up to 64 nodes, 8 partners above.
func TestLocateDefaults(t *testing.T) {
	if _, err := Parse("d.toml", []byte("[locate]\nrepeats = 0\n"), nil); err == nil || !strings.Contains(err.Error(), "locate.repeats") {
		t.Fatalf("a disabled [locate] with a bad value: %v, want locate.repeats refused", err)
	}
	cfg, err := Parse("d.toml", []byte("[locate]\nenabled = true\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	l := cfg.Locate
	if fmt.Sprint(l.SizesBytes) != "[8K 16M]" || len(l.Collectives) != 3 || l.Repeats != 3 || l.Threshold != 0.8 ||
		l.MaxFullNodes != 64 || l.MinPartners != 8 || l.FailOnSuspect {
		t.Errorf("defaults: %+v", l)
	}
	s := l.Spec()
	if len(s.Collectives) != 3 || s.Collectives[0].Name != "all-reduce" || !reflect.DeepEqual(s.SizesBytes, []int64{8 << 10, 16 << 20}) {
		t.Errorf("spec: %+v", s)
	}
	// Every phase but locate off is a valid run.
	if _, err := Parse("d.toml", []byte("[contracts]\nenabled = false\n[timing]\nenabled = false\n[memory]\nenabled = false\n[locate]\nenabled = true\n"), nil); err != nil {
		t.Errorf("locate alone: %v", err)
	}
}

func TestLocateBoundsAreInclusive(t *testing.T) {
	doc := fmt.Sprintf("[locate]\nenabled = true\nsizes_bytes = [1, \"1024G\"]\nrepeats = %d\niterations = %d\nwarmups = %d\n"+
		"max_full_nodes = %d\nmin_partners = %d\nthreshold = 0.999\n", MaxLocateRepeats, MaxLocateIterations, MaxLocateWarmups, MaxRanks, MaxPartners)
	cfg, err := Parse("b.toml", []byte(doc), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(2); err != nil {
		t.Fatal(err)
	}
}
