package stopped

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// child sleeps 200 ms at a time, and at the first wake more than a second
// late prints whether it was stopped.
func child() {
	Watch()
	for {
		start := time.Now()
		time.Sleep(200 * time.Millisecond)
		if time.Since(start) > time.Second {
			fmt.Printf("stopped %v\n", Since(start))
			os.Exit(0)
		}
	}
}

func TestMain(m *testing.M) {
	if os.Getenv("STOPPED_CHILD") == "1" {
		child()
	}
	os.Exit(m.Run())
}

// A process stopped for 2 s and continued knows it was stopped; one that
// was not, does not.
func TestAStopIsSeen(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "STOPPED_CHILD=1")
	var out strings.Builder
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	time.Sleep(500 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGSTOP)
	time.Sleep(2 * time.Second)
	cmd.Process.Signal(syscall.SIGCONT)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("the child did not wake within 30 s (said %q)", out.String())
	}
	if out.String() != "stopped true\n" {
		t.Errorf("a stopped child said %q, want stopped true", out.String())
	}
	if Since(time.Now().Add(-time.Hour)) {
		t.Error("this process, never stopped, says it was")
	}
}
