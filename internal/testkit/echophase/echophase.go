// Package echophase is a phase that exists for the tests: each rank asks
// the world for its largest rank and checks that it is the world's size
// less one. It runs with the contracts (contracts.enabled), so that a
// test can turn it off without a config section of its own. It shows what a new phase is: this one package and its one
// registration, with no other file of rsag touched. A binary built with
// -tags rsag_testphase has it (testphase.go); the product has not.
package echophase

import (
	"fmt"
	"strconv"

	"rsag/coll"
	"rsag/config"
	"rsag/phase"
	"rsag/report"
)

// Name is the phase's name, and its file's: echo.csv.
const Name = "echo"

func init() {
	phase.Register(phase.Phase{Name: Name, Order: 90, Table: true, Enabled: func(cfg config.Config) bool { return cfg.Contracts.Enabled }, Prepare: prepare})
}

func prepare(j phase.Job) (phase.Prepared, error) {
	return phase.Prepared{Run: func(env phase.Env, rows *report.Rows) error {
		largest, err := coll.MaxFloat64(env.Comm, float64(env.Rank))
		if err != nil {
			return err
		}
		t := report.PhaseTable{Phase: Name, Title: "Echo (test-only)", Columns: []string{"rank", "host", "largest_rank", "held"},
			Checks: true, Failed: []int{}}
		// Exactly: a bit flipped in the result (e2e/testdata/corrupt.c)
		// fails the row.
		held := largest == float64(j.World-1)
		t.Rows = [][]string{{strconv.Itoa(env.Rank), env.Host, strconv.FormatFloat(largest, 'g', -1, 64), strconv.FormatBool(held)}}
		if !held {
			t.Failed = []int{0}
		}
		rows.Tables = append(rows.Tables, t)
		env.Progress(fmt.Sprintf("echo: the largest rank is %d", int(largest)))
		return nil
	}}, nil
}
