package ncclx

import "rsag/coll"

// The collectives check shapes with coll.CheckShapes (NCCL cannot see
// buffer sizes) and then queue one NCCL call on the backend's stream, on
// the backend's communicator; they return when it is queued, like NCCL.
// In-place needs nothing here: the caller passes a send buffer that is a
// view of recv at NCCL's in-place offset (AllReduce: recv itself;
// ReduceScatter: recv == send + rank*recvcount; AllGather: send == recv +
// rank*sendcount) and NCCL recognises the aliasing.
// This is the timed path: no allocation, map or fmt unless something fails.

// collective is one NCCL collective's facts, so that one body runs all
// three: its shapes, its ABI name, whether it takes a reduction, and which
// buffer's count NCCL is given.
type collective struct {
	shape     coll.Collective
	symbol    string
	index     int  // into ncclAPI.colls
	reduces   bool // ncclAllGather takes no ncclRedOp_t
	recvCount bool // the count NCCL takes is the output's (ReduceScatter's recvcount)
}

const (
	collAllReduce = iota
	collReduceScatter
	collAllGather
	numColls
)

var collectives = [numColls]collective{
	collAllReduce:     {shape: coll.AllReduce, symbol: "ncclAllReduce", index: collAllReduce, reduces: true},
	collReduceScatter: {shape: coll.ReduceScatter, symbol: "ncclReduceScatter", index: collReduceScatter, reduces: true, recvCount: true},
	collAllGather:     {shape: coll.AllGather, symbol: "ncclAllGather", index: collAllGather},
}

// Run queues c on the stream (coll.Backend).
func (b *Backend) Run(c coll.Collective, send, recv coll.Buffer, op coll.Op) error {
	nc, err := b.collectiveOf(c)
	if err != nil {
		return err
	}
	return b.run(nc, send, recv, op)
}

// collectiveOf is NCCL's call for one of coll's collectives, by name.
func (b *Backend) collectiveOf(c coll.Collective) (*collective, error) {
	for i := range collectives {
		if collectives[i].shape.Name == c.Name {
			return &collectives[i], nil
		}
	}
	return nil, b.errorf("no NCCL call for the %s collective", c.Name)
}

func (b *Backend) run(c *collective, send, recv coll.Buffer, op coll.Op) error {
	a, err := b.check(c, send, recv, op)
	if err != nil {
		return err
	}
	return b.queue(c, a)
}

// Prepare checks a collective's shapes and operands once and returns a call
// that only queues it on this handle's communicator and stream
// (coll.Preparer): the timed loop then pays for the cgo call alone.
func (b *Backend) Prepare(c coll.Collective, send, recv coll.Buffer, op coll.Op) (func() error, error) {
	nc, err := b.collectiveOf(c)
	if err != nil {
		return nil, err
	}
	a, err := b.check(nc, send, recv, op)
	if err != nil {
		return nil, err
	}
	return func() error { return b.queue(nc, a) }, nil
}

// args are a collective's checked operands.
type args struct {
	send, recv devPtr
	count      int
	t          ncclDataType
	o          ncclRedOp
}

func (b *Backend) check(c *collective, send, recv coll.Buffer, op coll.Op) (args, error) {
	if err := coll.CheckShapes(c.shape, send, recv, b.WorldSize()); err != nil {
		return args{}, err
	}
	s, r, t, o, err := b.operands(c.shape.Name, send, recv, op)
	if err != nil {
		return args{}, err
	}
	count := s.count
	if c.recvCount {
		count = r.count
	}
	return args{s.ptr, r.ptr, count, t, o}, nil
}

// queue queues the collective on this handle's communicator, read at each
// call: an abort (the watchdog, a signal, a peer's failure) clears it, and
// NCCL must never be handed a destroyed one.
func (b *Backend) queue(c *collective, a args) error {
	if b.c.comm == nil {
		return b.errorf("%s: the communicator was aborted or closed", c.shape.Name)
	}
	if err := b.nc.collOn(c, a.send, a.recv, a.count, a.t, a.o, b.c.comm, b.stream); err != nil {
		return b.errorf("%w", err)
	}
	return nil
}

// operands checks both buffers and maps the element type and operation.
func (b *Backend) operands(what string, send, recv coll.Buffer, op coll.Op) (s, r *deviceBuffer, t ncclDataType, o ncclRedOp, err error) {
	if s, err = b.buffer(send, what, " input"); err != nil {
		return
	}
	if r, err = b.buffer(recv, what, " output"); err != nil {
		return
	}
	if b.c.comm == nil {
		err = b.errorf("%s: the communicator was aborted or closed", what)
		return
	}
	te, tok := dtypeEnum(s.dtype)
	oe, ook := opEnum(op)
	if !tok || !ook || te.since > b.ncclVersion || oe.since > b.ncclVersion {
		err = b.errorf("%s: %w", what, b.Supports(s.dtype, op))
		return
	}
	return s, r, ncclDataType(te.value), ncclRedOp(oe.value), nil
}

// Synchronize waits for the work queued on the stream. When that fails, the
// communicator's asynchronous error (if any) says why.
func (b *Backend) Synchronize() error {
	if err := b.cu.syncStream(b.stream); err != nil {
		if aerr := b.AsyncError(); aerr != nil {
			return b.errorf("%w (NCCL reports: %v)", err, aerr)
		}
		return b.errorf("%w", err)
	}
	return nil
}

// Time waits for the stream, records the start event, runs op, records the
// end event, waits for it and returns the events' elapsed time in
// microseconds: what the seed measured with torch.cuda.Event(enable_timing)
// around one call. One cgo call per CUDA call, nothing allocated.
func (b *Backend) Time(op func() error) (float64, error) {
	if err := b.startTiming(); err != nil {
		return 0, err
	}
	if err := op(); err != nil {
		return 0, err
	}
	return b.endTiming()
}

// startTiming waits for the work already queued, so that none of it is
// timed, and records the start event. Time and Graph.Time share
// it and endTiming, so that every method times alike.
func (b *Backend) startTiming() error {
	if err := b.cu.syncStream(b.stream); err != nil {
		return b.errorf("timing: %w", err)
	}
	if err := b.cu.record(b.start, b.stream); err != nil {
		return b.errorf("timing: %w", err)
	}
	return nil
}

// endTiming records the end event after what was queued since startTiming,
// waits for it and returns the events' elapsed time in microseconds.
func (b *Backend) endTiming() (float64, error) {
	if err := b.cu.record(b.end, b.stream); err != nil {
		return 0, b.errorf("timing: %w", err)
	}
	if err := b.cu.syncEvent(b.end); err != nil {
		return 0, b.errorf("timing: %w", err)
	}
	ms, err := b.cu.elapsed(b.start, b.end)
	if err != nil {
		return 0, b.errorf("timing: %w", err)
	}
	return float64(ms) * 1000, nil
}
