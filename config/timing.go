package config

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"

	"rsag/coll"
)

// Timing is the [timing] table: the sweep every run starts from. Sizes are
// either a list (sizes_bytes) or a range from min_bytes to max_bytes,
// multiplying by factor or adding step_bytes. The sweep's dimensions are
// coll's own types, read through their UnmarshalText, so an unknown name
// is refused as it is decoded, with the known ones listed.
type Timing struct {
	Enabled    bool   `toml:"enabled"`
	SizesBytes []Size `toml:"sizes_bytes"`
	MinBytes   Size   `toml:"min_bytes"`
	MaxBytes   Size   `toml:"max_bytes"`
	Factor     int    `toml:"factor"`
	StepBytes  Size   `toml:"step_bytes"`
	Warmups    int    `toml:"warmups"`
	Cycles     int    `toml:"cycles"`
	// The sweep's dimensions; the defaults are the seed's single case.
	DTypes     []coll.DType     `toml:"dtypes"`
	Ops        []coll.Op        `toml:"ops"`
	Placements []coll.Placement `toml:"placements"`
	Methods    []coll.Method    `toml:"methods"`
	// Modes are the timed modes; Buffers and CTAPolicies NCCL's fast paths
	// (the defaults are the seed's: plain buffers on a default communicator).
	Modes       []coll.Mode       `toml:"modes"`
	Buffers     []coll.BufferKind `toml:"buffers"`
	CTAPolicies []coll.CTAPolicy  `toml:"cta_policies"`
	// Offsets are the bytes every buffer starts after its allocation's
	// start: [0] is aligned; 4, 64, 4096 try misaligned buffers, as
	// nccl-tests does. Each must be a multiple of every dtype's size.
	Offsets []Size `toml:"offsets"`
	// Batch is the number of operations per batched or graph sample.
	Batch int `toml:"batch"`
	// Discard drops this many leading samples from the statistics.
	Discard int `toml:"discard"`
	// MinBusBWGBps, when positive, fails the run when the direct
	// AllReduce's bus bandwidth at the largest size falls below it.
	MinBusBWGBps float64 `toml:"min_busbw_gbps"`
	// MinBusBWStatistic is the time the gate takes the busbw of: "median"
	// (the default) or "p99", which judges the tail as well.
	MinBusBWStatistic string `toml:"min_busbw_statistic"`
	// Check is which samples' outputs are checked: "every" (the default),
	// or "last", the last of each mode of a case only, as the seed did.
	Check string `toml:"check"`
}

// GateStatistics are the values of timing.min_busbw_statistic. The p99's
// busbw is never above the median's, so a case that passes at p99 passes
// at both.
var GateStatistics = []string{"median", "p99"}

// CheckPolicies are the values of timing.check.
var CheckPolicies = []string{"every", "last"}

// RunTable is one [[run]] table resolved: [timing] with the table's keys
// over it (or [timing] alone, named "default", when there is no table).
type RunTable struct {
	Name string `toml:"name"`
	Timing
}

// clone copies t so that decoding a run over it cannot write into the
// slices t shares with the defaults.
func (t Timing) clone() Timing {
	c := t
	c.SizesBytes = slices.Clone(t.SizesBytes)
	c.DTypes = slices.Clone(t.DTypes)
	c.Ops = slices.Clone(t.Ops)
	c.Placements = slices.Clone(t.Placements)
	c.Methods = slices.Clone(t.Methods)
	c.Modes = slices.Clone(t.Modes)
	c.Buffers = slices.Clone(t.Buffers)
	c.CTAPolicies = slices.Clone(t.CTAPolicies)
	c.Offsets = slices.Clone(t.Offsets)
	return c
}

// keepSizeForm makes the form the latest table gave win: a range replaces
// an inherited list and a list replaces an inherited range.
func (t *Timing) keepSizeForm(listGiven, rangeGiven bool) {
	switch {
	case rangeGiven && !listGiven:
		t.SizesBytes = nil
	case listGiven && !rangeGiven:
		t.MinBytes, t.MaxBytes, t.Factor, t.StepBytes = 0, 0, 0, 0
	}
}

// sizeForm reads which size form one table (or -set) gives, and refuses
// both at once: a list with any of the range's keys, which the list would
// silently override.
func sizeForm(source, key string, defined func(leaf string) bool) (listGiven, rangeGiven bool, err error) {
	listGiven = defined("sizes_bytes")
	rangeGiven = defined("min_bytes") || defined("max_bytes")
	if listGiven {
		for _, leaf := range []string{"min_bytes", "max_bytes", "factor", "step_bytes"} {
			if defined(leaf) {
				return false, false, &Error{Source: source, Key: key + "sizes_bytes", Msg: "given together with " + leaf +
					": use either a list of sizes (sizes_bytes) or a range (min_bytes, max_bytes, and factor or step_bytes)"}
			}
		}
	}
	return listGiven, rangeGiven, nil
}

