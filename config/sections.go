package config

import (
	"fmt"
	"strconv"
	"strings"

	"rsag/coll"
	"rsag/phases"
)

// Contracts is the [contracts] table: the seed's proofs.
type Contracts struct {
	Enabled bool `toml:"enabled"`
}

// Memory is the [memory] table: the buffer-lifetime study.
type Memory struct {
	Enabled      bool `toml:"enabled"`
	PayloadBytes Size `toml:"payload_bytes"`
	// Modes names the buffer-lifetime strategies to measure, in order.
	Modes []string `toml:"modes"`
}

// Numerics is the [numerics] table: AllReduce against ReduceScatter +
// AllGather on seeded pseudo-random floats, element by element. Which of
// the float dtypes a backend can run is the backend's to say.
type Numerics struct {
	Enabled    bool         `toml:"enabled"`
	DTypes     []coll.DType `toml:"dtypes"`
	SizesBytes []Size       `toml:"sizes_bytes"`
	// Seed selects the generator's streams: the same seed gives the same
	// inputs on every rank and every run.
	Seed int64 `toml:"seed"`
}

// Hierarchy is the [hierarchy] table: ReduceScatter in a group,
// AllReduce across the groups, AllGather in the group.
type Hierarchy struct {
	Enabled bool `toml:"enabled"`
	// GroupSize is the ranks per group; 0 means the ranks per node, known
	// only once the job runs.
	GroupSize int `toml:"group_size"`
}

// defaultNumerics: off; one small size, one of about 1 MiB and one large,
// powers of two as the timing sizes are.
func defaultNumerics() Numerics {
	return Numerics{DTypes: []coll.DType{coll.Float32, coll.Float64},
		SizesBytes: []Size{4 << 10, 1 << 20, 64 << 20}, Seed: 1}
}

func (m Memory) check(bad func(key, format string, args ...any) error) error {
	if msg := sizeOutOfRange(m.PayloadBytes, "give the payload in bytes, e.g. 268435456 or \"256M\""); msg != "" {
		return bad("memory.payload_bytes", "%s", msg)
	}
	if len(m.Modes) == 0 {
		return bad("memory.modes", "is empty: list modes from %s, or set memory.enabled = false", strings.Join(MemoryModes, ", "))
	}
	for _, mode := range m.Modes {
		if !contains(MemoryModes, mode) {
			return bad("memory.modes", "%q is not a memory mode: use %s", mode, strings.Join(MemoryModes, ", "))
		}
	}
	if d, dup := firstDuplicate(m.Modes); dup {
		return bad("memory.modes", "%q is listed twice: list each once", d)
	}
	return nil
}

func (n Numerics) check(bad func(key, format string, args ...any) error) error {
	var floats []coll.DType
	for _, d := range coll.AllDTypes {
		if d.IsFloat() {
			floats = append(floats, d)
		}
	}
	if err := listOf("numerics.dtypes", n.DTypes, floats).check(bad); err != nil {
		return err
	}
	for _, d := range n.DTypes {
		if !d.IsFloat() {
			return bad("numerics.dtypes", "%s is not a float type, and only floats round: use %s", d, strings.Join(coll.Names(floats), ", "))
		}
	}
	if len(n.SizesBytes) == 0 {
		return bad("numerics.sizes_bytes", "is empty: list at least one size in bytes, e.g. [\"4K\", \"1M\"], or set numerics.enabled = false")
	}
	if _, err := checkSizeList("numerics.sizes_bytes", n.SizesBytes, ": drop some", bad); err != nil {
		return err
	}
	seed := intRule{"seed", n.Seed, 0, MaxSeed, "%d is negative: give a seed from 0 to " + strconv.Itoa(MaxSeed), "on a seed (2^53-1, exact in JSON)"}
	if msg := seed.outOfRange(); msg != "" {
		return bad("numerics.seed", "%s", msg)
	}
	return nil
}

func (h Hierarchy) check(bad func(key, format string, args ...any) error) error {
	if h.GroupSize == 0 {
		return nil
	}
	g := intRule{"group_size", int64(h.GroupSize), 2, MaxRanks,
		"%d: give the ranks per group, at least 2, or 0 for the ranks per node", "ranks per group"}
	if msg := g.outOfRange(); msg != "" {
		return bad("hierarchy.group_size", "%s", msg)
	}
	return nil
}

// validate checks that the groups divide the world.
func (h Hierarchy) validate(world int) error {
	if h.GroupSize == 0 || world%h.GroupSize == 0 {
		return nil
	}
	var divisors []string
	for d := 2; d <= world; d++ {
		if world%d == 0 {
			divisors = append(divisors, strconv.Itoa(d))
		}
		if len(divisors) == 8 {
			divisors = append(divisors, "...")
			break
		}
	}
	return &Error{Source: "config", Key: "hierarchy.group_size", Msg: fmt.Sprintf(
		"group_size %d does not divide the world size %d, so the ranks cannot form equal groups: use a divisor of %d (%s), or 0 for the ranks per node",
		h.GroupSize, world, world, strings.Join(divisors, ", "))}
}

// Spec is the numerics phase's spec.
func (n Numerics) Spec() phases.NumericsSpec {
	return phases.NumericsSpec{DTypes: n.DTypes, SizesBytes: int64s(n.SizesBytes), Seed: uint64(n.Seed)}
}
