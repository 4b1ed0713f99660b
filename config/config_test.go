package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestEveryShippedConfigLoads(t *testing.T) {
	files, err := filepath.Glob("../configs/*.toml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no configs found: %v", err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := Parse(f, data, nil)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		world := cfg.RequiredRanks
		if world == 0 {
			world = 2
		}
		if err := cfg.Validate(world); err != nil {
			t.Errorf("%s on %d ranks: %v", f, world, err)
		}
	}
}

func TestCh7ReproducesTheSeed(t *testing.T) {
	data, err := os.ReadFile("../configs/ch7.toml")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := Parse("ch7.toml", data, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []Size{1024, 65536, 1048576, 16777216, 268435456}
	if !reflect.DeepEqual(cfg.Timing.SizesBytes, want) || cfg.Timing.Warmups != 3 || cfg.Timing.Cycles != 10 ||
		cfg.Memory.PayloadBytes != 268435456 || cfg.RequiredRanks != 4 ||
		!cfg.Contracts.Enabled || !cfg.Timing.Enabled || !cfg.Memory.Enabled {
		t.Errorf("ch7.toml is not the seed's run: %+v", cfg)
	}
	if err := cfg.Validate(2); err == nil || !strings.Contains(err.Error(), "requires exactly 4 ranks but the job has 2") {
		t.Errorf("ch7 on 2 ranks: got %v", err)
	}
}

func TestTimeoutDefaultAndOverride(t *testing.T) {
	cfg, err := Parse("x.toml", nil, nil)
	if err != nil || cfg.TimeoutS != 180 {
		t.Fatalf("default timeout_s = %v, %v; want 180 (the seed's process-group timeout)", cfg.TimeoutS, err)
	}
	cfg, err = Parse("x.toml", []byte("timeout_s = 30\n"), []string{"timeout_s=2"})
	if err != nil || cfg.TimeoutS != 2 {
		t.Fatalf("timeout_s = %v, %v; want 2 from -set", cfg.TimeoutS, err)
	}
	// Fractions, for a deadline a test can shorten: half a second.
	cfg, err = Parse("x.toml", []byte("timeout_s = 0.25\n"), []string{"timeout_s=0.5", "startup_timeout_s=1.5"})
	if err != nil || cfg.Timeout() != 500*time.Millisecond || cfg.StartupTimeoutS != 1.5 {
		t.Fatalf("timeout_s = %v (%v), startup_timeout_s = %v, %v; want 0.5 s and 1.5 from -set", cfg.TimeoutS, cfg.Timeout(), cfg.StartupTimeoutS, err)
	}
}

func TestSetOverrides(t *testing.T) {
	cfg, err := Parse("x.toml", nil, []string{"required_ranks=2", "timing.sizes_bytes=[1024, \"64K\"]",
		"backend=mpi", "memory.payload_bytes=\"2M\"", "timing.enabled=false"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.RequiredRanks != 2 || !reflect.DeepEqual(cfg.Timing.SizesBytes, []Size{1024, 65536}) ||
		cfg.Backend != "mpi" || cfg.Memory.PayloadBytes != 2<<20 || cfg.Timing.Enabled {
		t.Errorf("overrides not applied: %+v", cfg)
	}
}

// badInputs are bad configs and -set flags, each with the key it must name
// and the fix it must say; they also seed FuzzParse.
var badInputs = []struct {
	name, file string
	sets       []string
	world      int
	key, want  string
}{
	{"unknown key", "[timing]\nsizes_byte = [1024]\n", nil, 2, "timing.sizes_byte", `did you mean "timing.sizes_bytes"`},
	{"unknown table", "[timming]\nwarmups = 1\n", nil, 2, "timming.warmups", `did you mean "timing.warmups"`},
	{"unknown top key", "backnd = \"mpi\"\n", nil, 2, "backnd", `did you mean "backend"`},
	{"unknown key far from any", "[soak]\nzzzzzzzz = 1\n", nil, 2, "soak.zzzzzzzz", "[soak] takes soak.dtypes, soak.duration_s"},
	{"unknown top key far from any", "zzzzzzzz = 1\n", nil, 2, "zzzzzzzz", "known top-level keys: backend, end_on_stuck_rank, history, metrics_dir, rank_folder_above, required_ranks, startup_timeout_s, timeout_s; tables: [contracts]"},
	{"wrong type", "[timing]\nwarmups = \"three\"\n", nil, 2, "timing.warmups", "takes an integer"},
	{"history file with an option", "history = \"h.db?mode=memory\"\n", nil, 2, "history", "holds ? or #, which SQLite reads as options"},
	{"wrong list type", "[timing]\nsizes_bytes = 1024\n", nil, 2, "timing.sizes_bytes", "list of byte sizes"},
	{"bad size text", "[memory]\npayload_bytes = \"12Q\"\n", nil, 2, "memory.payload_bytes", "not a byte size"},
	{"syntax", "[timing\n", nil, 2, "", "line 2: expected"},
	{"zero cycles", "[timing]\ncycles = 0\n", nil, 2, "timing.cycles", "at least 1"},
	{"negative warmups", "[timing]\nwarmups = -1\n", nil, 2, "timing.warmups", "negative"},
	{"negative size", "[timing]\nsizes_bytes = [-1024]\n", nil, 2, "timing.sizes_bytes", "not a positive size"},
	{"empty sizes", "[timing]\nsizes_bytes = []\n", nil, 2, "timing.sizes_bytes", "is empty"},
	{"zero payload", "[memory]\npayload_bytes = 0\n", nil, 2, "memory.payload_bytes", "not a positive size"},
	{"unknown mode", "[memory]\nmodes = [\"all\"]\n", nil, 2, "memory.modes", "not a memory mode"},
	{"unknown backend", "backend = \"gloo\"\n", nil, 2, "backend", "use one of auto, nccl, mpi"},
	{"zero required ranks", "required_ranks = 0\n", nil, 2, "required_ranks", "at least 2"},
	{"required ranks mismatch", "required_ranks = 4\n", nil, 3, "required_ranks", "mpirun -np 4"},
	{"not divisible", "[timing]\nsizes_bytes = [1000]\n", nil, 3, "timing.sizes_bytes", "use a multiple of 12, e.g. 996 or 1008"},
	{"payload not divisible", "[memory]\npayload_bytes = 1000\n", nil, 16, "memory.payload_bytes", "multiple of 64"},
	{"one rank", "", nil, 1, "", "needs at least 2"},
	{"zero timeout", "timeout_s = 0\n", nil, 2, "timeout_s", "0 is not a deadline: give the seconds any collective may take before the job is aborted, above 0, e.g. 0.5 or 180 (default 180)"},
	{"negative timeout", "", []string{"timeout_s=-5"}, 2, "timeout_s", "is not a deadline"},
	{"timeout as text", "timeout_s = \"3m\"\n", nil, 2, "timeout_s", "takes a number"},
	{"timeout below a millisecond", "", []string{"timeout_s=0.0001"}, 2, "timeout_s", "0.0001 is below rsag's bound of 0.001 seconds"},
	{"negative fraction", "", []string{"timeout_s=-0.5"}, 2, "timeout_s", "-0.5 is not a deadline"},
	{"nan timeout", "", []string{"timeout_s=nan"}, 2, "timeout_s", "nan is not a number: give the seconds any collective may take"},
	{"infinite timeout", "timeout_s = inf\n", nil, 2, "timeout_s", "+Inf is not finite"},
	{"negative start-up", "", []string{"startup_timeout_s=-1"}, 2, "startup_timeout_s", "-1 is not a deadline: give the seconds MPI's start-up may take"},
	{"start-up as text", "", []string{"startup_timeout_s=\"1m\""}, 2, "startup_timeout_s", "takes a number"},
	{"negative rank folder", "rank_folder_above = -1\n", nil, 2, "rank_folder_above", "or 0 for always (default 64)"},
	{"all disabled", "[contracts]\nenabled=false\n[timing]\nenabled=false\n[memory]\nenabled=false\n", nil, 2, "enabled", "enable at least one"},
	{"bad -set", "", []string{"timing.warmups"}, 2, "", "expected section.key=value"},
	{"unknown -set key", "", []string{"timing.warmup=3"}, 2, "timing.warmup", `did you mean "timing.warmups"`},
	{"wrong -set type", "", []string{"timing.cycles=[1]"}, 2, "timing.cycles", "takes an integer"},
}

// wantError checks that file with sets, on world ranks, is refused by Parse
// or Validate with a *config.Error naming key whose message holds want.
func wantError(t *testing.T, file string, sets []string, world int, key, want string) {
	t.Helper()
	cfg, err := Parse("bad.toml", []byte(file), sets)
	if err == nil {
		err = cfg.Validate(world)
	}
	var cerr *Error
	if !errors.As(err, &cerr) {
		t.Fatalf("want a *config.Error, got %v", err)
	}
	if cerr.Key != key || !strings.Contains(err.Error(), want) {
		t.Errorf("got key %q, error %q; want key %q and %q", cerr.Key, err, key, want)
	}
}

// Every bad input names the key at fault and says what to do.
func TestBadInputs(t *testing.T) {
	cases := badInputs
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wantError(t, c.file, c.sets, c.world, c.key, c.want)
		})
	}
}

