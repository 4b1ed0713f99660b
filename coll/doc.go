// Package coll is rsag's contract: the ground floor every other package
// stands on, importing nothing of rsag's. It holds what a backend and a
// report must agree on, and nothing of the experiment itself:
//
//   - the element types (DType, FloatType) and reductions (Op), with the
//     values each rank contributes to an exact check;
//   - the Backend interface, and every optional ability a backend may have
//     (backend.go), so that a new backend reads one file to know what to
//     implement, and coll/colltest checks that it does;
//   - one record per collective (Collective) and per timed mode
//     (TimedMode): shapes, in-place layouts, bus factors, references;
//   - one Case: the identity of a timing case, which every row, statistic
//     and fit embeds instead of restating its fields;
//   - one StepFault: a wrong output of one step, as the soak finds it and
//     summary.json writes it.
//
// "The seed" throughout rsag is ch7_allreduce_vs_rsag.py, the PyTorch
// script rsag grew from: its file names, columns, contract names and mode
// names are kept so that notebooks written for it keep working, and a
// comment that says "the seed's" names what rsag matches it on.
package coll
