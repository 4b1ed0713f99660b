package ncclx

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
)

// Options are what the job asks of the NCCL backend beyond the Bootstrap.
type Options struct {
	// ShareGPU lets several ranks of one host run on one GPU (config
	// gpu.sharing): each rank then gets its own NCCL host id, so that
	// NCCL sees one host per rank and talks between them over its network
	// transport. For proving the NCCL path where GPUs are fewer than
	// ranks; the timings then measure that transport, not the GPU's links.
	ShareGPU bool
}

// SharingKey is the config key that asks for GPU sharing, named in the
// refusals that sharing would lift.
const SharingKey = "gpu.sharing"

// chooseGPU is the GPU ordinal a rank uses among the visible ones, fitted
// to how jobs are started:
//   - a rank that sees exactly one GPU uses it (srun --gpus-per-task=1,
//     --gpu-bind=single:1, or CUDA_VISIBLE_DEVICES set per rank);
//   - a rank that sees at least as many GPUs as ranks run on its node uses
//     GPU <local rank> (every rank given all of the node's GPUs);
//   - with sharing asked for, any other rank uses GPU <local rank> modulo
//     the GPUs it sees;
//   - anything else is refused, naming what the rank sees and the fixes.
//
// Two ranks of one host that end on one GPU are caught after, by bus id
// (sameGPU), since only the ranks together can tell.
func chooseGPU(host string, visible, localRank, localSize int, opt Options) (int, error) {
	switch {
	case visible == 1:
		return 0, nil
	case visible >= localSize:
		return localRank, nil
	case visible > 1 && opt.ShareGPU:
		return localRank % visible, nil
	}
	return 0, tooFewGPUs(host, visible, localSize)
}

// tooFewGPUs explains that a rank sees neither one GPU nor a GPU for each
// rank on its node, and what to do about it.
func tooFewGPUs(host string, gpus, localSize int) error {
	sees := fmt.Sprintf("NCCL backend: a rank on %s sees %d GPUs but %d ranks run on that node", host, gpus, localSize)
	if v, ok := os.LookupEnv("CUDA_VISIBLE_DEVICES"); ok {
		sees += fmt.Sprintf(" (CUDA_VISIBLE_DEVICES=%q)", clipValue(v))
	}
	if gpus == 0 {
		return errors.New(sees + ": run on a node with GPUs, or check the job's GPU allocation")
	}
	return fmt.Errorf("%s: a rank needs exactly one GPU, or all of its node's: give each rank one GPU "+
		"(e.g. srun --gpus-per-task=1) or every rank all of them, or start at most %d ranks per node "+
		"(e.g. mpirun -np %d, or srun --ntasks-per-node=%d); or set %s = true to share GPUs between ranks "+
		"(a functional test: timings then measure NCCL's network transport)", sees, gpus, gpus, gpus, SharingKey)
}

// clipValue shortens a variable's value for an error: named, not echoed.
func clipValue(v string) string {
	if len(v) > 80 {
		return v[:80] + "..."
	}
	return v
}

// gpuOf is one rank's GPU as the ranks exchange it: its host and bus id.
type gpuOf struct{ host, bus string }

// sameGPU groups the ranks by GPU (host and bus id) and returns the groups
// of more than one rank, each sorted, in the order of their lowest rank.
func sameGPU(gpus []gpuOf) [][]int {
	index := map[gpuOf]int{}
	var groups [][]int
	for r, g := range gpus {
		i, ok := index[g]
		if !ok {
			i = len(groups)
			index[g] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], r)
	}
	return slices.DeleteFunc(groups, func(g []int) bool { return len(g) < 2 })
}

// DuplicateGPUError refuses ranks that would share a GPU without sharing
// asked for. Every rank finds the same one, from the same exchange.
type DuplicateGPUError struct {
	Groups [][]int // ranks on one GPU, each group sorted
	GPUs   []gpuOf // each group's GPU
}

