package coll

import (
	"strings"
	"testing"
)

// The note appears only where two ranks of one host have one bus id, and
// counts the ranks and GPUs shared; host memory (no bus id) never shares.
func TestSharedGPUNote(t *testing.T) {
	gpu := func(host, bus string) Info { return Info{Host: host, BusID: bus} }
	for _, c := range []struct {
		infos []Info
		want  string
	}{
		{[]Info{gpu("a", "0:18"), gpu("a", "0:19"), gpu("b", "0:18")}, ""},
		{[]Info{gpu("a", ""), gpu("a", "")}, ""},
		{[]Info{gpu("a", "0:18"), gpu("a", "0:18"), gpu("a", "0:18"), gpu("a", "0:18")}, "GPU shared: 4 ranks ran on 1 GPU(s)"},
		{[]Info{gpu("a", "0:18"), gpu("a", "0:19"), gpu("a", "0:18"), gpu("a", "0:19"), gpu("b", "0:18")},
			"GPU shared: 4 ranks ran on 2 GPU(s)"},
	} {
		got := SharedGPUNote(c.infos)
		if (c.want == "") != (got == "") || !strings.HasPrefix(got, c.want) {
			t.Errorf("%v: got %q, want %q...", c.infos, got, c.want)
		}
		if got != "" && (!strings.Contains(got, "NCCL's network transport, not the GPU's links") || len(got) > 118) {
			t.Errorf("%q: says too little, or is too long for a header line", got)
		}
	}
}