// expandRange lists min, min*factor (or min+step), ... up to max, and
// says whether it stopped at MaxSizes+1 sizes. Each step is checked before
// it is taken, so no size can overflow int64 whatever the bounds.
func expandRange(lo, hi, factor, step int64) (sizes []int64, tooMany bool) {
	for s := lo; ; {
		sizes = append(sizes, s)
		if len(sizes) > MaxSizes {
			return sizes, true
		}
		switch {
		case factor >= 2 && s <= hi/factor:
			s *= factor
		case factor < 2 && step > 0 && s <= hi-step:
			s += step
		default:
			return sizes, false
		}
	}
}

// runTable is one [[run]] table as the file gave it.
type runTable struct {
	prim  toml.Primitive
	given map[string]bool // the keys it sets
}

// runSet is a -set run.NAME.key=value, parsed, to decode over that run.
type runSet struct {
	source string   // "-set run.NAME.key=value"
	doc    document // "key = value\n"
}

// resolveRuns decodes each [[run]] table over a copy of [timing], then the
// run's -set overrides; without any table, [timing] itself is the one run,
// named "default".
func (c *Config) resolveRuns(md toml.MetaData, source string, tables []runTable, sets map[string][]runSet) error {
	c.Runs = nil
	if len(tables) == 0 {
		c.Runs = []RunTable{{Name: "default", Timing: c.Timing.clone()}}
		return nil
	}
	for i, table := range tables {
		key := fmt.Sprintf("run[%d]", i+1)
		r := RunTable{Timing: c.Timing.clone()}
		if err := md.PrimitiveDecode(table.prim, &r); err != nil {
			return decodeError(source, err)
		}
		listGiven, rangeGiven, err := sizeForm(source, key+".", func(leaf string) bool { return table.given[leaf] })
		if err != nil {
			return err
		}
		r.keepSizeForm(listGiven, rangeGiven)
		if r.Name == "" {
			r.Name = fmt.Sprintf("run%d", i+1)
		}
		for _, set := range sets[r.Name] {
			if err := set.doc.decodeInto(&r); err != nil {
				return runSetError(set.source, r.Name, err)
			}
			listGiven, rangeGiven, err := sizeForm(set.source, "run."+r.Name+".", func(leaf string) bool { return set.doc.md.IsDefined(leaf) })
			if err != nil {
				return err
			}
			r.keepSizeForm(listGiven, rangeGiven)
		}
		for _, other := range c.Runs {
			if other.Name == r.Name {
				return &Error{Source: source, Key: key + ".name", Msg: fmt.Sprintf("%q names two runs: give each [[run]] its own name", r.Name)}
			}
		}
		c.Runs = append(c.Runs, r)
	}
	return nil
}

// runPrefix is how errors name a run's keys: "timing." when [timing] is
// the one run, else "run NAME: ".
func (c *Config) runPrefix(name string) string {
	if len(c.RunTables) == 0 {
		return "timing."
	}
	return "run " + name + ": "
}

// runSetError names the key of a -set run.NAME.key that did not decode
// as the flag did, with what the key takes.
func runSetError(source, name string, err error) error {
	var cerr *Error
	if errors.As(decodeError(source, err), &cerr) && cerr.Key != "" {
		leaf := cerr.Key
		cerr.Key = "run." + name + "." + leaf
		if strings.Contains(cerr.Msg, "incompatible types") {
			cerr.Msg += typeHint("run." + leaf)
		}
		return cerr
	}
	return decodeError(source, err)
}

