package ncclx

import (
	"errors"
	"fmt"
	"runtime"

	"rsag/coll"
)

// graph is a CUDA graph captured on the backend's stream and its executable
// instance. It implements coll.Graph.
type graph struct {
	b     *Backend
	n     int // the runs of op it holds
	graph cuGraph
	exec  cuExec
}

// CaptureGraph records n back-to-back runs of op on the backend's stream
// into a CUDA graph and instantiates it, as nccl-tests' -G does: the stream
// is captured in CU_STREAM_CAPTURE_MODE_THREAD_LOCAL (see the constant), op
// queues work without running it, and the graph replays it all with one
// launch. Capturing NCCL collectives is collective: every rank must capture
// the same operations, and every rank must then launch its graph.
//
// A capture that fails (op returns an error, or CUDA invalidates it) is
// ended before CaptureGraph returns, so the stream stays usable.
func (b *Backend) CaptureGraph(n int, op func() error) (coll.Graph, error) {
	if n < 1 {
		return nil, b.errorf("capturing a graph of %d runs: at least one", n)
	}
	if b.c.comm == nil {
		return nil, b.errorf("capturing a graph: the communicator was aborted or closed")
	}
	if b.ncclVersion < ncclVersionGraphs {
		return nil, b.errorf("NCCL %s (%s) cannot be captured into CUDA graphs: that came with NCCL %s; "+
			"load NCCL %s or newer (%s=/path/to/libnccl.so.2) or time per-op or batched",
			formatNCCLVersion(b.ncclVersion), b.nc.path, shortVersion(ncclVersionGraphs), shortVersion(ncclVersionGraphs), NCCLLibraryEnv)
	}
	// Capture belongs to the thread that began it: it must end there, and in
	// THREAD_LOCAL mode that thread's unsafe calls are what is refused. main
	// keeps this goroutine on one thread anyway; the lock makes the capture
	// not depend on it.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	// Work queued before the capture must not end up waiting behind it.
	if err := b.cu.syncStream(b.stream); err != nil {
		return nil, b.errorf("capturing a graph: %w", err)
	}
	if err := b.cu.beginCapture(b.stream, cuStreamCaptureModeThreadLocal); err != nil {
		return nil, b.errorf("capturing a graph: %w", err)
	}
	var opErr error
	run := 0
	for ; run < n; run++ {
		if opErr = op(); opErr != nil {
			break
		}
	}
	g, endErr := b.cu.endCapture(b.stream)
	if opErr != nil || endErr != nil {
		if g != nil {
			_ = b.cu.destroyGraph(g)
		}
		// op's error is returned as Time returns it, with where it happened.
		if opErr != nil && endErr != nil {
			return nil, fmt.Errorf("capturing run %d of %d into a graph: %w (ending the capture: %w)", run+1, n, opErr, endErr)
		}
		if opErr != nil {
			return nil, fmt.Errorf("capturing run %d of %d into a graph: %w", run+1, n, opErr)
		}
		return nil, b.errorf("capturing %d runs into a graph: %w (CUDA invalidates a capture when a call it "+
			"refuses during capture, such as a wait for the device, is made inside it)", n, endErr)
	}
	exec, err := b.cu.instantiate(g)
	if err != nil {
		return nil, b.errorf("instantiating the captured graph: %w", errors.Join(err, b.cu.destroyGraph(g)))
	}
	gr := &graph{b: b, n: n, graph: g, exec: exec}
	b.graphs[gr] = struct{}{}
	return gr, nil
}

// Time waits for the stream, records the start event, launches the graph
// once, records the end event, waits for it and returns the events' elapsed
// time in microseconds, for all n runs the graph holds. One cgo call per
// CUDA call, nothing allocated.
func (g *graph) Time() (float64, error) {
	b := g.b
	if g.exec == nil {
		return 0, b.errorf("timing a graph that was closed")
	}
	if b.c.comm == nil {
		return 0, b.errorf("timing a graph: the communicator was aborted or closed")
	}
	if err := b.startTiming(); err != nil {
		return 0, err
	}
	if err := b.cu.launch(g.exec, b.stream); err != nil {
		return 0, b.errorf("timing a graph of %d runs: %w", g.n, err)
	}
	return b.endTiming()
}

// Close waits for the stream (a launch may still be running) and destroys
// the executable graph and the graph. Closing twice, or after the backend
// closed (which destroys the graphs left), does nothing.
func (g *graph) Close() error {
	b := g.b
	if g.exec == nil {
		return nil
	}
	var errs []error
	if err := b.cu.syncStream(b.stream); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, g.release())
	if err := errors.Join(errs...); err != nil {
		return b.errorf("closing a graph: %w", err)
	}
	return nil
}

// release destroys the executable and the graph and forgets them.
func (g *graph) release() error {
	if g.exec == nil {
		return nil
	}
	err := errors.Join(g.b.cu.destroyExec(g.exec), g.b.cu.destroyGraph(g.graph))
	g.exec, g.graph = nil, nil
	delete(g.b.graphs, g)
	return err
}
