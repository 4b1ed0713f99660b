package coll

import "fmt"

// SharedGPUNote says, in words, that ranks shared a GPU (the same bus id on
// one host, which the NCCL backend allows only when asked to) and what that
// means for the timings; "" when no two ranks did. Every output that says
// it renders this one sentence.
func SharedGPUNote(infos []Info) string {
	type gpu struct{ host, bus string }
	ranks := map[gpu]int{}
	for _, in := range infos {
		if in.BusID != "" {
			ranks[gpu{in.Host, in.BusID}]++
		}
	}
	shared, on := 0, 0
	for _, n := range ranks {
		if n > 1 {
			shared += n
			on++
		}
	}
	if shared == 0 {
		return ""
	}
	return fmt.Sprintf("GPU shared: %d ranks ran on %d GPU(s); timings measure NCCL's network transport, not the GPU's links",
		shared, on)
}
