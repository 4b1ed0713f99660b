package coll

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// Case is the identity of one timing case: a point of a sweep and the mode
// timed there. Every timing sample, row, statistic, ratio and fit embeds it
// instead of restating its fields, so that a new sweep dimension is a field
// here (and a list in Sweep, and a Dim), and the rows, statistics, model,
// tables, plots, JSON and compare pick it up by themselves.
//
// A statistic's Case has every field; a fit's has no size (it is over the
// sizes) and a ratio's no mode (it pairs two), which summary.json then
// leaves out. The field order is summary.json's key order; the csv tags
// are the timing CSVs' columns ("sweep": written in the per-rank files only
// when the config sweeps beyond the seed's single case).
type Case struct {
	Run       string     `json:"run" csv:"run,sweep"` // the [[run]] it belongs to; "default" for [timing] alone
	SizeBytes int64      `json:"size_bytes,omitempty" csv:"size_bytes"`
	DType     DType      `json:"dtype" csv:"dtype,sweep"`
	Op        Op         `json:"op" csv:"op,sweep"`
	Placement Placement  `json:"placement" csv:"placement,sweep"`
	Method    Method     `json:"method" csv:"method,sweep"`
	Batch     int        `json:"batch" csv:"batch,sweep"`           // operations per sample: 1 for per-op
	Buffers   BufferKind `json:"buffers" csv:"buffers,sweep"`       // plain, registered, symmetric
	CTAPolicy CTAPolicy  `json:"cta_policy" csv:"cta_policy,sweep"` // default, efficiency, zero
	// Offset is the bytes every buffer of the case starts after its
	// allocation's start (nccl-tests' unaligned buffers): 0, or a multiple
	// of the element size that leaves the buffers off NCCL's 16-byte
	// alignment.
	Offset int64 `json:"offset_bytes" csv:"offset_bytes,sweep"`
	Mode   Mode  `json:"mode,omitempty" csv:"mode"`
}

// Variant is the case's buffers and CTA policy.
func (c Case) Variant() Variant { return Variant{Buffers: c.Buffers, CTAPolicy: c.CTAPolicy} }

// Pair is the case without its mode: what a ratio of two modes pairs.
func (c Case) Pair() Case {
	c.Mode = ""
	return c
}

// Series is the case without its size: what a fit over the sizes is of.
func (c Case) Series() Case {
	c.SizeBytes = 0
	return c
}

// Allocation is the case without what a sample's timing chooses (method,
// batch, mode): cases with the same Allocation time the same buffers.
func (c Case) Allocation() Case {
	c.Method, c.Batch, c.Mode = "", 0, ""
	return c
}

// Buffer is how the case allocates a buffer of count elements: its element
// type, and everything else of the case that decides where the buffer lies.
func (c Case) Buffer(count int) BufferSpec {
	return BufferSpec{DType: c.DType, Count: count, OffsetBytes: c.Offset}
}

// String names the case as errors and progress lines do: "default 1K
// float32 sum out-of-place per-op", then buffers/policy when they are not
// the baseline, then the mode when it has one.
func (c Case) String() string {
	s := fmt.Sprintf("%s %s %s %s %s %s", c.Run, SizeText(c.SizeBytes), c.DType, c.Op, c.Placement, c.Method)
	if c.Variant() != Baseline {
		s += " " + c.Variant().String()
	}
	if c.Mode != "" {
		s += " " + string(c.Mode)
	}
	return s
}

// Dim is one dimension of a case as reports show it: its name, how a case
// spells its value, and the value a report leaves unsaid when every case
// has it (the seed's, for the dimensions the seed did not sweep). Reports
// loop over Dims; none names a dimension itself.
type Dim struct {
	Name  string
	Text  func(Case) string
	Usual string
}

