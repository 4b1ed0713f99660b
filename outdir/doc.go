// Package outdir keeps a run's output directory its own: an exclusive lock
// on it for the whole run (lock.go), and what an earlier run left there,
// told apart by that run's record of its files (manifest.go), so that
// -overwrite removes exactly the earlier run's files and nothing else.
package outdir
