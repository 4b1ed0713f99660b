package coll

// Internals the external tests (package coll_test) reach.

// Binary32FromFloat64 and Binary32ToFloat64 are the generic narrow-format
// conversions on float32's layout, which the tests check against Go's own.
func Binary32FromFloat64(x float64) uint32 { return uint32(binary32.fromFloat64(x)) }
func Binary32ToFloat64(b uint32) float64   { return binary32.toFloat64(uint64(b)) }
