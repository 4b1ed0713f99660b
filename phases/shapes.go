package phases

import "fmt"

// Collective is one collective's facts, kept next to each other so that the
// harness has no per-collective branch: how the receive count follows from
// the send count, and nccl-tests' bus-bandwidth factor.
type Collective struct {
	Name string
	// RecvCount is the receive count for a send count on world ranks, and
	// whether the send count is valid at all.
	RecvCount func(send, world int) (int, bool)
	// Rule says, for an error message, what the shapes must satisfy.
	Rule string
	// BusFactor converts algorithm bandwidth (bytes / time) into bus
	// bandwidth, as nccl-tests does: AllReduce 2(W-1)/W, the others (W-1)/W.
	BusFactor func(world int) float64
}

var (
	AllReduceColl = Collective{
		Name:      "all-reduce",
		RecvCount: func(send, world int) (int, bool) { return send, true },
		Rule:      "the output must have as many elements as the input",
		BusFactor: func(w int) float64 { return 2 * float64(w-1) / float64(w) },
	}
	ReduceScatterColl = Collective{
		Name:      "reduce-scatter",
		RecvCount: func(send, world int) (int, bool) { return send / world, send%world == 0 },
		Rule:      "the input must have exactly output elements x world size",
		BusFactor: func(w int) float64 { return float64(w-1) / float64(w) },
	}
	AllGatherColl = Collective{
		Name:      "all-gather",
		RecvCount: func(send, world int) (int, bool) { return send * world, true },
		Rule:      "the output must have exactly input elements x world size",
		BusFactor: func(w int) float64 { return float64(w-1) / float64(w) },
	}
)

// ShapeError is a collective call whose buffers do not fit each other. NCCL
// cannot see buffer sizes and would read or write out of bounds, so every
// backend rejects such a call before it reaches the library.
type ShapeError struct {
	Collective string
	SendCount  int
	RecvCount  int
	SendType   DType
	RecvType   DType
	World      int
	Rule       string
}

func (e *ShapeError) Error() string {
	if e.SendType != e.RecvType {
		return fmt.Sprintf("%s: input is %s but output is %s: both buffers must have the same element type",
			e.Collective, e.SendType, e.RecvType)
	}
	if e.Collective == ReduceScatterColl.Name && e.SendCount%e.World != 0 {
		padded := (e.SendCount + e.World - 1) / e.World * e.World
		return fmt.Sprintf("%s: input of %d elements does not divide by world size %d: %s "+
			"(output has %d); pad the input to %d elements with the operation's identity and trim the result",
			e.Collective, e.SendCount, e.World, e.Rule, e.RecvCount, padded)
	}
	return fmt.Sprintf("%s: input of %d elements and output of %d elements on world size %d: %s",
		e.Collective, e.SendCount, e.RecvCount, e.World, e.Rule)
}

// CheckShapes returns a *ShapeError when send and recv do not fit c on
// world ranks, and nil when they do.
func CheckShapes(c Collective, send, recv Buffer, world int) error {
	want, ok := c.RecvCount(send.Count(), world)
	if send.DType() != recv.DType() || !ok || want != recv.Count() || send.Count() == 0 {
		return &ShapeError{Collective: c.Name, SendCount: send.Count(), RecvCount: recv.Count(),
			SendType: send.DType(), RecvType: recv.DType(), World: world, Rule: c.Rule}
	}
	return nil
}
