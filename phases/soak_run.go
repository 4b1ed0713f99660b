package phases

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"rsag/coll"
	"rsag/internal/cadence"
)

// soakProgressEvery is how often rank 0 says how far the soak has got
// (internal/cadence's, which a test build shortens).
const soakProgressEvery = cadence.SoakProgress

// maxSoakFaults bounds the faults a soak keeps (a fault that strikes every
// iteration of a long soak with fail_after = 0); it counts them all.
const maxSoakFaults = 1000

// soakNote is what each rank tells the others after every iteration.
type soakNote struct {
	Stop   bool        `json:"stop,omitempty"` // rank 0: the duration is over
	Faults []SoakFault `json:"faults,omitempty"`
}

// RunSoak runs the soak phase: every iteration draws a case (spec.Draw),
// fills every rank's input with values that differ by rank and element
// and whose reductions are exact, runs each mode of soakModes on that same
// input one step at a time, and checks every element of every step's
// output (the shard after ReduceScatter too) against the reduction of the
// ranks' regenerated inputs. After each iteration the ranks exchange what
// they found (comm must be a coll.Gatherer); a wrong element is diagnosed
// from every rank's findings (diagnose) and counted. The phase stops after
// spec.FailAfter failed iterations (0: never), else after its iterations
// or duration; it returns a *CheckError, the same on every rank, when any
// iteration failed. progress, if not nil, gets rank 0's line every few
// seconds.
func RunSoak(be coll.Backend, comm coll.Comm, spec SoakSpec, groups *Groups, progress func(string), checkpoint func(SoakResult)) (res SoakResult, err error) {
	g, ok := comm.(coll.Gatherer)
	if !ok {
		return res, fmt.Errorf("soak: the ranks' comm cannot gather what each found")
	}
	res.Seed = spec.Seed
	world, rank := be.WorldSize(), be.Rank()
	host := be.Info().Host
	all, err := g.AllGather([]byte(host))
	if err != nil {
		return res, err
	}
	hosts := make([]string, len(all))
	for r, h := range all {
		hosts[r] = string(h)
	}
	sc, closeScopes, err := openScopes(be, groups)
	if err != nil {
		return res, fmt.Errorf("soak on rank %d: %w", rank, err)
	}
	defer func() {
		if cerr := closeScopes(); err == nil {
			err = cerr
		}
	}()
	modes := soakModes(groups)
	plans := make([][]stepPlan, len(modes))
	for i, m := range modes {
		plans[i] = planOf(m, groups, world, rank)
	}
	pairs, skipped := spec.Pairs(world)
	res.Skipped = skipped
	if progress != nil && len(skipped) > 0 {
		progress(fmt.Sprintf("soak: not drawn on %d ranks: %s (%s)", world, PairsText(skipped), SkippedWhy(world)))
	}
	start, lastSaid, lastKept := time.Now(), time.Now(), time.Now()
	var keepTook time.Duration
	scratch := &soakScratch{}
	for iter := 0; spec.Iterations == 0 || iter < spec.Iterations; iter++ {
		c := spec.draw(iter, world, pairs)
		in := newSoakInput(spec.Seed, iter, world, c.DType, c.Op)
		var faults []SoakFault
		var moved int64
		for i, m := range modes {
			f, n, err := soakMode(sc, m, plans[i], c, in, iter, host, scratch)
			if err != nil {
				return res, fmt.Errorf("soak iteration %d (%s) %s on rank %d: %w", iter, soakCaseText(c), m.Name, rank, err)
			}
			faults, moved = append(faults, f...), moved+n
		}
		note := soakNote{Faults: faults, Stop: rank == 0 && spec.Duration > 0 && time.Since(start) >= spec.Duration}
		mine, err := json.Marshal(note)
		if err != nil {
			return res, err
		}
		said, err := g.AllGather(mine)
		if err != nil {
			return res, err
		}
		it := SoakIteration{Iteration: iter, Case: c, BytesMoved: moved, Elapsed: time.Since(start)}
		var every []SoakFault
		stop := false
		for r, b := range said {
			var n soakNote
			if err := json.Unmarshal(b, &n); err != nil {
				return res, fmt.Errorf("soak iteration %d: rank %d's findings: %w", iter, r, err)
			}
			every = append(every, n.Faults...)
			stop = stop || (r == 0 && n.Stop)
		}
		if len(every) > 0 {
			// In mode, then step, then rank order: the first is the first
			// wrong step's.
			slices.SortStableFunc(every, func(a, b SoakFault) int {
				ma := slices.IndexFunc(modes, func(m coll.TimedMode) bool { return m.Name == a.Mode })
				mb := slices.IndexFunc(modes, func(m coll.TimedMode) bool { return m.Name == b.Mode })
				if ma != mb {
					return ma - mb
				}
				if a.Step != b.Step {
					return a.Step - b.Step
				}
				return a.Rank - b.Rank
			})
			verdict, suspects := diagnose(iter, c, modes, every, hosts)
			it.Verdict, it.First = verdict, &every[0]
			for _, f := range every {
				it.Wrong += f.Wrong
			}
			if res.Failed == 0 {
				res.Verdict, res.Suspects = verdict, suspects
				if len(suspects) == 0 { // no one stands out: the ranks that saw it
					for _, f := range every {
						res.Suspects = append(res.Suspects, f.Rank)
					}
					slices.Sort(res.Suspects)
					res.Suspects = slices.Compact(res.Suspects)
				}
			}
			res.Failed++
			res.Faults = append(res.Faults, every[:min(len(every), maxSoakFaults-len(res.Faults))]...)
			if progress != nil && res.Failed <= 3 {
				progress("soak: " + verdict)
			}
		}
		res.Iterations = append(res.Iterations, it)
		res.BytesMoved += moved
		// The last iteration's line is the closing one, said once below;
		// so is a line due once duration_s has passed, since rank 0 has
		// already decided (before this iteration's agreement) whether this
		// is the last, and the next one is (with duration_s the progress
		// period, two lines an iteration apart).
		ending := stop || (spec.FailAfter > 0 && res.Failed >= spec.FailAfter) || (spec.Iterations > 0 && iter+1 >= spec.Iterations) ||
			(spec.Duration > 0 && time.Since(start) >= spec.Duration)
		if progress != nil && !ending && time.Since(lastSaid) >= soakProgressEvery {
			lastSaid = time.Now()
			progress(soakProgress(res, time.Since(start), spec))
		}
		// What ran so far outlives a signal: a checkpoint at most every
		// soakProgressEvery, and never more than a tenth of the time.
		if checkpoint != nil && time.Since(lastKept) >= max(soakProgressEvery, 10*keepTook) {
			t0 := time.Now()
			checkpoint(res)
			lastKept, keepTook = time.Now(), time.Since(t0)
		}
		if stop || (spec.FailAfter > 0 && res.Failed >= spec.FailAfter) {
			break
		}
	}
	res.Elapsed = time.Since(start)
	if progress != nil {
		progress(soakProgress(res, res.Elapsed, spec))
	}
	if res.Failed > 0 {
		what := res.Verdict
		if res.Failed > 1 {
			what += fmt.Sprintf(" (%d of %d iterations found a wrong element)", res.Failed, len(res.Iterations))
		}
		return res, &CheckError{Phase: "soak", What: what, Ranks: res.Suspects}
	}
	return res, nil
}

