//go:build rsag_fastcadence

package cadence

// speedup: a test build (-tags rsag_fastcadence) runs the scaled cadences
// FastBy times faster.
const speedup = FastBy
