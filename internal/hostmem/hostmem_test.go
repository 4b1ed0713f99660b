package hostmem

import (
	"bytes"
	"errors"
	"testing"
)

func TestFill(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3, 7, 8, 1000} {
		elem := []byte{1, 2, 3, 4}
		mem := make([]byte, 4*n)
		if err := Fill(mem, elem, 4); err != nil || !bytes.Equal(mem, bytes.Repeat(elem, n)) {
			t.Errorf("%d elements: % x, %v", n, mem, err)
		}
	}
	if err := Fill(make([]byte, 8), []byte{1, 2}, 4); err == nil {
		t.Error("an element of the wrong size was accepted")
	}
}

func TestTimeBatch(t *testing.T) {
	calls := 0
	us, err := TimeBatch(5, func() error { calls++; return nil })
	if err != nil || calls != 5 || us < 0 {
		t.Errorf("5 calls: %d calls, %v us, %v", calls, us, err)
	}
	calls = 0
	boom := errors.New("boom")
	if _, err := TimeBatch(5, func() error { calls++; return boom }); !errors.Is(err, boom) || calls != 1 {
		t.Errorf("a failing call: %d calls, %v", calls, err)
	}
	if _, err := TimeBatch(0, func() error { return nil }); err == nil {
		t.Error("0 runs accepted")
	}
}
