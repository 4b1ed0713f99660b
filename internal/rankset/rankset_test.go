package rankset

import (
	"strings"
	"testing"
)

func seq(from, to int) []int {
	var v []int
	for r := from; r <= to; r++ {
		v = append(v, r)
	}
	return v
}

func TestText(t *testing.T) {
	for _, c := range []struct {
		in   []int
		want string
	}{
		{nil, ""},
		{[]int{3}, "3"},
		{[]int{1, 2}, "1,2"},
		{[]int{0, 1, 2, 3, 6, 8}, "0-3,6,8"},
		{append(seq(1, 7), seq(10, 1023)...), "1-7,10-1023"},
		{[]int{5, 3, 4, 3}, "3-5"},
	} {
		if got := Text(c.in); got != c.want {
			t.Errorf("Text(%v) = %q, want %q", c.in, got, c.want)
		}
	}
	if got := Ranks([]int{2}); got != "rank 2" {
		t.Errorf("Ranks: %q", got)
	}
	if got := Ranks(seq(0, 8191)); got != "ranks 0-8191" {
		t.Errorf("Ranks: %q", got)
	}
}

// Every other rank of 8,192 is 4,096 parts: the text stays short and says
// how many it left out.
func TestTextIsBounded(t *testing.T) {
	var even []int
	for r := 0; r < 8192; r += 2 {
		even = append(even, r)
	}
	got := Text(even)
	if len(got) > 200 || !strings.HasSuffix(got, "... and 4080 more parts (4096 ranks in all)") || !strings.HasPrefix(got, "0,2,4,") {
		t.Errorf("Text of every other rank of 8192: %d bytes: %q", len(got), got)
	}
	names := make([]string, 1024)
	for i := range names {
		names[i] = "node" + strings.Repeat("x", 3)
	}
	if got := Names(names); len(got) > 200 || !strings.HasSuffix(got, "and 1008 more") {
		t.Errorf("Names: %q", got)
	}
}