// checkRuns validates each run's keys that need no world size and resolves
// the runs into the timing phase's form, sizes expanded.
func (c *Config) checkRuns(source string) error {
	c.Sweeps = nil
	for _, r := range c.Runs {
		prefix := c.runPrefix(r.Name)
		bad := func(key, format string, args ...any) error {
			return &Error{Source: source, Key: prefix + key, Msg: fmt.Sprintf(format, args...)}
		}
		sizes, err := r.sizes(bad)
		if err != nil {
			return err
		}
		t := r.Timing
		counts := []intRule{
			{"warmups", int64(t.Warmups), 0, MaxWarmups, "%d is negative: use 0 or more warm-up iterations (the seed used 3)", "warm-ups"},
			{"cycles", int64(t.Cycles), 1, MaxCycles, "%d: use at least 1 measured cycle (the seed used 10)", "cycles"},
			{"batch", int64(t.Batch), 1, MaxBatch, "%d: a batched or graph sample needs at least 1 operation (nccl-tests uses 20)", "operations per sample"},
		}
		for _, n := range counts {
			if msg := n.outOfRange(); msg != "" {
				return bad(n.key, "%s", msg)
			}
		}
		if err := checkOffsets(t.Offsets, bad); err != nil {
			return err
		}
		if t.Discard < 0 || t.Discard >= t.Cycles {
			return bad("discard", "%d: drop from 0 to cycles-1 (%d) leading samples", t.Discard, t.Cycles-1)
		}
		if !contains(CheckPolicies, t.Check) {
			return bad("check", "%q is not a check policy: use \"every\" (every sample's output, the default) or \"last\" (only the last sample of each mode, as the seed did)", t.Check)
		}
		if msg := floatOutOfRange(t.MinBusBWGBps, 0, MaxBusBWGBps, "GB/s",
			"the bus bandwidth in GB/s the largest size must reach, or 0 for no gate"); msg != "" {
			return bad("min_busbw_gbps", "%s", msg)
		}
		if !contains(GateStatistics, t.MinBusBWStatistic) {
			return bad("min_busbw_statistic", "%q is not a statistic the gate takes: use \"median\" (the default) or \"p99\" (the tail's busbw, which also judges the median)", t.MinBusBWStatistic)
		}
		for _, l := range []nameList{
			listOf("dtypes", t.DTypes, coll.AllDTypes),
			listOf("ops", t.Ops, coll.AllOps),
			listOf("placements", t.Placements, coll.Placements),
			listOf("methods", t.Methods, coll.Methods),
			listOf("modes", t.Modes, coll.Modes),
			listOf("buffers", t.Buffers, coll.BufferKinds),
			listOf("cta_policies", t.CTAPolicies, coll.CTAPolicies),
		} {
			if err := l.check(bad); err != nil {
				return err
			}
		}
		c.Sweeps = append(c.Sweeps, r.sweep(sizes))
	}
	return nil
}

// sweep is the run in the timing phase's form, at sizes.
func (r RunTable) sweep(sizes []int64) coll.Sweep {
	t := r.Timing
	return coll.Sweep{Name: r.Name, SizesBytes: sizes,
		DTypes: t.DTypes, Ops: t.Ops, Placements: t.Placements, Methods: t.Methods,
		Modes: t.Modes, Buffers: t.Buffers, CTAPolicies: t.CTAPolicies, Offsets: int64s(t.Offsets),
		Batch: t.Batch, Warmups: t.Warmups, Cycles: t.Cycles, Discard: t.Discard, CheckLast: t.Check == "last"}
}

// checkSizeList checks a list of sizes under key: at most MaxSizes of
// them (tooMany ends the message that says so), each in range, none twice.
func checkSizeList(key string, sizes []Size, tooMany string, bad func(key, format string, args ...any) error) ([]int64, error) {
	if len(sizes) > MaxSizes {
		return nil, bad(key, "lists %d sizes, above rsag's bound of %d%s", len(sizes), MaxSizes, tooMany)
	}
	for _, s := range sizes {
		if msg := sizeOutOfRange(s, "every size must be at least ranks x the element size"); msg != "" {
			return nil, bad(key, "%s", msg)
		}
	}
	if d, dup := firstDuplicate(sizes); dup {
		return nil, bad(key, "%d is listed twice: list each size once", d)
	}
	return int64s(sizes), nil
}

// checkOffsets checks the buffer offsets: at least one, each from 0 to
// MaxOffsetBytes, none twice.
func checkOffsets(offsets []Size, bad func(key, format string, args ...any) error) error {
	if len(offsets) == 0 {
		return bad("offsets", "is empty: list at least one offset in bytes, e.g. [0] for aligned buffers or [0, 4, 64]")
	}
	for _, o := range offsets {
		if o < 0 || o > MaxOffsetBytes {
			return bad("offsets", "%d bytes: give offsets from 0 to rsag's bound of %d bytes, e.g. [0, 4, 64, 4096]", o, MaxOffsetBytes)
		}
	}
	if d, dup := firstDuplicate(offsets); dup {
		return bad("offsets", "%d is listed twice: list each offset once", d)
	}
	return nil
}

// int64s are sizes as bytes.
func int64s(sizes []Size) []int64 {
	out := make([]int64, len(sizes))
	for i, s := range sizes {
		out[i] = int64(s)
	}
	return out
}

