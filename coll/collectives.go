package coll

import "fmt"

// Collective is one collective's facts, kept next to each other so that the
// harness, the backends and the reports have no per-collective branch: its
// buffer shapes, where an in-place call keeps its smaller buffer, nccl-tests'
// bus-bandwidth factor, how to call it, and what its output holds.
type Collective struct {
	Name  string // "all-reduce": what the watchdog and errors say
	Label string // "AllReduce": what reports say
	// SendCount is the input's element count when the case's full buffer
	// (the size a case names, as in nccl-tests) has full elements.
	SendCount func(full, world int) int
	// RecvCount is the output's element count for an input of send
	// elements on world ranks, and whether such an input is valid at all.
	RecvCount func(send, world int) (int, bool)
	// Rule says, for an error message, what the shapes must satisfy.
	Rule string
	// BusFactor converts algorithm bandwidth (bytes / time) into bus
	// bandwidth, as nccl-tests does: AllReduce 2(W-1)/W, the others (W-1)/W.
	BusFactor func(world int) float64
	// In place, the smaller buffer is a view inside the larger one (NCCL's
	// convention): SendInside says the input is inside the output
	// (AllReduce, AllGather), otherwise the output is inside the input
	// (ReduceScatter); InPlaceOffset is the inner buffer's element offset
	// on rank, and InPlaceWhere says that offset in words.
	SendInside    bool
	InPlaceOffset func(rank, send, recv int) int
	InPlaceWhere  string
	// Reference computes the collective on the host over what each member
	// of its group holds, in chunks: in[i] is member i's input as chunk
	// values (one value per chunk of equal size), and out[i] its output.
	// The checks compare every output with it.
	Reference func(in [][]float64, op Op) [][]float64
}

var (
	AllReduce = Collective{
		Name: "all-reduce", Label: "AllReduce",
		SendCount:  func(full, world int) int { return full },
		RecvCount:  func(send, world int) (int, bool) { return send, true },
		Rule:       "the output must have as many elements as the input",
		BusFactor:  func(w int) float64 { return 2 * float64(w-1) / float64(w) },
		SendInside: true, InPlaceWhere: "0",
		InPlaceOffset: func(rank, send, recv int) int { return 0 },
		Reference: func(in [][]float64, op Op) [][]float64 {
			sum := reduceChunks(in, op)
			out := make([][]float64, len(in))
			for i := range out {
				out[i] = sum
			}
			return out
		},
	}
	ReduceScatter = Collective{
		Name: "reduce-scatter", Label: "ReduceScatter",
		SendCount:  func(full, world int) int { return full },
		RecvCount:  func(send, world int) (int, bool) { return send / world, send%world == 0 },
		Rule:       "the input must have exactly output elements x world size",
		BusFactor:  func(w int) float64 { return float64(w-1) / float64(w) },
		SendInside: false, InPlaceWhere: "rank x output elements",
		InPlaceOffset: func(rank, send, recv int) int { return rank * recv },
		Reference: func(in [][]float64, op Op) [][]float64 {
			sum := reduceChunks(in, op)
			per := len(sum) / len(in)
			out := make([][]float64, len(in))
			for i := range out {
				out[i] = sum[i*per : (i+1)*per]
			}
			return out
		},
	}
	AllGather = Collective{
		Name: "all-gather", Label: "AllGather",
		SendCount:  func(full, world int) int { return full / world },
		RecvCount:  func(send, world int) (int, bool) { return send * world, true },
		Rule:       "the output must have exactly input elements x world size",
		BusFactor:  func(w int) float64 { return float64(w-1) / float64(w) },
		SendInside: true, InPlaceWhere: "rank x input elements",
		InPlaceOffset: func(rank, send, recv int) int { return rank * send },
		Reference: func(in [][]float64, op Op) [][]float64 {
			var all []float64
			for _, v := range in {
				all = append(all, v...)
			}
			out := make([][]float64, len(in))
			for i := range out {
				out[i] = all
			}
			return out
		},
	}
)

// Collectives are the collectives rsag knows, each a record above; a
// backend's Run looks its own call up by the record's Name.
var Collectives = []Collective{AllReduce, ReduceScatter, AllGather}

// reduceChunks reduces the members' chunk values element-wise.
func reduceChunks(in [][]float64, op Op) []float64 {
	out := make([]float64, len(in[0]))
	vals := make([]float64, len(in))
	for c := range out {
		for i := range in {
			vals[i] = in[i][c]
		}
		out[c] = Reduce(op, vals)
	}
	return out
}

// Payload is the bytes a collective on send and recv moves as nccl-tests
// counts them: its full buffer, the larger of the two.
func Payload(send, recv Buffer) int64 { return max(Bytes(send), Bytes(recv)) }

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
	if e.Collective == ReduceScatter.Name && e.SendCount%e.World != 0 {
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
