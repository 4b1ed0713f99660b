package config

// GPU is the [gpu] table: how the NCCL backend takes its GPUs.
type GPU struct {
	// Sharing lets ranks of one host share a GPU, each with its own NCCL
	// host id, so that NCCL talks between them over its network transport:
	// for trying the NCCL path where GPUs are fewer than ranks. Every
	// output then says so; the timings measure that transport, not the
	// GPU's links.
	Sharing bool `toml:"sharing"`
}
