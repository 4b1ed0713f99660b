package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"

	"rsag/phases"
)

// Timing is the [timing] table: the sweep every run starts from. Sizes are
// either a list (sizes_bytes) or a range from min_bytes to max_bytes,
// multiplying by factor or adding step_bytes.
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
	DTypes     []string `toml:"dtypes"`
	Ops        []string `toml:"ops"`
	Placements []string `toml:"placements"`
	Methods    []string `toml:"methods"`
	// Batch is the number of operations per batched or graph sample.
	Batch int `toml:"batch"`
	// Discard drops this many leading samples from the statistics.
	Discard int `toml:"discard"`
	// MinBusBWGBps, when positive, fails the run when the direct
	// AllReduce's bus bandwidth at the largest size falls below it.
	MinBusBWGBps float64 `toml:"min_busbw_gbps"`
}

// Run is one timing sweep: [timing] with a [[run]] table's keys over it.
type Run struct {
	Name string `toml:"name"`
	Timing
}

// Placements and Methods are the values those keys take.
var (
	Placements = []string{"out-of-place", "in-place"}
	Methods    = []string{"per-op", "batched", "graph"}
)

// maxRangeSizes bounds a size range, so a typo in factor or step_bytes is
// an error rather than hours of timing.
const maxRangeSizes = 64

