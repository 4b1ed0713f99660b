// Package phases runs rsag's experiments over a coll.Backend: the
// contracts (the seed's proofs that AllReduce equals ReduceScatter +
// AllGather), the timing sweep, the memory study, the numerics, the
// hierarchical decomposition and the locate phase (which node, link or
// rank is slow; its schedules and solver are package locate's). It holds the whole experiment and no C: the
// backends (ncclx, mpibackend) implement package coll's contract, which
// this package loops over without a branch per collective or mode.
package phases
