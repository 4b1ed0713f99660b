package phase

import (
	"slices"
	"testing"
)

func mask(cpus ...int) CPUMask {
	var m CPUMask
	for _, c := range cpus {
		m = m.With(c)
	}
	return m
}

// A node is crowded when its ranks outnumber the processors they share
// between them, whether unbound on a small machine or bound to too few.
func TestCrowded(t *testing.T) {
	ranks := [][]int{{0, 1, 2, 3}, {4, 5}, {6, 7}, {8}}
	masks := []CPUMask{
		mask(0, 1), mask(0, 1), mask(0, 1), mask(0, 1), // 4 unbound ranks on 2 processors
		mask(0), mask(1), // bound, one each
		mask(3), mask(3), // bound to one between them
		mask(9, 200), // one rank on processors past the first byte
	}
	got := Crowded(ranks, masks)
	want := []string{"4 ranks on 2 processors", "", "2 ranks on 1 processor", ""}
	if !slices.Equal(got, want) {
		t.Errorf("Crowded = %q, want %q", got, want)
	}
	if got := MaskOf(mask(9, 200).Bytes()).Count(); got != 2 {
		t.Errorf("a mask through Bytes and MaskOf holds %d processors, want 2", got)
	}
	if got := Crowded(ranks, nil); !slices.Equal(got, []string{"", "", "", ""}) {
		t.Errorf("unknown masks crowd %q", got)
	}
}
