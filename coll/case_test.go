package coll_test

import (
	"testing"

	"rsag/coll"
)

// seedSweep is the seed's sweep as the config's defaults give it.
func seedSweep() coll.Sweep {
	return coll.Sweep{Name: "default", SizesBytes: []int64{1024, 1 << 20}, DTypes: []coll.DType{coll.Float32},
		Ops: []coll.Op{coll.Sum}, Placements: []coll.Placement{coll.OutOfPlace}, Methods: []coll.Method{coll.PerOp},
		Modes: coll.DefaultModes, Buffers: []coll.BufferKind{coll.PlainBuffers},
		CTAPolicies: []coll.CTAPolicy{coll.DefaultCTAPolicy}, Offsets: []int64{0}, Batch: 20, Cycles: 10}
}

// The seed's sweep is the seed's at any sizes and under any run name;
// one more value of any dimension, or other modes, makes it a sweep.
func TestSweepIsSeed(t *testing.T) {
	s := seedSweep()
	if !s.IsSeed() {
		t.Fatalf("the seed's sweep %+v is not the seed's", s)
	}
	s.Name, s.SizesBytes = "mine", []int64{64}
	if !s.IsSeed() {
		t.Errorf("another run name and size: not the seed's")
	}
	for what, change := range map[string]func(*coll.Sweep){
		"dtypes":       func(s *coll.Sweep) { s.DTypes = []coll.DType{coll.Float64} },
		"two dtypes":   func(s *coll.Sweep) { s.DTypes = append(s.DTypes, coll.Int32) },
		"ops":          func(s *coll.Sweep) { s.Ops = []coll.Op{coll.Max} },
		"placements":   func(s *coll.Sweep) { s.Placements = []coll.Placement{coll.InPlace} },
		"methods":      func(s *coll.Sweep) { s.Methods = []coll.Method{coll.Batched} },
		"modes":        func(s *coll.Sweep) { s.Modes = []coll.Mode{coll.Direct} },
		"buffers":      func(s *coll.Sweep) { s.Buffers = []coll.BufferKind{coll.RegisteredBuffers} },
		"cta policies": func(s *coll.Sweep) { s.CTAPolicies = []coll.CTAPolicy{coll.ZeroCTAPolicy} },
		"offsets":      func(s *coll.Sweep) { s.Offsets = []int64{64} },
	} {
		s := seedSweep()
		change(&s)
		if s.IsSeed() {
			t.Errorf("%s changed: still the seed's", what)
		}
	}
}
