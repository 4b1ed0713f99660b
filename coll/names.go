package coll

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// The names configs, CSVs and summary.json spell the sweep's dimensions
// with. Each type reads and writes its own name (encoding.TextUnmarshaler),
// so that TOML, -set and JSON share one parser and one list of names, here.

// MarshalText writes d's name ("float32").
func (d DType) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText reads a dtype name and refuses an unknown one, listing the known.
func (d *DType) UnmarshalText(b []byte) error {
	v, ok := ParseDType(string(b))
	if !ok {
		return unknownName(string(b), DTypeNames())
	}
	*d = v
	return nil
}

// DTypeNames lists every dtype's name, in AllDTypes' order.
func DTypeNames() []string { return Names(AllDTypes) }

// MarshalText writes o's name ("sum").
func (o Op) MarshalText() ([]byte, error) { return []byte(o.String()), nil }

// UnmarshalText reads an op name and refuses an unknown one.
func (o *Op) UnmarshalText(b []byte) error {
	v, ok := ParseOp(string(b))
	if !ok {
		return unknownName(string(b), OpNames())
	}
	*o = v
	return nil
}

// OpNames lists every op's name, in AllOps' order.
func OpNames() []string { return Names(AllOps) }

// Placements lists the placements.
var Placements = []Placement{OutOfPlace, InPlace}

func (p Placement) String() string { return string(p) }

// UnmarshalText reads a placement and refuses an unknown one.
func (p *Placement) UnmarshalText(b []byte) error { return parseName(p, b, Placements) }

// Methods lists the timing methods.
var Methods = []Method{PerOp, Batched, Barriered, GraphReplay}

func (m Method) String() string { return string(m) }

// Batched says whether a sample of the method runs a batch of operations
// (Sweep.Batch) rather than one.
func (m Method) Batched() bool { return m != PerOp }

// UnmarshalText reads a method and refuses an unknown one.
func (m *Method) UnmarshalText(b []byte) error { return parseName(m, b, Methods) }

// BufferKind says how the timing phase's buffers are allocated and made
// known to the library (NCCL's fast paths; the MPI backend has plain only).
type BufferKind string

const (
	// PlainBuffers are ordinary allocations (cuMemAlloc, mmap).
	PlainBuffers BufferKind = "plain"
	// RegisteredBuffers are registered with the communicator once after
	// allocation (ncclCommRegister; nccl-tests -R 1).
	RegisteredBuffers BufferKind = "registered"
	// SymmetricBuffers come from ncclMemAlloc and are registered as
	// symmetric windows (ncclCommWindowRegister; nccl-tests -R 2).
	SymmetricBuffers BufferKind = "symmetric"
)

// BufferKinds lists the buffer kinds.
var BufferKinds = []BufferKind{PlainBuffers, RegisteredBuffers, SymmetricBuffers}

func (k BufferKind) String() string { return string(k) }

// UnmarshalText reads a buffer kind and refuses an unknown one.
func (k *BufferKind) UnmarshalText(b []byte) error { return parseName(k, b, BufferKinds) }

// CTAPolicy is the communicator's CTA policy (ncclConfig_t.CTAPolicy,
// NCCL 2.27 and later; nccl-tests -x).
type CTAPolicy string

const (
	DefaultCTAPolicy    CTAPolicy = "default"    // NCCL_CTA_POLICY_DEFAULT
	EfficiencyCTAPolicy CTAPolicy = "efficiency" // NCCL_CTA_POLICY_EFFICIENCY
	// ZeroCTAPolicy lets AllGather run on the copy engines, using no SMs,
	// on one node with symmetric buffers (NCCL 2.28).
	ZeroCTAPolicy CTAPolicy = "zero" // NCCL_CTA_POLICY_ZERO
)

// CTAPolicies lists the CTA policies.
var CTAPolicies = []CTAPolicy{DefaultCTAPolicy, EfficiencyCTAPolicy, ZeroCTAPolicy}

func (p CTAPolicy) String() string { return string(p) }

// UnmarshalText reads a CTA policy and refuses an unknown one.
func (p *CTAPolicy) UnmarshalText(b []byte) error { return parseName(p, b, CTAPolicies) }

