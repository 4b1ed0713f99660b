package ncclx

import (
	"errors"
	"fmt"
	"time"

	"rsag/coll"
)

// What ncclCommGetAsyncError last said, for a hang's line. NCCL's calls
// stay on the main goroutine's thread (the CUDA context is current there,
// and the communicators are aborted and destroyed there): a heartbeat,
// written on a goroutine of its own, must not ask NCCL itself. So every
// device wait's poll (pollAbort), which asks it already, keeps the answer
// in atomics, and AsyncStatus reads them from any goroutine. A rank that
// waits with RSAG_WAIT=block, or outside a device wait, asks nothing: its
// answer is as old as its At says, which the line compares with the step.

// asyncSaid is one answer of ncclCommGetAsyncError over this rank's
// communicators.
type asyncSaid struct {
	said string
	at   time.Time
}

// maxAsyncSaid bounds the error text a heartbeat carries: ncclGetLastError
// can say much.
const maxAsyncSaid = 300

// noAsyncError is what is said while every communicator reports
// ncclSuccess (or ncclInProgress, which a blocking communicator, the only
// kind rsag makes, does not report).
const noAsyncError = "ncclSuccess (no error yet)"

// sawAsync keeps what one poll of every communicator found: err, the
// first error, or nil. The first error stays: the communicators are
// aborted on it, and no later poll asks again.
func (d *device) sawAsync(err error) {
	now := time.Now()
	if err == nil {
		d.asyncOK.Store(now.UnixNano())
		return
	}
	said := err.Error()
	var e *Error
	if errors.As(err, &e) {
		said = fmt.Sprintf("%s (%d)", e.Name, e.Code)
		if e.Msg != "" {
			said += ": " + e.Msg
		}
	}
	if len(said) > maxAsyncSaid {
		said = said[:maxAsyncSaid] + "..."
	}
	d.asyncErr.CompareAndSwap(nil, &asyncSaid{said, now})
}

// AsyncStatus says what ncclCommGetAsyncError said of this rank's
// communicators when a device wait last asked (coll.AsyncReporter): its
// first error, once one was met, else ncclSuccess; the zero value before
// any wait asked. It calls no NCCL function.
func (b *Backend) AsyncStatus() coll.AsyncStatus {
	const call = "ncclCommGetAsyncError"
	if e := b.asyncErr.Load(); e != nil {
		return coll.AsyncStatus{Call: call, Said: e.said, At: e.at}
	}
	if at := b.asyncOK.Load(); at != 0 {
		return coll.AsyncStatus{Call: call, Said: noAsyncError, At: time.Unix(0, at)}
	}
	return coll.AsyncStatus{}
}
