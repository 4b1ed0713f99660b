package phases

// Internals the external tests (package phases_test) reach.

// ExactSum is exactSum without scratch space.
func ExactSum(xs []float64) float64 {
	s, _ := exactSum(xs, nil)
	return s
}

// Binary32FromFloat64 and Binary32ToFloat64 are the generic narrow-format
// conversions on float32's layout, which the tests check against Go's own.
func Binary32FromFloat64(x float64) uint32 { return uint32(binary32.fromFloat64(x)) }
func Binary32ToFloat64(b uint32) float64   { return binary32.toFloat64(uint64(b)) }

// StreamFromKey is the stream whose SplitMix64 state starts at key.
func StreamFromKey(key uint64) Stream { return Stream{key: key} }

// SetNumericsChunk sets the chunk of the numerics phase's fills and reads
// and returns a function that restores it.
func SetNumericsChunk(n int) (restore func()) {
	old := numericsChunk
	numericsChunk = n
	return func() { numericsChunk = old }
}
