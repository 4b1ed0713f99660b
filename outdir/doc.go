// Package outdir keeps a run's output directory one, its own and truthful:
// one directory that every rank sees (shared.go: on a cluster, a file
// system all nodes share); an exclusive lock on it for the whole run
// (lock.go); what an earlier run left there, told apart by that run's
// record of its files, so that -overwrite removes exactly the earlier run's
// files and nothing else (manifest.go); the notes a rank that fails alone
// leaves rank 0 (note.go); and the guard that marks run.json failed when
// rank 0 is killed outright (guard.go).
package outdir
