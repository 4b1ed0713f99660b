package config

import (
	"fmt"
	"time"

	"github.com/BurntSushi/toml"

	"rsag/coll"
	"rsag/phases"
)

// Soak is the [soak] table: iteration after iteration, a seeded draw of a
// size, dtype, op, placement and buffer offset, on which AllReduce,
// ReduceScatter + AllGather and (with [hierarchy]) the hierarchical form
// run on the same input and every element of every output is checked;
// a wrong one is localized to a rank, a host and a step.
type Soak struct {
	Enabled bool `toml:"enabled"`
	// DurationS or Iterations, exactly one of them: how long the soak runs.
	DurationS  int `toml:"duration_s"`
	Iterations int `toml:"iterations"`
	// Sizes are drawn from SizesBytes, or else from MinBytes..MaxBytes
	// (1 and 4M when left out), rounded down to whole elements per rank.
	SizesBytes []Size           `toml:"sizes_bytes"`
	MinBytes   Size             `toml:"min_bytes"`
	MaxBytes   Size             `toml:"max_bytes"`
	DTypes     []coll.DType     `toml:"dtypes"`
	Ops        []coll.Op        `toml:"ops"`
	Placements []coll.Placement `toml:"placements"`
	Offsets    []Size           `toml:"offsets"`
	Seed       int64            `toml:"seed"`
	FailAfter  int              `toml:"fail_after"`
}

// The bounds of [soak]'s counts.
const (
	// MaxSoakSeconds is a week: a soak longer than that is a typo.
	MaxSoakSeconds = 7 * 24 * 3600
	// MaxSoakIterations bounds iterations and fail_after.
	MaxSoakIterations = 1_000_000_000
	// defaultSoakMaxBytes is the largest size drawn when the range's top
	// is left out: small enough for a host to check many a second.
	defaultSoakMaxBytes = 4 << 20
)

// defaultSoak is off; when on, it draws every integer and float type MPI
// and NCCL both reduce, every op but avg, both placements, aligned and
// misaligned buffers, and stops at the first wrong element.
func defaultSoak() Soak {
	return Soak{Seed: 1, FailAfter: 1,
		DTypes: []coll.DType{coll.Int8, coll.Uint8, coll.Int32, coll.Uint32, coll.Int64, coll.Uint64, coll.Float32, coll.Float64},
		Ops:    []coll.Op{coll.Sum, coll.Prod, coll.Max, coll.Min}, Placements: []coll.Placement{coll.OutOfPlace, coll.InPlace},
		Offsets: []Size{0, 8, 64, 4096}}
}

// check checks the section's values; on, whether the soak runs, asks for
// its length too.
func (s Soak) check(bad func(key, format string, args ...any) error, on bool) error {
	switch {
	case s.DurationS != 0 && s.Iterations != 0:
		return bad("soak.iterations", "is given together with soak.duration_s: give one of them, the seconds the soak runs or its iterations")
	case on && s.DurationS == 0 && s.Iterations == 0:
		return bad("soak.duration_s", "is missing: give soak.duration_s (the seconds the soak runs, e.g. 60) or soak.iterations, or set soak.enabled = false")
	}
	counts := []intRule{
		{"duration_s", int64(s.DurationS), 0, MaxSoakSeconds, "%d is negative: give the seconds the soak runs, e.g. 60", "seconds (a week)"},
		{"iterations", int64(s.Iterations), 0, MaxSoakIterations, "%d is negative: give the number of iterations, e.g. 1000", "iterations"},
		{"fail_after", int64(s.FailAfter), 0, MaxSoakIterations, "%d is negative: give the failed iterations after which the soak stops (1, the default, stops at the first), or 0 to run to the end and count them", "iterations"},
		{"seed", s.Seed, 0, MaxSeed, "%d is negative: give a seed from 0 to " + fmt.Sprint(MaxSeed), "on a seed (2^53-1, exact in JSON)"},
	}
	for _, n := range counts {
		if msg := n.outOfRange(); msg != "" {
			return bad("soak."+n.key, "%s", msg)
		}
	}
	if len(s.SizesBytes) > 0 {
		if s.MinBytes != 0 || s.MaxBytes != 0 {
			return bad("soak.sizes_bytes", "given together with min_bytes or max_bytes: draw either from a list of sizes (sizes_bytes) or from a range (min_bytes, max_bytes)")
		}
		if _, err := checkSizeList("soak.sizes_bytes", s.SizesBytes, ": drop some", bad); err != nil {
			return err
		}
	} else {
		lo, hi := s.sizeRange()
		for _, r := range []struct {
			key string
			v   Size
		}{{"soak.min_bytes", lo}, {"soak.max_bytes", hi}} {
			if msg := sizeOutOfRange(r.v, "give a size in bytes, e.g. \"4K\""); msg != "" {
				return bad(r.key, "%s", msg)
			}
		}
		if hi < lo {
			return bad("soak.min_bytes", "the range %d..%d is empty: give min_bytes <= max_bytes", lo, hi)
		}
	}
	for _, l := range []nameList{
		listOf("soak.dtypes", s.DTypes, coll.AllDTypes),
		listOf("soak.ops", s.Ops, coll.AllOps),
		listOf("soak.placements", s.Placements, coll.Placements),
	} {
		if err := l.check(bad); err != nil {
			return err
		}
	}
	return checkOffsets(s.Offsets, func(key, format string, args ...any) error { return bad("soak."+key, format, args...) })
}

