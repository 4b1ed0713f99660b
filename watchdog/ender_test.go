package watchdog

import (
	"bytes"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// recorder is an Ender's world: what it did, in order.
type recorder struct {
	mu     sync.Mutex
	steps  []string
	stderr bytes.Buffer
	exited chan int
}

func newRecorder() *recorder { return &recorder{exited: make(chan int, 1)} }

func (r *recorder) step(s string) { r.mu.Lock(); r.steps = append(r.steps, s); r.mu.Unlock() }

func (r *recorder) Write(p []byte) (int, error) {
	r.step("print " + strings.TrimSpace(string(p)))
	return len(p), nil
}

func (r *recorder) exit(code int) { r.step("exit"); r.exited <- code }

func (r *recorder) wait(t *testing.T) int {
	t.Helper()
	select {
	case code := <-r.exited:
		return code
	case <-time.After(10 * time.Second):
		t.Fatal("the Ender did not exit within 10 s")
		return 0
	}
}

// run.json is marked first, then the message printed, the outputs that
// say why written, and the lock released last; only the first End does
// anything.
func TestEndMarksFirstThenCleansUpThenExits(t *testing.T) {
	r := newRecorder()
	e := NewEnder(r, r.exit)
	e.SetWho(1, "node7")
	e.SetMarkFailed(func(reason string) { r.step("mark " + reason) })
	e.AtEnd(func() { r.step("release") })
	e.SetOutputs(func(code int) { r.step("outputs") })
	go e.End(3, "watchdog: it stalled", "")
	if code := r.wait(t); code != 3 {
		t.Errorf("exit %d, want 3", code)
	}
	go e.End(1, "again", "") // a second End blocks and does nothing
	time.Sleep(50 * time.Millisecond)
	r.mu.Lock()
	defer r.mu.Unlock()
	want := []string{"mark rank 1 (node7): watchdog: it stalled", "print rsag: rank 1 (node7): watchdog: it stalled", "outputs", "release", "exit"}
	if strings.Join(r.steps, "|") != strings.Join(want, "|") {
		t.Errorf("steps %q, want %q", r.steps, want)
	}
	if !e.Ending() {
		t.Error("Ending() is false after End")
	}
}

// A signal's reason is rank 0's explanation of it, and a rank a signal
// ends lingers before it exits.
func TestSignalIsExplainedAndLingers(t *testing.T) {
	r := newRecorder()
	e := NewEnder(r, r.exit)
	e.SetWho(0, "node1")
	e.SetMarkFailed(func(reason string) { r.step("mark " + reason) })
	e.SetExplain(func(sig string) string { return "signal " + sig + ", after rank 2 (node1) had gone" })
	const linger = 300 * time.Millisecond
	e.SetLinger(linger)
	CatchSignals(e)
	sent := time.Now()
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	code := r.wait(t)
	if took := time.Since(sent); took < linger {
		t.Errorf("exited %v after the signal, before lingering %v", took, linger)
	}
	if code != ExitSignal+int(syscall.SIGTERM) {
		t.Errorf("exit %d, want %d", code, ExitSignal+int(syscall.SIGTERM))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.steps) < 2 || r.steps[0] != "mark signal SIGTERM, after rank 2 (node1) had gone" ||
		!strings.Contains(r.steps[1], "rank 0 (node1): received SIGTERM: stopping") {
		t.Errorf("steps %q", r.steps)
	}
}