func (e *DuplicateGPUError) Error() string {
	var parts []string
	for i, g := range e.Groups {
		parts = append(parts, fmt.Sprintf("ranks %s on %s share GPU %s", rankList(g), e.GPUs[i].host, e.GPUs[i].bus))
	}
	return fmt.Sprintf("NCCL backend: %s: NCCL runs one rank per GPU. Give each rank its own GPU "+
		"(e.g. srun --gpus-per-task=1, or a different CUDA_VISIBLE_DEVICES per rank) or every rank all of the node's GPUs, "+
		"or start fewer ranks; or, to try the NCCL path on fewer GPUs than ranks, set %s = true "+
		"(-set %s=true): timings then measure NCCL's network transport, not the GPU's links",
		strings.Join(parts, "; "), SharingKey, SharingKey)
}

// rankList writes ranks as "0-3" for a run of consecutive ranks, else
// "0,2,5"; at most 16 are listed.
func rankList(r []int) string {
	if len(r) > 1 && r[len(r)-1]-r[0] == len(r)-1 {
		return fmt.Sprintf("%d-%d", r[0], r[len(r)-1])
	}
	var s []string
	for i, x := range r {
		if i == 16 {
			s = append(s, fmt.Sprintf("and %d more", len(r)-16))
			break
		}
		s = append(s, fmt.Sprint(x))
	}
	return strings.Join(s, ",")
}

// setenv and lookupEnv set and read the process's environment; the
// tests, whose ranks are goroutines of one process, record instead.
var (
	setenv    = func(rank int, k, v string) error { return os.Setenv(k, v) }
	lookupEnv = func(rank int, k string) (string, bool) { return os.LookupEnv(k) }
)

// HostIDEnv and SocketIfnameEnv are the NCCL variables a shared GPU needs.
const (
	HostIDEnv       = "NCCL_HOSTID"
	SocketIfnameEnv = "NCCL_SOCKET_IFNAME"
)

// shareEnv sets, before NCCL starts, what lets ranks share a GPU: a host
// id of the rank's own, so that NCCL sees one host per rank and skips its
// duplicate-GPU check (it would refuse "Duplicate GPU detected"), and,
// when every rank runs on one host, the loopback interface for its socket
// transport. A variable the user set is kept. It returns what it set.
func shareEnv(rank int, host string, oneHost bool) ([]string, error) {
	want := [][2]string{{HostIDEnv, fmt.Sprintf("%s-rsag-rank%d", host, rank)}}
	if oneHost {
		want = append(want, [2]string{SocketIfnameEnv, "lo"})
	}
	var set []string
	for _, kv := range want {
		if _, ok := lookupEnv(rank, kv[0]); ok {
			continue
		}
		if err := setenv(rank, kv[0], kv[1]); err != nil {
			return set, err
		}
		set = append(set, kv[0]+"="+kv[1])
	}
	return set, nil
}

// checkGPUs exchanges every rank's GPU and, where ranks of one host share
// one, refuses unless sharing was asked for; when it was, sets the
// environment NCCL needs for that (shareEnv) before any NCCL call. Every
// rank reaches the same verdict from the same exchange.
func (b *Backend) checkGPUs(boot Bootstrap, opt Options) error {
	all, err := boot.AllGather([]byte(b.host + "\x00" + b.info.BusID))
	if err != nil {
		return b.errorf("exchanging the ranks' GPUs: %w", err)
	}
	gpus := make([]gpuOf, len(all))
	oneHost := true
	for r, m := range all {
		host, bus, _ := strings.Cut(string(m), "\x00")
		gpus[r] = gpuOf{host, bus}
		oneHost = oneHost && host == gpus[0].host
	}
	groups := sameGPU(gpus)
	if len(groups) == 0 {
		return nil
	}
	if !opt.ShareGPU {
		e := &DuplicateGPUError{Groups: groups}
		for _, g := range groups {
			e.GPUs = append(e.GPUs, gpus[g[0]])
		}
		return e
	}
	// Every rank, sharing or not, gets its own host id: NCCL then talks
	// between all of them over one transport, which the outputs name.
	if _, err := shareEnv(b.rank, b.host, oneHost); err != nil {
		return b.errorf("setting NCCL's environment for a shared GPU: %w", err)
	}
	return nil
}
