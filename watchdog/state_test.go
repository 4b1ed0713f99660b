package watchdog

import (
	"sync"
	"testing"
	"time"
)

// A State reads back what was entered and left, consistently while it is
// being written from another goroutine (every snapshot is one the writer
// wrote whole: its round always matches its sequence number here).
func TestStateSnapshot(t *testing.T) {
	var s State
	phase, op, ctx := "timing", "all-reduce", "direct, cycle"
	s.SetPhase(&phase)
	at := time.Unix(100, 0)
	s.Enter(&op, 4096, &ctx, 7, at)
	got := s.Snapshot()
	if got.Seq != 1 || got.Phase != "timing" || got.Op != "all-reduce" || got.Bytes != 4096 || got.Context != ctx ||
		got.Round != 7 || !got.In || !got.At.Equal(at) {
		t.Errorf("after Enter: %+v", got)
	}
	s.Leave(at.Add(time.Second))
	if got := s.Snapshot(); got.Seq != 1 || got.In || !got.At.Equal(at.Add(time.Second)) {
		t.Errorf("after Leave: %+v", got)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			s.Enter(&op, int64(i), &ctx, int(s.seq.Load()+1), at)
		}
	}()
	for range 100000 {
		if got := s.Snapshot(); got.Round != int(got.Seq) && got.Seq > 1 {
			t.Fatalf("a torn snapshot: seq %d, round %d", got.Seq, got.Round)
		}
	}
	close(stop)
	wg.Wait()
}

// What the timed loop calls per sample allocates nothing.
func TestArmSampleAllocatesNothing(t *testing.T) {
	wd := New(time.Hour, func(string) {})
	s := NewSteps(NewTracker(wd))
	op, ctx := "all-reduce", "direct, cycle"
	if n := testing.AllocsPerRun(1000, func() {
		s.ArmSample(&op, 4096, &ctx, 3)
		s.Leave()
	}); n != 0 {
		t.Errorf("ArmSample and Leave allocate %v times a sample", n)
	}
	if got := s.State.Snapshot(); got.Op != op || got.In {
		t.Errorf("%+v", got)
	}
}

// A step of parts reads as one step per part, entered when its part
// began; leaving it leaves the sequence after its last part, as steps of
// their own would have.
func TestStateParts(t *testing.T) {
	var s State
	op, ctx := "all-reduce", "direct, cycle"
	at := time.Unix(100, 0)
	s.Enter(&op, 64, nil, 0, at) // step 1
	part, began := int64(0), int64(0)
	s.EnterParts(&op, 4096, &ctx, 0, func() (int64, int64) { return part, began }, at) // parts are steps 2, 3, ...
	if got := s.Snapshot(); got.Seq != 2 || got.Round != 0 || !got.In || !got.At.Equal(at) {
		t.Errorf("before its first part began: %+v", got)
	}
	part, began = 5, at.Add(3*time.Second).UnixNano()
	if got := s.Snapshot(); got.Seq != 7 || got.Round != 5 || !got.In || !got.At.Equal(at.Add(3*time.Second)) {
		t.Errorf("in part 5: %+v; want step 7, round 5, entered when the part began", got)
	}
	s.Leave(at.Add(4 * time.Second))
	if got := s.Snapshot(); got.Seq != 7 || got.In || got.Round != 0 {
		t.Errorf("after the last part: %+v", got)
	}
	s.Enter(&op, 64, nil, 0, at)
	if got := s.Snapshot(); got.Seq != 8 {
		t.Errorf("the step after: %d, want 8", got.Seq)
	}
}