// sizeRange is the range sizes are drawn from, its defaults filled in.
func (s Soak) sizeRange() (lo, hi Size) {
	lo, hi = s.MinBytes, s.MaxBytes
	if lo == 0 {
		lo = 1
	}
	if hi == 0 {
		hi = max(defaultSoakMaxBytes, lo)
	}
	return lo, hi
}

// validate checks the soak against the world size: listed sizes divide
// into whole elements per rank of every dtype, offsets keep every dtype
// aligned, and some dtype/op's check can be exact on this many ranks.
func (s Soak) validate(world int) error {
	if err := divisible("config", "soak.sizes_bytes", int64s(s.SizesBytes), s.DTypes, world); err != nil {
		return err
	}
	for _, d := range s.DTypes {
		for _, o := range s.Offsets {
			if int64(o)%int64(d.Size()) != 0 {
				return &Error{Source: "config", Key: "soak.offsets", Msg: fmt.Sprintf(
					"%d bytes is not a multiple of %s's %d-byte elements, which must stay aligned to their size: use multiples of %d, e.g. [0, 8, 64, 4096]",
					o, d, d.Size(), d.Size())}
			}
		}
	}
	// A pair that cannot be checked on this many ranks is skipped, not
	// refused (phases.SoakSpec.Pairs); nothing at all to draw is refused.
	if drawn, skipped := s.Spec().Pairs(world); len(drawn) == 0 {
		return &Error{Source: "config", Key: "soak.dtypes", Msg: fmt.Sprintf(
			"no pair of soak.dtypes and soak.ops (%s) can be checked on %d ranks: %s: add a wider dtype (int32, float64) or an op other than prod, or use fewer ranks",
			phases.PairsText(skipped), world, phases.SkippedWhy(world))}
	}
	return nil
}

// Spec is the soak phase's spec.
func (s Soak) Spec() phases.SoakSpec {
	spec := phases.SoakSpec{Duration: time.Duration(s.DurationS) * time.Second, Iterations: s.Iterations,
		SizesBytes: int64s(s.SizesBytes), DTypes: s.DTypes, Ops: s.Ops, Placements: s.Placements,
		Offsets: int64s(s.Offsets), Seed: uint64(s.Seed), FailAfter: s.FailAfter}
	if len(spec.SizesBytes) == 0 {
		lo, hi := s.sizeRange()
		spec.MinBytes, spec.MaxBytes = int64(lo), int64(hi)
	}
	return spec
}

// zeroKey is a key whose zero value stands for "not given" (a default
// fills it in, or another key is used): given as zero, it would be
// silently ignored, so it is refused, naming the fix.
type zeroKey struct {
	section, leaf string
	zero          func(c *Config) bool
	fix           string
}

// soak.iterations and soak.duration_s are not among them: one of the two
// set to 0 is how a -set turns a config's soak from seconds to iterations
// or back (validate refuses both or neither), so 0 there is not ignored.
var zeroKeys = []zeroKey{
	{"soak", "min_bytes", func(c *Config) bool { return c.Soak.MinBytes == 0 },
		"give a size of at least 1 byte, or leave the key out to draw from 1 byte"},
	{"soak", "max_bytes", func(c *Config) bool { return c.Soak.MaxBytes == 0 },
		"give a size of at least 1 byte, e.g. \"4M\", or leave the key out to draw up to 4M"},
	{"soak", "sizes_bytes", func(c *Config) bool { return len(c.Soak.SizesBytes) == 0 },
		"list at least one size, or leave the key out to draw from min_bytes..max_bytes"},
}

// givenZero refuses a zeroKey that the document md gives as zero.
func givenZero(source string, md toml.MetaData, c *Config) error {
	for _, k := range zeroKeys {
		if md.IsDefined(k.section, k.leaf) && k.zero(c) {
			what := "= 0"
			if k.leaf == "sizes_bytes" {
				what = "= []"
			}
			return &Error{Source: source, Key: k.section + "." + k.leaf, Msg: fmt.Sprintf("%s would be ignored, as if it were not given: %s", what, k.fix)}
		}
	}
	return nil
}