// clone copies t so that decoding a run over it cannot write into the
// slices t shares with the defaults.
func (t Timing) clone() Timing {
	c := t
	c.SizesBytes = slices.Clone(t.SizesBytes)
	c.DTypes = slices.Clone(t.DTypes)
	c.Ops = slices.Clone(t.Ops)
	c.Placements = slices.Clone(t.Placements)
	c.Methods = slices.Clone(t.Methods)
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

// Sizes returns the sizes in bytes: the list, or the range expanded.
func (t Timing) Sizes() []int64 {
	if len(t.SizesBytes) > 0 || t.MinBytes <= 0 {
		out := make([]int64, len(t.SizesBytes))
		for i, s := range t.SizesBytes {
			out[i] = int64(s)
		}
		return out
	}
	var out []int64
	for s := int64(t.MinBytes); s <= int64(t.MaxBytes) && len(out) <= maxRangeSizes; {
		out = append(out, s)
		switch {
		case t.Factor >= 2:
			s *= int64(t.Factor)
		case t.StepBytes > 0:
			s += int64(t.StepBytes)
		default:
			return out
		}
	}
	return out
}

// resolveRuns decodes each [[run]] table over a copy of [timing]; without
// any, [timing] itself is the one run, named "default".
func (c *Config) resolveRuns(md toml.MetaData, source string) error {
	c.Runs = nil
	if len(c.RunTables) == 0 {
		c.Runs = []Run{{Name: "default", Timing: c.Timing.clone()}}
		return nil
	}
	for i, table := range c.RunTables {
		var given Run // what this table sets, to tell a list from a range
		if err := md.PrimitiveDecode(table, &given); err != nil {
			return decodeError(source, err)
		}
		r := Run{Timing: c.Timing.clone()}
		if err := md.PrimitiveDecode(table, &r); err != nil {
			return decodeError(source, err)
		}
		key := fmt.Sprintf("run[%d]", i+1)
		listGiven, rangeGiven := len(given.SizesBytes) > 0, given.MinBytes > 0 || given.MaxBytes > 0
		if listGiven && rangeGiven {
			return &Error{Source: source, Key: key + ".sizes_bytes", Msg: "given together with min_bytes/max_bytes: use either a list of sizes or a range"}
		}
		r.keepSizeForm(listGiven, rangeGiven)
		if r.Name == "" {
			r.Name = fmt.Sprintf("run%d", i+1)
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

// checkRuns validates each run's keys that need no world size.
func (c *Config) checkRuns() error {
	for _, r := range c.Runs {
		prefix := "timing."
		if len(c.RunTables) > 0 {
			prefix = "run " + r.Name + ": "
		}
		bad := func(key, format string, args ...any) error {
			return &Error{Source: "config", Key: prefix + key, Msg: fmt.Sprintf(format, args...)}
		}
		t := r.Timing
		if len(t.SizesBytes) == 0 {
			switch {
			case t.MinBytes <= 0 && t.MaxBytes <= 0:
				return bad("sizes_bytes", "is empty: list at least one size in bytes, e.g. [1024, \"1M\"], give min_bytes and max_bytes, or set timing.enabled = false")
			case t.MinBytes <= 0 || t.MaxBytes < t.MinBytes:
				return bad("min_bytes", "the range %d..%d is empty: give 0 < min_bytes <= max_bytes", t.MinBytes, t.MaxBytes)
			case (t.Factor >= 2) == (t.StepBytes > 0):
				return bad("factor", "a size range needs exactly one of factor (an integer >= 2, e.g. 2) or step_bytes (> 0)")
			case len(t.Sizes()) > maxRangeSizes:
				return bad("max_bytes", "the range gives more than %d sizes: raise factor or step_bytes, or narrow the range", maxRangeSizes)
			}
		}
		for _, s := range t.SizesBytes {
			if s <= 0 {
				return bad("sizes_bytes", "%d is not a positive size: every size must be at least ranks x the element size", s)
			}
		}
		if t.Warmups < 0 {
			return bad("warmups", "%d is negative: use 0 or more warm-up iterations (the seed used 3)", t.Warmups)
		}
		if t.Cycles <= 0 {
			return bad("cycles", "%d: use at least 1 measured cycle (the seed used 10)", t.Cycles)
		}
		if t.Discard < 0 || t.Discard >= t.Cycles {
			return bad("discard", "%d: drop from 0 to cycles-1 (%d) leading samples", t.Discard, t.Cycles-1)
		}
		if t.Batch < 1 {
			return bad("batch", "%d: a batched or graph sample needs at least 1 operation (nccl-tests uses 20)", t.Batch)
		}
		if t.MinBusBWGBps < 0 {
			return bad("min_busbw_gbps", "%v is negative: give the bus bandwidth in GB/s the largest size must reach, or 0 for no gate", t.MinBusBWGBps)
		}
		lists := []struct {
			key    string
			values []string
			valid  func(string) bool
			known  []string
		}{
			{"dtypes", t.DTypes, func(s string) bool { _, ok := phases.ParseDType(s); return ok }, dtypeNames()},
			{"ops", t.Ops, func(s string) bool { _, ok := phases.ParseOp(s); return ok }, opNames()},
			{"placements", t.Placements, func(s string) bool { return slices.Contains(Placements, s) }, Placements},
			{"methods", t.Methods, func(s string) bool { return slices.Contains(Methods, s) }, Methods},
		}
		for _, l := range lists {
			if len(l.values) == 0 {
				return bad(l.key, "is empty: list at least one of %s", strings.Join(l.known, ", "))
			}
			for _, v := range l.values {
				if !l.valid(v) {
					return bad(l.key, "%q is unknown: use %s", v, strings.Join(l.known, ", "))
				}
			}
		}
	}
	return nil
}

// validateRuns checks each run against the world size: every size divides
// by ranks x element size for every dtype, and every dtype/op check can be
// exact on this many ranks.
func (c *Config) validateRuns(world int) error {
	for _, r := range c.Runs {
		prefix := "timing."
		if len(c.RunTables) > 0 {
			prefix = "run " + r.Name + ": "
		}
		for _, name := range r.DTypes {
			d, _ := phases.ParseDType(name)
			unit := int64(world * d.Size())
			for _, s := range r.Sizes() {
				if s%unit != 0 {
					lo := max(s/unit*unit, unit)
					return &Error{Source: "config", Key: prefix + "sizes_bytes", Msg: fmt.Sprintf(
						"%d bytes does not divide by %d ranks x %d bytes (%s) = %d: use a multiple of %d, e.g. %d or %d",
						s, world, d.Size(), d, unit, unit, lo, lo+unit)}
				}
			}
			for _, opName := range r.Ops {
				op, _ := phases.ParseOp(opName)
				if err := phases.CheckExact(d, op, world); err != nil {
					return &Error{Source: "config", Key: prefix + "dtypes", Msg: err.Error()}
				}
			}
		}
	}
	return nil
}

// IsSeedCase says whether the timing phase is the seed's single case, whose
// per-rank CSVs keep exactly the seed's columns.
func (c *Config) IsSeedCase() bool {
	if len(c.Runs) != 1 {
		return false
	}
	t := c.Runs[0].Timing
	return slices.Equal(t.DTypes, []string{"float32"}) && slices.Equal(t.Ops, []string{"sum"}) &&
		slices.Equal(t.Placements, []string{"out-of-place"}) && slices.Equal(t.Methods, []string{"per-op"})
}

func dtypeNames() []string {
	var out []string
	for _, d := range phases.AllDTypes {
		out = append(out, d.String())
	}
	return out
}

func opNames() []string {
	var out []string
	for _, o := range phases.AllOps {
		out = append(out, o.String())
	}
	return out
}

// TimingRuns returns the runs as the timing phase takes them. Names were
// validated by check, so parsing cannot fail here.
func (c *Config) TimingRuns() []phases.TimingRun {
	var out []phases.TimingRun
	for _, r := range c.Runs {
		tr := phases.TimingRun{Name: r.Name, SizesBytes: r.Sizes(), Batch: r.Batch, Warmups: r.Warmups, Cycles: r.Cycles}
		for _, n := range r.DTypes {
			d, _ := phases.ParseDType(n)
			tr.DTypes = append(tr.DTypes, d)
		}
		for _, n := range r.Ops {
			o, _ := phases.ParseOp(n)
			tr.Ops = append(tr.Ops, o)
		}
		for _, p := range r.Placements {
			tr.Placements = append(tr.Placements, phases.Placement(p))
		}
		for _, m := range r.Methods {
			tr.Methods = append(tr.Methods, phases.Method(m))
		}
		out = append(out, tr)
	}
	return out
}
