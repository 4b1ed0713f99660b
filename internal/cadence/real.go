//go:build !rsag_fastcadence

package cadence

// speedup: a product build runs every cadence at its real value.
const speedup = 1
