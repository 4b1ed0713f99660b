package config

import "testing"

// Issue 34 class 9: a section that is off is validated as one that is on;
// class 12: a key given as zero, where zero stands for "not given", is an
// error, not ignored. From the file and from -set alike.
func TestOffSectionsAndGivenZerosAreRefused(t *testing.T) {
	for _, c := range []struct {
		name, file string
		sets       []string
		key, want  string
	}{
		{"locate off, threshold nan", "[locate]\nthreshold = nan\n", nil, "locate.threshold", "nan"},
		{"locate off, threshold by -set", "", []string{"locate.threshold=nan"}, "locate.threshold", "nan"},
		{"timing off, check", "[timing]\nenabled = false\ncheck = \"sometimes\"\n", nil, "timing.check", "not a check policy"},
		{"timing off, cycles 0", "[timing]\nenabled = false\ncycles = 0\n", nil, "timing.cycles", "at least 1"},
		{"memory off, modes", "[memory]\nenabled = false\nmodes = [\"nope\"]\n", nil, "memory.modes", "nope"},
		{"soak off, fail_after", "[soak]\nfail_after = -1\n", nil, "soak.fail_after", "negative"},
		{"soak min_bytes 0", "[soak]\nenabled = true\niterations = 5\nmin_bytes = 0\n", nil, "soak.min_bytes", "would be ignored"},
		{"soak min_bytes 0 by -set", "[soak]\nenabled = true\nduration_s = 5\n", []string{"soak.min_bytes=0"}, "soak.min_bytes", "would be ignored"},
		{"soak max_bytes 0", "[soak]\nenabled = true\niterations = 5\nmax_bytes = 0\n", nil, "soak.max_bytes", "would be ignored"},
		{"soak sizes []", "[soak]\nenabled = true\niterations = 5\nsizes_bytes = []\n", nil, "soak.sizes_bytes", "= [] would be ignored"},
		{"soak off, max_bytes 0", "[soak]\nmax_bytes = 0\n", nil, "soak.max_bytes", "would be ignored"},
	} {
		t.Run(c.name, func(t *testing.T) { wantError(t, c.file, c.sets, 4, c.key, c.want) })
	}
	// Off with its defaults, or with good values, a section is no error.
	for _, file := range []string{"[soak]\niterations = 5\n", "[locate]\nthreshold = 0.5\n", "[timing]\nenabled = false\ncycles = 3\n"} {
		if _, err := Parse("ok.toml", []byte(file), nil); err != nil {
			t.Errorf("%q: %v", file, err)
		}
	}
}
