package outdir

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"rsag/internal/rankset"
)

// AsyncSaid is what a rank's library last said of its asynchronous
// errors (coll.AsyncStatus: NCCL's ncclCommGetAsyncError), as its
// heartbeat carries it: the rank's own goroutine asked, in a wait for the
// device, at At.
type AsyncSaid struct {
	Call string    `json:"call"`
	Said string    `json:"said"`
	At   time.Time `json:"at"`
}

// asyncMaxAnswers bounds how many different answers a hang quotes; the
// rest are counted, their ranks as ranges.
const asyncMaxAnswers = 4

// asyncText is what the libraries of the ranks in group, which wait in
// the same collective, say of their own errors, ranks as ranges: e.g.
// "; ncclCommGetAsyncError, asked by each rank in this collective, says:
// ncclSuccess (no error yet) on all 4 ranks". An answer asked before the
// rank entered the collective is not one about it (a wait in the driver,
// RSAG_WAIT=block, asks nothing), and is not quoted as one. "" when no
// rank's backend reports one (MPI).
func (h Hang) asyncText(group []int) string {
	var order []string
	ranks := map[string][]int{}
	call := ""
	for _, r := range group {
		b := h.Beats[r]
		if b.Async == nil {
			continue
		}
		call = b.Async.Call
		said := b.Async.Said
		if b.Async.At.Before(b.Step.At) {
			said = "not asked since it entered it (no polling device wait since: RSAG_WAIT=block, or a wait on the host)"
		}
		if _, ok := ranks[said]; !ok {
			order = append(order, said)
		}
		ranks[said] = append(ranks[said], r)
	}
	if len(order) == 0 {
		return ""
	}
	var parts []string
	for i, said := range order {
		if i == asyncMaxAnswers {
			var rest []int
			for _, s := range order[i:] {
				rest = append(rest, ranks[s]...)
			}
			slices.Sort(rest)
			parts = append(parts, fmt.Sprintf("%d other answers on %s", len(order)-i, rankset.Ranks(rest)))
			break
		}
		on := rankset.Ranks(ranks[said])
		if len(ranks[said]) == len(group) && len(group) > 1 {
			on = fmt.Sprintf("all %d ranks", len(group))
		}
		parts = append(parts, said+" on "+on)
	}
	return fmt.Sprintf("; %s, asked by each rank in this collective, says: %s", call, strings.Join(parts, ", and "))
}
