package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"regexp"
	"slices"
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

// The Makefile's builds get mpicc's flags added to go's own cgo flags, not
// put in their place: a CGO_CFLAGS of include paths alone compiled rsag's
// C, its timed loops among them, at -O0, which cost 5% an operation at 2
// ranks and 8 B against IMB (docs/performance-log.md, 2026-12-05 15:41).
// make env prints what the builds use; go's default (-O2 -g) must be in
// it, and a user's own CGO_CFLAGS in its place when set.
func TestMakeCompilesCgoWithGoFlagsAndMPIs(t *testing.T) {
	for _, tool := range []string{"make", "mpicc", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s (make deps installs Open MPI)", tool)
		}
	}
	mpiFlags, err := exec.Command("scripts/mpi-cgo-flags.sh", "cflags").Output()
	if err != nil {
		t.Fatalf("mpi-cgo-flags.sh cflags: %v", err)
	}
	// make test runs this with the flags already set: start from none.
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CGO_CFLAGS=") && !strings.HasPrefix(kv, "CGO_LDFLAGS=") {
			env = append(env, kv)
		}
	}
	cflags := func(extra ...string) []string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "make", "-s", "env")
		cmd.Env = append(append([]string{}, env...), extra...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("make env %v: %v\n%s", extra, err, out)
		}
		m := regexp.MustCompile(`CGO_CFLAGS="([^"]*)"`).FindSubmatch(out)
		if m == nil {
			t.Fatalf("make env %v printed no CGO_CFLAGS:\n%s", extra, out)
		}
		return strings.Fields(string(m[1]))
	}
	has := func(got []string, want ...string) bool {
		for _, w := range want {
			if !slices.Contains(got, w) {
				return false
			}
		}
		return true
	}
	mpi := strings.Fields(string(mpiFlags))
	if got := cflags(); !has(got, "-O2") || !has(got, mpi...) {
		t.Errorf("make env's CGO_CFLAGS = %q, want go's -O2 and mpicc's %q", got, mpi)
	}
	if got := cflags("CGO_CFLAGS=-O3 -DRSAG_USERS_OWN"); !has(got, "-O3", "-DRSAG_USERS_OWN") || !has(got, mpi...) || has(got, "-O2") {
		t.Errorf("with the user's CGO_CFLAGS=-O3 -DRSAG_USERS_OWN, make env's CGO_CFLAGS = %q, want those and mpicc's %q", got, mpi)
	}
}

// The short-cadence build (-tags rsag_fastcadence, internal/cadence) is
// the twin make test hands the deadline tests as RSAG_FAST_BIN, never
// the product or a unit test: a unit test built with it would check the
// shortened cadences, and a product built with it would call a rank silent
// after 0.6 s. Only make's build-fast line names the tag, and GOFLAGS as
// make exports it builds the real cadence even when the user's own
// GOFLAGS asks for the tag (a later -tags replaces an earlier one).
func TestOnlyTheTwinIsBuiltWithTheFastCadence(t *testing.T) {
	for _, tool := range []string{"make", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s", tool)
		}
	}
	runMake := func(env []string, args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "make", args...)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("make %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	// make -n prints what make test would run, and runs none of it.
	var twin bool
	for _, l := range strings.Split(runMake(nil, "-n", "test"), "\n") {
		if !strings.Contains(l, "rsag_fastcadence") {
			continue
		}
		if strings.Contains(l, " build ") && strings.Contains(l, "-o .build/fast/rsag ") {
			twin = true
			continue
		}
		t.Errorf("make test names rsag_fastcadence outside the twin's build: %s", l)
	}
	if !twin {
		t.Error("make test builds no short-cadence twin (.build/fast/rsag)")
	}
	m := regexp.MustCompile(`GOFLAGS="([^"]*)"`).FindStringSubmatch(runMake([]string{"GOFLAGS=-tags=rsag_fastcadence"}, "-s", "env"))
	if m == nil {
		t.Fatal("make env printed no GOFLAGS")
	}
	cmd := exec.Command("go", "list", "-f", "{{.GoFiles}}", "./internal/cadence")
	cmd.Env = append(os.Environ(), "GOFLAGS="+m[1])
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "real.go") {
		t.Errorf("with the user's GOFLAGS=-tags=rsag_fastcadence, make's GOFLAGS %q builds internal/cadence from %s (%v), want real.go", m[1], out, err)
	}
}
