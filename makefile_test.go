package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// make deps installs an MPI on a fresh machine; nothing may ask for mpicc
// before it has run. An mpicc that is not there stands in for the fresh
// machine: the Makefile once read the cgo flags when it started and said
// "mpicc not found" twice before installing anything.
func TestMakeDepsAsksForNoMPIBeforeInstalling(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "make", "-s", "deps")
	cmd.Env = append(os.Environ(), "MPICC=/nonexistent/mpicc")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("make deps: %v\n%s", err, out.String())
	}
	if strings.Contains(out.String(), "not found") {
		t.Errorf("make deps asked for mpicc before installing it:\n%s", out.String())
	}
}
