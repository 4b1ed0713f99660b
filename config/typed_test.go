package config

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"rsag/coll"
)

// Parse resolves every run once into coll's types, with the new
// dimensions defaulting to the seed's.
func TestTimingRunsAreResolvedOnce(t *testing.T) {
	cfg, err := Parse("d.toml", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := coll.Sweep{Name: "default", SizesBytes: []int64{1024, 65536, 1048576, 16777216, 268435456},
		DTypes: []coll.DType{coll.Float32}, Ops: []coll.Op{coll.Sum},
		Placements: []coll.Placement{coll.OutOfPlace}, Methods: []coll.Method{coll.PerOp},
		Modes: coll.DefaultModes, Buffers: []coll.BufferKind{coll.PlainBuffers},
		CTAPolicies: []coll.CTAPolicy{coll.DefaultCTAPolicy}, Offsets: []int64{0}, Batch: 20, Warmups: 3, Cycles: 10}
	if len(cfg.Sweeps) != 1 || !equalRuns(cfg.Sweeps[0], want) {
		t.Errorf("default Sweeps = %+v\nwant %+v", cfg.Sweeps, want)
	}
	doc := "[timing]\nmodes = [\"direct\", \"decomposed\", \"reduce-scatter\", \"all-gather\"]\nbuffers = [\"plain\", \"symmetric\"]\ncta_policies = [\"zero\"]\n" +
		"[[run]]\nname = \"r\"\nbuffers = [\"registered\"]\n"
	cfg, err = Parse("m.toml", []byte(doc), nil)
	if err != nil {
		t.Fatal(err)
	}
	r := cfg.Sweeps[0]
	if !slices.Equal(r.Modes, []coll.Mode{coll.Direct, coll.Decomposed, coll.ReduceScatterAlone, coll.AllGatherAlone}) || !slices.Equal(r.Buffers, []coll.BufferKind{coll.RegisteredBuffers}) ||
		!slices.Equal(r.CTAPolicies, []coll.CTAPolicy{coll.ZeroCTAPolicy}) {
		t.Errorf("run r: %+v", r)
	}
	if cfg.IsSeedCase() {
		t.Error("four modes and other buffers are not the seed's case")
	}
	// Timing off: no runs to time.
	cfg, err = Parse("off.toml", []byte("[timing]\nenabled = false\n"), nil)
	if err != nil || cfg.Sweeps != nil {
		t.Errorf("timing disabled: %v, %v", cfg.Sweeps, err)
	}
}

func equalRuns(a, b coll.Sweep) bool { return reflect.DeepEqual(a, b) }

// -set run.NAME.key=value changes that run only, after its table; a name
// may hold dots; a range replaces the run's list and the other way round.
func TestSetARunByName(t *testing.T) {
	cfg, err := Parse("r.toml", []byte(runsDoc), []string{"run.b.c.cycles=3", "run.a.dtypes=[\"int8\"]",
		"run.b.c.sizes_bytes=[\"8K\"]", "timing.warmups=2", "run.a.warmups=7"})
	if err != nil {
		t.Fatal(err)
	}
	a, b := cfg.Sweeps[0], cfg.Sweeps[1]
	if a.Name != "a" || a.Cycles != 5 || a.Warmups != 7 || !slices.Equal(a.DTypes, []coll.DType{coll.Int8}) ||
		!slices.Equal(a.SizesBytes, []int64{4096}) {
		t.Errorf("run a: %+v", a)
	}
	if b.Name != "b.c" || b.Cycles != 3 || b.Warmups != 2 || !slices.Equal(b.DTypes, []coll.DType{coll.Float32}) ||
		!slices.Equal(b.SizesBytes, []int64{8192}) {
		t.Errorf("run b.c: %+v", b)
	}
	cfg, err = Parse("r.toml", []byte(runsDoc), []string{"run.a.min_bytes=\"1K\"", "run.a.max_bytes=\"4K\"", "run.a.factor=4"})
	if err != nil || !slices.Equal(cfg.Sweeps[0].SizesBytes, []int64{1024, 4096}) {
		t.Errorf("a range over run a's list: %v, %v", cfg.Sweeps, err)
	}
	if cfg.Timing.Cycles != 5 || !slices.Equal(cfg.Timing.SizesBytes, []Size{4096}) {
		t.Errorf("a run's -set wrote into [timing]: %+v", cfg.Timing)
	}
}

func TestNumericsAndHierarchy(t *testing.T) {
	cfg, err := Parse("d.toml", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	n, h := cfg.Numerics, cfg.Hierarchy
	if n.Enabled || !slices.Equal(n.DTypes, []coll.DType{coll.Float32, coll.Float64}) ||
		!slices.Equal(n.SizesBytes, []Size{4 << 10, 1 << 20, 64 << 20}) || n.Seed != 1 || h.Enabled || h.GroupSize != 0 {
		t.Errorf("defaults: %+v %+v", n, h)
	}
	// Off, neither is validated against the world: 4K does not divide by 3 x 8.
	if err := cfg.Validate(4); err != nil {
		t.Error(err)
	}
	doc := "[numerics]\nenabled = true\ndtypes = [\"bfloat16\", \"float16\"]\nsizes_bytes = [\"64K\"]\nseed = 42\n[hierarchy]\nenabled = true\ngroup_size = 2\n"
	cfg, err = Parse("n.toml", []byte(doc), []string{"numerics.seed=7"})
	if err != nil {
		t.Fatal(err)
	}
	if n := cfg.Numerics; !n.Enabled || n.Seed != 7 || !slices.Equal(n.DTypes, []coll.DType{coll.BFloat16, coll.Float16}) {
		t.Errorf("numerics: %+v", n)
	}
	for _, world := range []int{2, 4, 8} {
		if err := cfg.Validate(world); err != nil {
			t.Errorf("group_size 2 on %d ranks: %v", world, err)
		}
	}
	// group_size 0 is the ranks per node, known only when the job runs.
	cfg, err = Parse("h.toml", []byte("[hierarchy]\nenabled = true\n[timing]\nsizes_bytes=[1536]\n[memory]\nenabled=false\n"), nil)
	if err != nil || cfg.Validate(3) != nil {
		t.Errorf("group_size 0 on 3 ranks: %v, %v", err, cfg.Validate(3))
	}
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, n int) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(strings.Repeat("#", n)), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if data, err := ReadFile(write("cap.toml", MaxFileBytes)); err != nil || len(data) != MaxFileBytes {
		t.Errorf("a file of exactly the cap: %d bytes, %v", len(data), err)
	}
	for _, c := range []struct{ path, want string }{
		{write("big.toml", MaxFileBytes+1), "is 1048577 bytes, larger than rsag's cap of 1048576 bytes (1 MiB) on a config file"},
		{dir, "is a directory, not a TOML file"},
		{"/dev/zero", "/dev/zero: is a character device, not a TOML file"},
		{"/dev/null", "is a character device"},
		{filepath.Join(dir, "none.toml"), "none.toml: no such file"},
	} {
		if _, err := ReadFile(c.path); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ReadFile(%s) = %v, want %q", c.path, err, c.want)
		}
	}
}

// A FIFO is refused by its kind, at once and by name: opened for reading
// it would wait for a writer, with every other rank waiting on rank 0.
func TestReadFileRefusesAFIFOAtOnce(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := ReadFile(fifo); done <- err }()
	select {
	case err := <-done:
		want := fifo + ": is a named pipe (FIFO), not a TOML file: give a regular file (write what the pipe would give to a file first"
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("a FIFO: %v, want %q", err, want)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("ReadFile of a FIFO without a writer did not return within 20 s")
	}
}
