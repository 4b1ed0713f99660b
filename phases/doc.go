// Package phases runs rsag's experiments over a coll.Backend: the
// contracts (the seed's proofs that AllReduce equals ReduceScatter +
// AllGather), the timing sweep, the memory study, the numerics and the
// hierarchical decomposition. It holds the whole experiment and no C: the
// backends (ncclx, mpibackend) implement package coll's contract, which
// this package loops over without a branch per collective or mode.
package phases