// Dims are the case's dimensions but its size and mode (the axes of every
// table and figure), in report order.
var Dims = []Dim{
	{Name: "run", Text: func(c Case) string { return c.Run }},
	{Name: "dtype", Text: func(c Case) string { return c.DType.String() }},
	{Name: "op", Text: func(c Case) string { return c.Op.String() }},
	{Name: "placement", Text: func(c Case) string { return string(c.Placement) }},
	{Name: "method", Text: func(c Case) string { return MethodText(c.Method, c.Batch) }},
	{Name: "buffers", Text: func(c Case) string { return string(c.Buffers) }, Usual: string(PlainBuffers)},
	{Name: "cta policy", Text: func(c Case) string { return string(c.CTAPolicy) }, Usual: string(DefaultCTAPolicy)},
	{Name: "offset", Text: func(c Case) string { return fmt.Sprintf("+%d B", c.Offset) }, Usual: "+0 B"},
}

// MethodText is a method with its batch: "per-op", "batched x20".
func MethodText(m Method, batch int) string {
	if batch > 1 {
		return fmt.Sprintf("%s x%d", m, batch)
	}
	return string(m)
}

// VariantText names buffers and a CTA policy, "symmetric/zero"; "" for
// the seed's plain buffers on a default communicator (or none given).
func VariantText(b BufferKind, p CTAPolicy) string {
	if (b == "" || b == PlainBuffers) && (p == "" || p == DefaultCTAPolicy) {
		return ""
	}
	return string(b) + "/" + string(p)
}

// Compare orders cases dimension by dimension in Case's field order, each
// by its place in the dimension's list of known values (Placements,
// Methods, ...) and otherwise by value: a stable order for panels and rows
// that needs no dimension named.
func Compare(a, b Case) int {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	for i := range va.NumField() {
		if d := compareField(va.Field(i), vb.Field(i)); d != 0 {
			return d
		}
	}
	return 0
}

// known is each named dimension's values in report order.
var known = map[reflect.Type][]string{
	reflect.TypeFor[DType]():      Names(AllDTypes),
	reflect.TypeFor[Op]():         Names(AllOps),
	reflect.TypeFor[Placement]():  Names(Placements),
	reflect.TypeFor[Method]():     Names(Methods),
	reflect.TypeFor[BufferKind](): Names(BufferKinds),
	reflect.TypeFor[CTAPolicy]():  Names(CTAPolicies),
	reflect.TypeFor[Mode]():       Names(Modes),
}

