package ncclx

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// A collective whose peer never arrives leaves the stream busy forever. The
// waits poll instead of blocking, so an abort asked for from another
// goroutine (the watchdog's) ends them on the main goroutine, which aborts
// the communicator there.
func TestRequestAbortEndsAHungWait(t *testing.T) {
	b := newFake(t)
	t.Setenv("RSAG_FAKE_CUDA_HANG", "1")
	for _, c := range []struct {
		name string
		wait func() error
	}{
		{"Synchronize", b.Synchronize},
		{"Time", func() error { _, err := b.Time(func() error { return nil }); return err }},
	} {
		t.Run(c.name, func(t *testing.T) {
			b.abortAsked.Store(false)
			asked := make(chan (<-chan struct{}), 1)
			go func() {
				time.Sleep(50 * time.Millisecond)
				asked <- b.RequestAbort()
			}()
			errc := make(chan error, 1)
			go func() { errc <- c.wait() }()
			select {
			case err := <-errc:
				if !errors.Is(err, ErrAborted) {
					t.Fatalf("got %v, want ErrAborted", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the wait did not end within 10 s of an abort request")
			}
			if b.c.comm != nil {
				t.Error("the communicator was not aborted")
			}
			select {
			case <-<-asked:
			case <-time.After(time.Second):
				t.Error("RequestAbort's channel was not closed after the abort")
			}
		})
	}
}

// NCCL's asynchronous error (a dead peer, a network failure) ends a wait
// with NCCL's reason, and the communicator is aborted.
func TestAsyncErrorEndsAHungWait(t *testing.T) {
	b := newFake(t)
	t.Setenv("RSAG_FAKE_CUDA_HANG", "1")
	t.Setenv("RSAG_FAKE_NCCL_ASYNC_ERROR", "6") // ncclRemoteError
	errc := make(chan error, 1)
	go func() { errc <- b.Synchronize() }()
	select {
	case err := <-errc:
		var e *Error
		if !errors.As(err, &e) || e.Op != "ncclCommGetAsyncError" || !strings.Contains(err.Error(), "aborted") {
			t.Fatalf("got %v, want ncclCommGetAsyncError's error and the abort named", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the wait did not end on NCCL's asynchronous error")
	}
	if b.c.comm != nil {
		t.Error("the communicator was not aborted")
	}
}

// A wait that finishes is not slowed by the polling: no error, and the
// collective's result is there.
func TestPollingWaitsFinish(t *testing.T) {
	b := newFake(t)
	if err := b.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Time(func() error { return nil }); err != nil {
		t.Fatal(err)
	}
}

// RSAG_WAIT takes poll, block or nothing; anything else is refused, named
// with the values it takes, rather than taken for poll.
func TestBlockingWaitValues(t *testing.T) {
	for v, want := range map[string]bool{"": false, "poll": false, "block": true} {
		if got, err := BlockingWait(v); err != nil || got != want {
			t.Errorf("BlockingWait(%q) = %v, %v; want %v", v, got, err, want)
		}
	}
	for _, v := range []string{"bogus", "blocking", "Block", " block", strings.Repeat("x", 1000)} {
		_, err := BlockingWait(v)
		if err == nil || !strings.Contains(err.Error(), "is not a way to wait: use poll (the default") || !strings.Contains(err.Error(), "or block (wait in the driver") {
			t.Errorf("BlockingWait(%q) = %v; want a refusal naming poll and block", v, err)
		}
		if err != nil && len(err.Error()) > 300 {
			t.Errorf("the refusal echoes the value: %d bytes", len(err.Error()))
		}
	}
}