// sizes checks the run's sizes, a list or a range, and expands them.
func (t Timing) sizes(bad func(key, format string, args ...any) error) ([]int64, error) {
	if len(t.SizesBytes) > 0 {
		if t.Factor != 0 || t.StepBytes != 0 {
			return nil, bad("factor", "factor and step_bytes apply to a range (min_bytes..max_bytes), but these sizes are a list: remove them, or give min_bytes and max_bytes instead of sizes_bytes")
		}
		return checkSizeList("sizes_bytes", t.SizesBytes, " sizes per sweep: split them into [[run]] tables or drop some", bad)
	}
	switch {
	case t.MinBytes <= 0 && t.MaxBytes <= 0:
		return nil, bad("sizes_bytes", "is empty: list at least one size in bytes, e.g. [1024, \"1M\"], give min_bytes and max_bytes, or set timing.enabled = false")
	case t.MinBytes <= 0 || t.MaxBytes < t.MinBytes:
		return nil, bad("min_bytes", "the range %d..%d is empty: give 0 < min_bytes <= max_bytes", t.MinBytes, t.MaxBytes)
	case t.MaxBytes > MaxSizeBytes:
		return nil, bad("max_bytes", "%s", sizeOutOfRange(t.MaxBytes, ""))
	case (t.Factor != 0) == (t.StepBytes != 0):
		return nil, bad("factor", "a size range needs exactly one of factor (an integer from 2 to %d, e.g. 2) or step_bytes (a positive size)", MaxFactor)
	case t.Factor != 0 && (t.Factor < 2 || t.Factor > MaxFactor):
		return nil, bad("factor", "%d: use an integer from 2 to %d (rsag's bound), e.g. 2", t.Factor, MaxFactor)
	case t.Factor == 0 && sizeOutOfRange(t.StepBytes, "") != "":
		return nil, bad("step_bytes", "%s", sizeOutOfRange(t.StepBytes, "give the bytes added per step, e.g. \"1M\""))
	}
	sizes, tooMany := expandRange(int64(t.MinBytes), int64(t.MaxBytes), int64(t.Factor), int64(t.StepBytes))
	if tooMany {
		return nil, bad("max_bytes", "the range %s..%s by step_bytes %s gives more than %d sizes, rsag's bound per sweep: raise step_bytes, narrow the range, or use factor",
			t.MinBytes, t.MaxBytes, t.StepBytes, MaxSizes)
	}
	return sizes, nil
}

// nameList is one list of names to check: not empty, no duplicates (the
// unknown ones were refused as they were decoded).
type nameList struct {
	key   string
	names []string
	known []string
}

func listOf[T fmt.Stringer](key string, values, known []T) nameList {
	return nameList{key, coll.Names(values), coll.Names(known)}
}

func (l nameList) check(bad func(key, format string, args ...any) error) error {
	if len(l.names) == 0 {
		return bad(l.key, "is empty: list at least one of %s", strings.Join(l.known, ", "))
	}
	if d, dup := firstDuplicate(l.names); dup {
		return bad(l.key, "%q is listed twice: list each once", d)
	}
	return nil
}

// validateRuns checks each run against the world size: every size divides
// by ranks x element size for every dtype, and every dtype/op check can be
// exact on this many ranks.
func (c *Config) validateRuns(world int) error {
	for _, r := range c.Sweeps {
		prefix := c.runPrefix(r.Name)
		if err := divisible("config", prefix+"sizes_bytes", r.SizesBytes, r.DTypes, world); err != nil {
			return err
		}
		for _, d := range r.DTypes {
			for _, o := range r.Offsets {
				if o%int64(d.Size()) != 0 {
					return &Error{Source: "config", Key: prefix + "offsets", Msg: fmt.Sprintf(
						"%d bytes is not a multiple of %s's %d-byte elements, which must stay aligned to their size: use a multiple of %d, e.g. %d",
						o, d, d.Size(), d.Size(), (o/int64(d.Size())+1)*int64(d.Size()))}
				}
			}
		}
		for _, d := range r.DTypes {
			for _, op := range r.Ops {
				if err := coll.CheckExact(d, op, world); err != nil {
					return &Error{Source: "config", Key: prefix + "dtypes", Msg: err.Error()}
				}
			}
		}
	}
	return nil
}

// divisible checks that every size divides by ranks x the element size of
// every dtype, advising the nearest multiples.
func divisible(source, key string, sizes []int64, dtypes []coll.DType, world int) error {
	for _, d := range dtypes {
		unit := int64(world) * int64(d.Size())
		for _, s := range sizes {
			if s%unit != 0 {
				lo := max(s/unit*unit, unit)
				return &Error{Source: source, Key: key, Msg: fmt.Sprintf(
					"%d bytes does not divide by %d ranks x %d bytes (%s) = %d: use a multiple of %d, e.g. %d or %d",
					s, world, d.Size(), d, unit, unit, lo, lo+unit)}
			}
		}
	}
	return nil
}

// IsSeedCase says whether the timing phase is the seed's single case
// (coll.Sweep.IsSeed, which compares every dimension of coll.Case), whose
// per-rank CSVs keep exactly the seed's columns.
func (c *Config) IsSeedCase() bool {
	return len(c.Runs) == 1 && c.Runs[0].sweep(nil).IsSeed()
}
