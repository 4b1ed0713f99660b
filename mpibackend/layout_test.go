package mpibackend

import (
	"strings"
	"testing"

	"rsag/coll"
)

// TestClassify checks the in-place layouts on fake addresses, ranks and
// world sizes: no memory and no MPI involved.
func TestClassify(t *testing.T) {
	const base = 0x10000
	cases := []struct {
		name       string
		p          coll.Collective
		send, recv span
		elem, rank int
		in         bool
		err        string // "" for no error
	}{
		// all-reduce: in place only when both are the same memory.
		{"ar same buffer", coll.AllReduce, span{base, 10}, span{base, 10}, 8, 3, true, ""},
		{"ar apart", coll.AllReduce, span{base, 10}, span{base + 80, 10}, 8, 0, false, ""},
		{"ar recv first, apart", coll.AllReduce, span{base + 80, 10}, span{base, 10}, 8, 0, false, ""},
		{"ar shifted", coll.AllReduce, span{base + 8, 10}, span{base, 10}, 8, 0, false, "at element offset 1"},
		{"ar send before recv", coll.AllReduce, span{base, 10}, span{base + 16, 10}, 8, 0, false, "at element offset -2"},

		// reduce-scatter, world 4, 5 elements per rank: recv at rank*5 of send.
		{"rs rank 0", coll.ReduceScatter, span{base, 20}, span{base, 5}, 4, 0, true, ""},
		{"rs rank 3", coll.ReduceScatter, span{base, 20}, span{base + 60, 5}, 4, 3, true, ""},
		{"rs rank 3 at rank 2's place", coll.ReduceScatter, span{base, 20}, span{base + 40, 5}, 4, 3, false,
			"rank x output elements = 15 on rank 3"},
		{"rs rank 1 at 0", coll.ReduceScatter, span{base, 20}, span{base, 5}, 4, 1, false, "at element offset 0"},
		{"rs straddling the end", coll.ReduceScatter, span{base, 20}, span{base + 76, 5}, 4, 0, false, "overlaps"},
		{"rs recv just after send", coll.ReduceScatter, span{base, 20}, span{base + 80, 5}, 4, 3, false, ""},
		{"rs recv just before send", coll.ReduceScatter, span{base + 20, 20}, span{base, 5}, 4, 3, false, ""},
		// world 2, 3 int64 per rank
		{"rs world 2 rank 1", coll.ReduceScatter, span{base, 6}, span{base + 24, 3}, 8, 1, true, ""},

		// all-gather, world 3, 4 float32 per rank: send at rank*4 of recv.
		{"ag rank 0", coll.AllGather, span{base, 4}, span{base, 12}, 4, 0, true, ""},
		{"ag rank 2", coll.AllGather, span{base + 32, 4}, span{base, 12}, 4, 2, true, ""},
		{"ag rank 1 at rank 2's place", coll.AllGather, span{base + 32, 4}, span{base, 12}, 4, 1, false,
			"rank x input elements = 4 on rank 1"},
		{"ag half inside", coll.AllGather, span{base + 40, 4}, span{base, 12}, 4, 2, false, "overlaps"},
		{"ag apart", coll.AllGather, span{base + 48, 4}, span{base, 12}, 4, 2, false, ""},
	}
	for _, tc := range cases {
		in, err := classify(tc.p, tc.send, tc.recv, tc.elem, tc.rank)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.err)
		case in != tc.in:
			t.Errorf("%s: in place = %v, want %v", tc.name, in, tc.in)
		}
	}
}
