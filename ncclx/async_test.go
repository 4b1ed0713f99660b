package ncclx

import (
	"errors"
	"strings"
	"testing"
	"time"

	"rsag/coll"
)

// What a hang's line quotes of NCCL (AsyncStatus): nothing before any
// wait asked; while a collective hangs with no error, ncclSuccess, asked
// after the wait began; after the abort that ends it, still that answer
// (the abort is the watchdog's, not NCCL's).
func TestAsyncStatusOfAHungWaitWithoutError(t *testing.T) {
	b := newFake(t)
	var _ coll.AsyncReporter = b
	if s := b.AsyncStatus(); s != (coll.AsyncStatus{}) {
		t.Fatalf("before any wait: %+v, want nothing", s)
	}
	t.Setenv("RSAG_FAKE_CUDA_HANG", "1")
	began := time.Now()
	errc := make(chan error, 1)
	go func() { errc <- b.Synchronize() }()
	// The heartbeat reads it from its own goroutine while the wait polls.
	var s coll.AsyncStatus
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if s = b.AsyncStatus(); !s.At.Before(began) {
			break
		}
	}
	if s.Call != "ncclCommGetAsyncError" || s.Said != "ncclSuccess (no error yet)" || s.At.Before(began) {
		t.Fatalf("during the hung wait: %+v; want ncclSuccess, asked after the wait began (%v)", s, began)
	}
	b.RequestAbort()
	select {
	case err := <-errc:
		if !errors.Is(err, ErrAborted) {
			t.Fatalf("got %v, want ErrAborted", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the wait did not end within 10 s of an abort request")
	}
	if after := b.AsyncStatus(); after.Said != "ncclSuccess (no error yet)" {
		t.Errorf("after the watchdog's abort: %+v; want NCCL's last answer, ncclSuccess", after)
	}
}

// An asynchronous error (RSAG_FAKE_NCCL_ASYNC_ERROR: ncclRemoteError) is
// what AsyncStatus says from then on, by name, code and NCCL's text.
func TestAsyncStatusSaysNCCLsError(t *testing.T) {
	b := newFake(t)
	t.Setenv("RSAG_FAKE_CUDA_HANG", "1")
	t.Setenv("RSAG_FAKE_NCCL_ASYNC_ERROR", "6")
	began := time.Now()
	if err := b.Synchronize(); err == nil {
		t.Fatal("the wait ended without NCCL's error")
	}
	s := b.AsyncStatus()
	if s.Call != "ncclCommGetAsyncError" || !strings.HasPrefix(s.Said, "ncclRemoteError (6)") || s.At.Before(began) {
		t.Errorf("%+v; want ncclRemoteError (6), asked during the wait", s)
	}
}