// Variant is one setting of a backend's fast paths: the kind of buffers
// and the communicator's CTA policy. The zero value is not valid; Baseline
// is what every backend runs.
type Variant struct {
	Buffers   BufferKind
	CTAPolicy CTAPolicy
}

// Baseline is plain buffers on a default communicator: the seed's, and the
// only variant the MPI backend has.
var Baseline = Variant{Buffers: PlainBuffers, CTAPolicy: DefaultCTAPolicy}

func (v Variant) String() string { return string(v.Buffers) + "/" + string(v.CTAPolicy) }

// Names are values' names, in order.
func Names[T fmt.Stringer](values []T) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = v.String()
	}
	return out
}

// parseName sets *dst to the value of known whose name is b.
func parseName[T ~string](dst *T, b []byte, known []T) error {
	if i := slices.Index(known, T(b)); i >= 0 {
		*dst = known[i]
		return nil
	}
	names := make([]string, len(known))
	for i, k := range known {
		names[i] = string(k)
	}
	return unknownName(string(b), names)
}

func unknownName(got string, known []string) error {
	return fmt.Errorf("%q is unknown: use %s", got, strings.Join(known, ", "))
}

// Mode is a timed mode's name: what one timed sample runs (see timedModes,
// whose records are the modes; the constants name the ones the harness and
// reports refer to).
type Mode string

// The timed modes. Direct and Decomposed are the seed's names.
const (
	Direct             Mode = "direct"         // AllReduce
	Decomposed         Mode = "decomposed"     // ReduceScatter, then AllGather
	ReduceScatterAlone Mode = "reduce-scatter" // ReduceScatter of the full buffer
	AllGatherAlone     Mode = "all-gather"     // AllGather into the full buffer
	// Hierarchical is ReduceScatter in the group, AllReduce across the
	// groups, AllGather in the group ([hierarchy]).
	Hierarchical Mode = "hierarchical"
)

// Modes lists the timed modes in report order: timedModes' (modes.go).
var Modes = modeNames()

// DefaultModes are the seed's two: the comparison itself.
var DefaultModes = []Mode{Direct, Decomposed}

func (m Mode) String() string { return string(m) }

// UnmarshalText reads a mode and refuses an unknown one.
func (m *Mode) UnmarshalText(b []byte) error { return parseName(m, b, Modes) }

// Placement says where the collectives' outputs go.
type Placement string

const (
	// OutOfPlace gives every collective its own output buffer.
	OutOfPlace Placement = "out-of-place"
	// InPlace reduces into the input: AllReduce in its buffer, ReduceScatter
	// leaving the shard inside the input at rank x count, AllGather reading
	// that shard from inside its output.
	InPlace Placement = "in-place"
)

// Method says how a sample is timed.
type Method string

const (
	// PerOp is the seed's: one operation between two timestamps taken after
	// a synchronisation.
	PerOp Method = "per-op"
	// Batched is nccl-tests': Batch back-to-back operations between two
	// timestamps, divided by Batch.
	Batched Method = "batched"
	// Barriered is IMB's: Batch operations, each after an untimed barrier
	// of all ranks and timed alone; the sample is their sum, divided by
	// Batch. A rank's stall between operations lands in the barrier.
	Barriered Method = "barrier"
	// GraphReplay captures Batch operations into a CUDA graph and times its
	// replay, divided by Batch: no launch overhead.
	GraphReplay Method = "graph"
)

// SizeText writes a byte count as 1K, 64K, 256M when it is a whole number
// of such units, and as plain bytes otherwise.
func SizeText(b int64) string {
	for _, u := range []struct {
		s string
		m int64
	}{{"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}} {
		if b >= u.m && b%u.m == 0 {
			return fmt.Sprintf("%d%s", b/u.m, u.s)
		}
	}
	return fmt.Sprint(b)
}

// USText writes microseconds with at least four significant digits in as
// few columns as that takes: 0.24, 24.39, 346.1, 1618, 120034. Every
// report writes times this way, so that one figure reads the same wherever
// it is printed.
func USText(us float64) string {
	switch a := math.Abs(us); {
	case a >= 1000:
		return fmt.Sprintf("%.0f", us)
	case a >= 100:
		return fmt.Sprintf("%.1f", us)
	default:
		return fmt.Sprintf("%.2f", us)
	}
}
