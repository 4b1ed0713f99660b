package phases

// Internals the external tests (package phases_test) reach.

// ExactSum is exactSum without scratch space.
func ExactSum(xs []float64) float64 {
	s, _ := exactSum(xs, nil)
	return s
}

// RNGFromKey is the stream whose SplitMix64 state starts at key.
func RNGFromKey(key uint64) RNG { return RNG{key: key} }

// SetNumericsChunk sets the chunk of the numerics phase's fills and reads
// and returns a function that restores it.
func SetNumericsChunk(n int) (restore func()) {
	old := numericsChunk
	numericsChunk = n
	return func() { numericsChunk = old }
}

// SetYield replaces the timed loop's yield to Go's scheduler and returns a
// function that restores it.
func SetYield(f func()) (restore func()) {
	old := yield
	yield = f
	return func() { yield = old }
}

// SetRecordChunk sets how many samples' records the timed loop allocates
// at a time and returns a function that restores it.
func SetRecordChunk(n int) (restore func()) {
	old := recordChunk
	recordChunk = n
	return func() { recordChunk = old }
}