// soakMode runs mode m of case c on input in, one step at a time, and
// checks each step's output on this rank; it returns what it found wrong
// and the bytes its collectives moved.
func soakMode(sc *scopes, m coll.TimedMode, plan []stepPlan, c coll.Case, in soakInput, iter int, host string, scratch *soakScratch) (faults []SoakFault, moved int64, err error) {
	be := sc.be[coll.World]
	a := &arena{be: be}
	defer a.release(&err)
	mc, err := newModeCase(a, sc, m, c)
	if err != nil {
		return nil, 0, err
	}
	if err := in.fill(be, mc.input(), be.Rank(), scratch); err != nil {
		return nil, 0, err
	}
	context := string(m.Name) + ", iteration"
	for i, s := range m.Steps {
		send, recv := mc.bufs[i], mc.bufs[i+1]
		armSample(be, &mc.stepOps[i], coll.Payload(send, recv), &context, iter)
		err := mc.steps[i]()
		if err == nil {
			// A device's collective is only queued when its call returns:
			// the rank waits for it here, still in its step, so that its
			// heartbeat says so (a rank stopped inside NCCL was named only
			// when the watchdog fired: the others had "left" their step).
			err = be.Synchronize()
		}
		leaveStep(be)
		if err != nil {
			return faults, moved, fmt.Errorf("%s: %w", s.Name, err)
		}
		moved += coll.Payload(send, recv)
		f, err := in.check(be, recv, plan[i], mc.chunk, scratch)
		if err != nil {
			return faults, moved, err
		}
		if f != nil {
			f.Iteration, f.Case, f.Rank, f.Host, f.Mode, f.Step, f.Collective = iter, c, be.Rank(), host, m.Name, i, s.Label
			f.OffsetBytes = int64(f.Index) * int64(c.DType.Size())
			faults = append(faults, *f)
		}
	}
	return faults, moved, nil
}