func compareField(a, b reflect.Value) int {
	if order, ok := known[a.Type()]; ok {
		sa, sb := fmt.Sprint(a.Interface()), fmt.Sprint(b.Interface())
		ia, ib := slices.Index(order, sa), slices.Index(order, sb)
		if ia < 0 {
			ia = len(order)
		}
		if ib < 0 {
			ib = len(order)
		}
		if ia != ib {
			return ia - ib
		}
		return strings.Compare(sa, sb)
	}
	switch a.Kind() {
	case reflect.Int, reflect.Int64:
		return cmpInt(a.Int(), b.Int())
	case reflect.String:
		return strings.Compare(a.String(), b.String())
	}
	return 0
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// BufferSpec is what Backend.Alloc allocates: count elements of dtype,
// starting OffsetBytes (a multiple of the element size) after the start of
// the memory allocated for them.
type BufferSpec struct {
	DType       DType
	Count       int
	OffsetBytes int64
}

// OffsetElems is the offset in elements, or an error when it is negative
// or not a whole number of them: an element must stay aligned to its size.
func (s BufferSpec) OffsetElems() (int, error) {
	size := int64(s.DType.Size())
	if s.OffsetBytes < 0 || s.OffsetBytes%size != 0 {
		return 0, fmt.Errorf("an offset of %d bytes is not a whole number of %d-byte %s elements", s.OffsetBytes, size, s.DType)
	}
	return int(s.OffsetBytes / size), nil
}

// Elems is a plain buffer of count elements of d.
func Elems(d DType, count int) BufferSpec { return BufferSpec{DType: d, Count: count} }

// Bytes is the memory the buffer takes: its elements and its offset.
func (s BufferSpec) Bytes() int64 { return int64(s.Count)*int64(s.DType.Size()) + s.OffsetBytes }

// Sweep is one sweep of the timing phase (a [[run]] table, or [timing]
// alone): every combination of its dimensions is a case, and every case
// times each of its modes, warmups then cycles.
type Sweep struct {
	Name        string
	SizesBytes  []int64
	DTypes      []DType
	Ops         []Op
	Placements  []Placement
	Buffers     []BufferKind // empty: plain
	CTAPolicies []CTAPolicy  // empty: default
	Offsets     []int64      // bytes; empty: 0
	Methods     []Method
	Modes       []Mode // empty: DefaultModes
	Batch       int    // operations per batched or graph sample
	Warmups     int
	Cycles      int
	// Discard is how many leading cycles the statistics drop, so that a
	// figure streamed while the phase runs is the one the tables print.
	Discard int
	// CheckLast checks only the last sample of each mode of a case (and,
	// for batched and graph samples in place, one validation operation
	// after them), as the seed and nccl-tests do (timing.check = "last");
	// false, the default, checks every sample's output.
	CheckLast bool
}

// Cases lists the sweep's cases, without a mode, in the order the timing
// phase runs them: CTA policy, buffers, size, dtype, op, placement,
// offset, method, so that the cases on one backend variant, and then those
// on the same buffers (Allocation), are next to each other.
func (s Sweep) Cases() []Case {
	offsets := s.Offsets
	if len(offsets) == 0 {
		offsets = []int64{0}
	}
	var out []Case
	for _, v := range s.Variants() {
		for _, size := range s.SizesBytes {
			for _, d := range s.DTypes {
				for _, op := range s.Ops {
					for _, p := range s.Placements {
						for _, off := range offsets {
							for _, m := range s.Methods {
								batch := 1
								if m.Batched() {
									batch = s.Batch
								}
								out = append(out, Case{Run: s.Name, SizeBytes: size, DType: d, Op: op, Placement: p,
									Method: m, Batch: batch, Buffers: v.Buffers, CTAPolicy: v.CTAPolicy, Offset: off})
							}
						}
					}
				}
			}
		}
	}
	return out
}

// Variants are the sweep's buffer kinds x CTA policies (Baseline when it
// names none), in the config's order.
func (s Sweep) Variants() []Variant {
	buffers, policies := s.Buffers, s.CTAPolicies
	if len(buffers) == 0 {
		buffers = []BufferKind{PlainBuffers}
	}
	if len(policies) == 0 {
		policies = []CTAPolicy{DefaultCTAPolicy}
	}
	var out []Variant
	for _, p := range policies {
		for _, b := range buffers {
			out = append(out, Variant{Buffers: b, CTAPolicy: p})
		}
	}
	return out
}

// SeedCase is the seed's single case, but for its run's name, its size
// and its mode: the values of the dimensions the seed did not sweep. A
// new dimension is a field of Case, so IsSeed compares it without being
// told; its seed value is its zero value unless given here.
var SeedCase = Case{DType: Float32, Op: Sum, Placement: OutOfPlace, Method: PerOp, Batch: 1,
	Buffers: PlainBuffers, CTAPolicy: DefaultCTAPolicy, Offset: 0}

// IsSeed says whether the sweep is the seed's, at whatever sizes: every
// case it gives is SeedCase but for its run and size, and it times the
// seed's modes. Its per-rank CSVs then keep exactly the seed's columns
// (the csv tags' "sweep" class is left out).
func (s Sweep) IsSeed() bool {
	s.SizesBytes = []int64{1} // the sizes are no dimension of the promise
	cases := s.Cases()
	if len(cases) != 1 {
		return false
	}
	c := cases[0]
	c.Run, c.SizeBytes = "", 0
	modes := s.Modes
	if len(modes) == 0 {
		modes = DefaultModes
	}
	return c == SeedCase && slices.Equal(modes, DefaultModes)
}

// TimedModes returns the records of the sweep's modes (the seed's two when
// it names none).
func (s Sweep) TimedModes() ([]TimedMode, error) {
	names := s.Modes
	if len(names) == 0 {
		names = DefaultModes
	}
	out := make([]TimedMode, len(names))
	for i, n := range names {
		m, ok := ModeOf(n)
		if !ok {
			return nil, fmt.Errorf("run %s: timed mode %q is unknown", s.Name, n)
		}
		out[i] = m
	}
	return out, nil
}
