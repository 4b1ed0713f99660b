//go:build rsag_testphase

package main

// A binary built with -tags rsag_testphase runs the test-only echo phase
// too: the proof that a phase is one package and one registration
// (internal/testkit/echophase/echophase_test.go, which links it alike).
import _ "rsag/internal/testkit/echophase"
