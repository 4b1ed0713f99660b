package job

import (
	"slices"
	"testing"
)

// Ranks probe alike only when nothing the probe reads differs between
// them: the host, the working directory, and the CUDA, NCCL, NVIDIA, rsag
// and loader variables, whatever their order; other variables (the
// launcher's per-rank ones) do not count.
func TestProbeKey(t *testing.T) {
	base := []string{"PATH=/bin", "CUDA_VISIBLE_DEVICES=0,1", "OMPI_COMM_WORLD_RANK=0", "LD_LIBRARY_PATH=/opt/nccl"}
	key := probeKey("node1", "/work", base)
	same := []string{"LD_LIBRARY_PATH=/opt/nccl", "OMPI_COMM_WORLD_RANK=5", "CUDA_VISIBLE_DEVICES=0,1", "PATH=/bin"}
	if got := probeKey("node1", "/work", same); got != key {
		t.Errorf("another rank's own variables changed the key")
	}
	for name, other := range map[string]string{
		"another host":           probeKey("node2", "/work", base),
		"another directory":      probeKey("node1", "/tmp", base),
		"per-rank GPUs":          probeKey("node1", "/work", append(slices.Clone(base[:1]), "CUDA_VISIBLE_DEVICES=1", base[2], base[3])),
		"an NCCL variable":       probeKey("node1", "/work", append(slices.Clone(base), "NCCL_DEBUG=INFO")),
		"rsag's library path":    probeKey("node1", "/work", append(slices.Clone(base), "RSAG_NCCL_LIBRARY=./libnccl.so.2")),
		"a container's GPUs":     probeKey("node1", "/work", append(slices.Clone(base), "NVIDIA_VISIBLE_DEVICES=all")),
		"a preloaded library":    probeKey("node1", "/work", append(slices.Clone(base), "LD_PRELOAD=/x.so")),
		"the loader's path gone": probeKey("node1", "/work", base[:3]),
	} {
		if other == key {
			t.Errorf("%s left the key as it was", name)
		}
	}
}

// Each reason a prober gave is said of every rank that probes alike with
// it, and only of them.
func TestProbeReasons(t *testing.T) {
	// Ranks 0-2 on node1, 3-5 on node2; rank 4 sees other GPUs.
	alike := messages{order: []string{"n1", "n2", "n2b"}, ranks: map[string][]int{"n1": {0, 1, 2}, "n2": {3, 5}, "n2b": {4}}, world: 6}
	// Node1's prober and rank 4 found too few GPUs; node2's prober (3) nothing.
	said := messages{order: []string{"too few GPUs"}, ranks: map[string][]int{"too few GPUs": {0, 4}}, world: 6}
	got := probeReasons(alike, said)
	want := []string{"too few GPUs (rank(s) [0 1 2 4])"}
	if !slices.Equal(got, want) {
		t.Errorf("probeReasons = %q, want %q", got, want)
	}
	said = messages{order: []string{"no libcuda", "too few GPUs"}, ranks: map[string][]int{"no libcuda": {3}, "too few GPUs": {0, 4}}, world: 6}
	want = []string{"no libcuda (rank(s) [3 5])", "too few GPUs (rank(s) [0 1 2 4])"}
	if got := probeReasons(alike, said); !slices.Equal(got, want) {
		t.Errorf("probeReasons = %q, want %q", got, want)
	}
	if got := probeReasons(alike, messages{ranks: map[string][]int{}, world: 6}); len(got) != 0 {
		t.Errorf("no reasons gave %q", got)
	}
}
