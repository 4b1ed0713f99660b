package phases

import "rsag/coll"

// Tracker is told about every blocking step before it starts, so that a
// watchdog can give each a deadline and say, when one overruns, what was
// waited for. The watchdog package's *Watchdog implements it.
type Tracker interface {
	// Arm starts a step: op is what is about to be waited for, bytes its
	// payload (-1 when it has none).
	Arm(op string, bytes int64)
	// Kick restarts the current step's deadline, keeping its description.
	Kick()
}

// SampleTracker is a Tracker that also keeps, for a hang's diagnosis, the
// mode and cycle of each timed sample and when each step ends
// (watchdog.Steps). ArmSample keeps its strings, so that a sample
// allocates nothing: they must stay as they are.
type SampleTracker interface {
	ArmSample(op *string, bytes int64, context *string, round int)
	// ArmSamples arms a run of samples taken in one call, from round on:
	// parts says which sample runs and when it began (coll.Sampler's
	// Progress), and each sample is kept, and given a deadline, as one
	// step of its own.
	ArmSamples(op *string, bytes int64, context *string, round int, parts func() (part, began int64))
	Leave()
}

// Watch returns be with every collective armed on t (named by the
// collective, sized by its full payload, see Payload) and every other call
// that may wait for the device kicking it. The phases run over the watched backend; nothing else
// changes.
func Watch(be coll.Backend, t Tracker) coll.Backend { return &watched{Backend: be, t: t} }

type watched struct {
	coll.Backend
	t Tracker
}

func (w *watched) Run(c coll.Collective, send, recv coll.Buffer, op coll.Op) error {
	w.t.Arm(c.Name, coll.Payload(send, recv))
	defer leave(w.t)
	return w.Backend.Run(c, send, recv, op)
}

// leave tells t that the step it armed last has ended, when it keeps
// such things (SampleTracker).
func leave(t Tracker) {
	if st, ok := t.(SampleTracker); ok {
		st.Leave()
	}
}

// The calls below wait for what is queued on the device (a collective that
// never ends hangs them), so each restarts the deadline of the last step.

func (w *watched) Synchronize() error { w.t.Kick(); return w.Backend.Synchronize() }

func (w *watched) Time(op func() error) (float64, error) {
	w.t.Kick()
	return w.Backend.Time(op)
}

// Unwrap gives the backend under the watch, so that optional interfaces
// such as GraphTimer can still be found.
func (w *watched) Unwrap() coll.Backend { return w.Backend }

func (w *watched) Fill(b coll.Buffer, elem []byte) error { w.t.Kick(); return w.Backend.Fill(b, elem) }
func (w *watched) Write(b coll.Buffer, src []byte) error { w.t.Kick(); return w.Backend.Write(b, src) }
func (w *watched) Read(b coll.Buffer, dst []byte) error  { w.t.Kick(); return w.Backend.Read(b, dst) }
func (w *watched) Free(b coll.Buffer) error              { w.t.Kick(); return w.Backend.Free(b) }

// WatchComm returns c with its barriers, agreements and gathers armed on
// t; it is a coll.Gatherer when c is.
func WatchComm(c coll.Comm, t Tracker) coll.Comm {
	w := &watchedComm{Comm: c, t: t}
	if g, ok := c.(coll.Gatherer); ok {
		return &watchedGatherer{watchedComm: w, g: g}
	}
	return w
}

type watchedGatherer struct {
	*watchedComm
	g coll.Gatherer
}

type watchedComm struct {
	coll.Comm
	t Tracker
}

func (w *watchedComm) Barrier() error {
	w.t.Arm("barrier", -1)
	defer leave(w.t)
	return w.Comm.Barrier()
}

func (w *watchedComm) AllTrue(ok bool) (bool, []int, error) {
	w.t.Arm("agreement between ranks", -1)
	defer leave(w.t)
	return w.Comm.AllTrue(ok)
}

func (w *watchedComm) MaxFloat64s(v []float64) error {
	w.t.Arm("agreement between ranks", -1)
	defer leave(w.t)
	return w.Comm.MaxFloat64s(v)
}

// AllGather gathers every rank's data, armed on t.
func (w *watchedGatherer) AllGather(data []byte) ([][]byte, error) {
	w.t.Arm("gather between ranks", -1)
	defer leave(w.t)
	return w.g.AllGather(data)
}

// Arm lets the phases arm a step of their own on the tracker: a timed
// sample runs prepared calls, which bypass the watch (see Preparer).
func (w *watched) Arm(op string, bytes int64) { w.t.Arm(op, bytes) }

// armSample arms one sample (or soak step) on be's tracker, when be is
// watched: with its mode and cycle (SampleTracker), allocating nothing,
// when the tracker keeps them.
func armSample(be coll.Backend, op *string, bytes int64, context *string, round int) {
	a, ok := be.(*watched)
	if !ok {
		return
	}
	if st, ok := a.t.(SampleTracker); ok {
		st.ArmSample(op, bytes, context, round)
		return
	}
	a.t.Arm(*op, bytes)
}

// armSamples arms a run of samples taken in one call by s on be's
// tracker, when be is watched (see SampleTracker.ArmSamples).
func armSamples(be coll.Backend, op *string, bytes int64, context *string, round int, s coll.Sampler) {
	a, ok := be.(*watched)
	if !ok {
		return
	}
	if st, ok := a.t.(SampleTracker); ok {
		st.ArmSamples(op, bytes, context, round, func() (int64, int64) {
			part, began := s.Progress()
			if began.IsZero() {
				return int64(part), 0
			}
			return int64(part), began.UnixNano()
		})
		return
	}
	a.t.Arm(*op, bytes)
}

// armStep arms a step of the phase's own (a split, a measurement of
// prepared calls) on be's tracker, when be is watched; leaveStep ends it.
func armStep(be coll.Backend, op string, bytes int64) {
	if a, ok := be.(*watched); ok {
		a.t.Arm(op, bytes)
	}
}

// leaveStep says the step armed last on be's tracker has ended.
func leaveStep(be coll.Backend) {
	if a, ok := be.(*watched); ok {
		leave(a.t)
	}
}

// rewatch puts inner (a variant or a group of outer's backend) under the
// same watch as outer, when outer is watched.
func rewatch(outer, inner coll.Backend) coll.Backend {
	if w, ok := outer.(*watched); ok {
		return Watch(inner, w.t)
	}
	return inner
}