func TestParseSize(t *testing.T) {
	for text, want := range map[string]Size{"1024": 1024, "1K": 1024, "64k": 65536, "256M": 268435456,
		"1G": 1 << 30, "2 MiB": 2 << 20, "0": 0} {
		got, err := ParseSize(text)
		if err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", text, got, err, want)
		}
	}
	for _, text := range []string{"", "K", "1T", "1.5M", "abc", "99999999999999999999"} {
		if _, err := ParseSize(text); err == nil {
			t.Errorf("ParseSize(%q) accepted", text)
		}
	}
	for s, want := range map[Size]string{1024: "1K", 268435456: "256M", 1000: "1000", 1 << 30: "1G", 1536: "1536"} {
		if s.String() != want {
			t.Errorf("Size(%d).String() = %q, want %q", int64(s), s.String(), want)
		}
	}
}

// MPI's start-up is bounded by a -set startup_timeout_s above 0, else a
// -set timeout_s when it is valid, else by the default: the file is read
// only once MPI has started.
func TestStartupTimeout(t *testing.T) {
	for _, c := range []struct {
		sets []string
		want time.Duration
	}{
		{nil, DefaultTimeoutS * time.Second},
		{[]string{"timing.cycles=3"}, DefaultTimeoutS * time.Second},
		{[]string{"timeout_s=5"}, 5 * time.Second},
		{[]string{" timeout_s = 7 ", "timing.cycles=3"}, 7 * time.Second},
		{[]string{"timeout_s=0.5"}, 500 * time.Millisecond},
		{[]string{"timeout_s=0"}, DefaultTimeoutS * time.Second},
		{[]string{"timeout_s=10000000000"}, DefaultTimeoutS * time.Second},
		{[]string{"timeout_s=x"}, DefaultTimeoutS * time.Second},
		{[]string{"timeout_s=nan"}, DefaultTimeoutS * time.Second},
		// startup_timeout_s comes first, in either order; 0 leaves it to timeout_s.
		{[]string{"timeout_s=2", "startup_timeout_s=60"}, 60 * time.Second},
		{[]string{"startup_timeout_s=60", "timeout_s=2"}, 60 * time.Second},
		{[]string{"startup_timeout_s=60"}, 60 * time.Second},
		{[]string{"timeout_s=0.5", "startup_timeout_s=2.5"}, 2500 * time.Millisecond},
		{[]string{"timeout_s=2", "startup_timeout_s=0"}, 2 * time.Second},
		{[]string{"timeout_s=2", "startup_timeout_s=-1"}, 2 * time.Second},
		{[]string{"timeout_s=2", "startup_timeout_s=10000000000"}, 2 * time.Second},
	} {
		if got := StartupTimeout(c.sets); got != c.want {
			t.Errorf("StartupTimeout(%q) = %v, want %v", c.sets, got, c.want)
		}
	}
}
