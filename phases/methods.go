package phases

import (
	"errors"
	"fmt"

	"rsag/coll"
)

// prepare returns c on send and recv as one call: the backend's prepared
// call, or a plain one after the same shape check every backend makes.
func prepare(be coll.Backend, c coll.Collective, send, recv coll.Buffer, op coll.Op) (func() error, error) {
	if p, ok := coll.Find[coll.Preparer](be); ok {
		return p.Prepare(c, send, recv, op)
	}
	if err := coll.CheckShapes(c, send, recv, be.WorldSize()); err != nil {
		return nil, err
	}
	return func() error { return be.Run(c, send, recv, op) }, nil
}

// sampler times one mode once and returns microseconds per operation.
type sampler func(m *modeCase) (float64, error)

// timingMethod is one record per timing method: how many operations a
// sample runs, how a sample is taken, and whether the outputs need a
// separate validation pass.
type timingMethod struct {
	name coll.Method
	// validateAfter: a sample runs many operations over one input, which
	// in place is also their output: what such a sample leaves holds no
	// value to check, so, as nccl-tests does, a separate validation
	// operation, untimed, on a fresh input is checked for it (see
	// timeCase). Out of place every operation of the batch writes the same
	// output, and what the sample left is checked.
	validateAfter bool
	// refillAlways: the input is refilled before every sample (the seed's
	// per-op method). Otherwise, as nccl-tests leaves its buffers alone, it
	// is filled once per case and refilled only when the mode writes it (in
	// place): rewriting an input the collectives only read made every other
	// 1 MiB batch of MPI_Allreduce 10% slower here (docs/performance-log.md).
	refillAlways bool
	// oneCall: a case that times one mode of one collective out of place
	// takes all its cycles' samples in one call where the backend can
	// (coll.SampleTimer), each checked after its clock stopped, as this
	// method's samples are: the batch's loop and clock in C, nothing of
	// Go's between them.
	oneCall bool
	// barrier: each operation of a sample follows an untimed barrier of
	// all ranks, and the sample is the sum of the operations' own times
	// (IMB's way): a stall on one rank between operations lands in the
	// next barrier, not in the sample.
	barrier bool
	// sampler returns how to take a sample of each of modes with batch
	// operations, and what releases what it set up.
	sampler func(be coll.Backend, comm coll.Comm, modes []*modeCase, batch int) (sampler, func() error, error)
	// missing says what the backend lacks for this method, or nil.
	missing func(be coll.Backend) error
}

func noRelease() error { return nil }

func always(coll.Backend) error { return nil }

var timingMethods = []timingMethod{
	{
		name: coll.PerOp, refillAlways: true, missing: always,
		sampler: func(be coll.Backend, _ coll.Comm, _ []*modeCase, _ int) (sampler, func() error, error) {
			return func(m *modeCase) (float64, error) { return be.Time(m.run) }, noRelease, nil
		},
	},
	{
		name: coll.Batched, validateAfter: true, oneCall: true, missing: always,
		sampler: func(be coll.Backend, _ coll.Comm, modes []*modeCase, batch int) (sampler, func() error, error) {
			// One closure per mode, made here: a sample then allocates nothing.
			runs := make(map[*modeCase]func() error, len(modes))
			for _, m := range modes {
				runs[m] = func() error { return m.loop(batch) }
			}
			return func(m *modeCase) (float64, error) {
				us, err := be.Time(runs[m])
				return us / float64(batch), err
			}, noRelease, nil
		},
	},
	{
		name: coll.Barriered, validateAfter: true, oneCall: true, barrier: true, missing: always,
		sampler: func(be coll.Backend, comm coll.Comm, _ []*modeCase, batch int) (sampler, func() error, error) {
			return func(m *modeCase) (float64, error) {
				var sum float64
				for range batch {
					if err := comm.Barrier(); err != nil {
						return 0, err
					}
					us, err := be.Time(m.run)
					if err != nil {
						return 0, err
					}
					sum += us
				}
				return sum / float64(batch), nil
			}, noRelease, nil
		},
	},
	{
		name: coll.GraphReplay, validateAfter: true,
		missing: func(be coll.Backend) error { _, err := graphTimer(be); return err },
		sampler: graphSampler,
	},
}

// graphTimer is be's graph capture, or why the graph method cannot run.
func graphTimer(be coll.Backend) (coll.GraphTimer, error) {
	if gt, ok := coll.Find[coll.GraphTimer](be); ok {
		return gt, nil
	}
	return nil, fmt.Errorf("the graph method needs CUDA graphs, which the %s backend has not: use per-op or batched, or the nccl backend", be.Info().Backend)
}

// graphSampler captures batch operations of each mode into a graph and
// times the graph's replay.
func graphSampler(be coll.Backend, _ coll.Comm, modes []*modeCase, batch int) (sampler, func() error, error) {
	gt, err := graphTimer(be)
	if err != nil {
		return nil, nil, err
	}
	graphs := make(map[*modeCase]coll.Graph, len(modes))
	release := func() error {
		var errs []error
		for _, g := range graphs {
			errs = append(errs, g.Close())
		}
		return errors.Join(errs...)
	}
	// NCCL connects its peers on a size's first collective; do that
	// outside the capture, as nccl-tests does.
	for _, m := range modes {
		if err := m.run(); err != nil {
			return nil, nil, err
		}
	}
	if err := be.Synchronize(); err != nil {
		return nil, nil, err
	}
	for _, m := range modes {
		g, err := gt.CaptureGraph(batch, m.run)
		if err != nil {
			release()
			return nil, nil, fmt.Errorf("capturing %s into a graph: %w", m.mode.Name, err)
		}
		graphs[m] = g
	}
	return func(m *modeCase) (float64, error) {
		us, err := graphs[m].Time()
		return us / float64(batch), err
	}, release, nil
}

func methodOf(m coll.Method) (timingMethod, bool) {
	for _, tm := range timingMethods {
		if tm.name == m {
			return tm, true
		}
	}
	return timingMethod{}, false
}
