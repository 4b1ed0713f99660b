package phase

import (
	"fmt"
	"time"

	"rsag/coll"
	"rsag/config"
	"rsag/phases"
	"rsag/report"
)

// The locate phase: rounds of pairs and nodes that name a slow node or
// link. Its rounds are formed from every rank's host, the same on every
// rank, so that sizes too small for the largest sub-communicator are
// refused alike everywhere before any collective.
func init() {
	Register(Phase{Name: report.Locate, Order: 20,
		Enabled: func(cfg config.Config) bool { return cfg.Locate.Enabled },
		Prepare: prepareLocate})
}

func prepareLocate(j Job) (Prepared, error) {
	hosts, err := j.Hosts()
	if err != nil {
		return Prepared{}, err
	}
	spec := j.Config.Locate.Spec()
	spec.OpDeadline = OpDeadline(j.Config.Timeout(), len(spec.Probes()), spec.Warmups+spec.Iterations)
	plan, err := phases.PlanLocate(hosts, spec)
	if err != nil {
		return Prepared{}, fmt.Errorf("config: %w", err)
	}
	masks, err := j.CPUs()
	if err != nil {
		return Prepared{}, err
	}
	crowded := Crowded(plan.Ranks, masks)
	threshold := j.Config.Locate.Threshold
	return Prepared{
		Support: func(be coll.Backend) error { return checkLocate(be, plan) },
		Run: func(env Env, rows *report.Rows) error {
			for _, line := range plan.Described() {
				env.Progress("locate: " + line)
			}
			t0 := time.Now()
			res, err := phases.RunLocate(env.Backend, env.Comm, plan)
			if err != nil {
				return err
			}
			env.Progress(fmt.Sprintf("locate: %d measurements on rank 0 in %.1f s", len(res.Samples), time.Since(t0).Seconds()))
			rows.Locate, rows.LocateComms, rows.LocateRanks = LocateRows(env.Rank, env.Host, res)
			return nil
		},
		Summarize: func(merged report.Rows, sum *report.Summary) {
			sum.Locate = LocateSummary(LocateInput{Plan: plan, Threshold: threshold, Crowded: crowded}, merged)
		},
	}, nil
}

// checkLocate refuses a backend without sub-communicators and buffers that
// do not fit: two of the largest size.
func checkLocate(be coll.Backend, plan phases.LocatePlan) error {
	if _, ok := coll.Find[coll.Splitter](be); !ok {
		return fmt.Errorf("the locate phase runs pairs on sub-communicators, which the %s backend has not: set locate.enabled = false", be.Info().Backend)
	}
	var largest int64
	for _, size := range plan.Spec.SizesBytes {
		largest = max(largest, size)
	}
	return phases.CheckFits(be, 2*largest, "the locate phase at its largest size")
}

// OpDeadline is how long a probe's first operation on a unit may take
// before the unit abandons the probe: short enough that a round whose
// every operation stays within it (probes x ops of them on a unit) ends
// within half the watchdog's deadline (timeout_s), which every rank of
// the round waits under at the next barrier.
func OpDeadline(timeout time.Duration, probes, ops int) time.Duration {
	return timeout / time.Duration(2*max(1, probes)*max(1, ops))
}
