package phases

import (
	"errors"
	"fmt"

	"rsag/coll"
)

// MemoryResult is one buffer-lifetime strategy measured on one rank. The
// allocator columns are the seed's (torch.cuda.memory_allocated and
// max_memory_allocated, here the backend's exact count); Device* is what
// the device itself reports, which includes the library's own buffers.
type MemoryResult struct {
	Mode             string
	PayloadBytes     int64
	BaselineBytes    int64
	SteadyDeltaBytes int64
	PeakDeltaBytes   int64
	Correct          bool
	// AnalyticSteady and AnalyticPeak are the expected deltas for W ranks
	// and payload N.
	AnalyticSteady int64
	AnalyticPeak   int64
	// DeviceSteadyDelta and DevicePeakDelta come from the device's used
	// memory (cuMemGetInfo), sampled after every allocation and collective;
	// -1 when the backend has no device count.
	DeviceSteadyDelta int64
	DevicePeakDelta   int64
}

// memoryMode is one strategy: its buffer lifetimes (run returns the buffer
// holding the result, having freed everything else) and its analytic steady
// and peak deltas for payload n and shard s = n/W, in bytes.
type memoryMode struct {
	name         string
	steady, peak func(n, s int64) int64
	run          func(m *memSession) (coll.Buffer, error)
	// grouped: the mode runs within and across the hierarchy's groups, and
	// its shard s is n/group_size rather than n/W.
	grouped bool
}

// memoryModes are the seed's four strategies, with its exact lifetimes, and
// rs-ag-in-place, which needs no more memory than AllReduce.
var memoryModes = []memoryMode{
	{
		name:   "allreduce-full",
		steady: func(n, s int64) int64 { return n },
		peak:   func(n, s int64) int64 { return n },
		run: func(m *memSession) (coll.Buffer, error) {
			full, err := m.full()
			if err != nil {
				return nil, err
			}
			return full, m.do(m.be.Run(coll.AllReduce, full, full, coll.Sum))
		},
	},
	{
		name:   "reduce-scatter-shard",
		steady: func(n, s int64) int64 { return s },
		peak:   func(n, s int64) int64 { return n + s },
		run: func(m *memSession) (coll.Buffer, error) {
			full, err := m.full()
			if err != nil {
				return nil, err
			}
			shard, err := m.alloc(m.count / m.world)
			if err != nil {
				return nil, err
			}
			if err := m.do(m.be.Run(coll.ReduceScatter, full, shard, coll.Sum)); err != nil {
				return nil, err
			}
			return shard, m.free(full)
		},
	},
	{
		name:   "rs-ag-naive-lifetime",
		steady: func(n, s int64) int64 { return n },
		peak:   func(n, s int64) int64 { return 2*n + s },
		run: func(m *memSession) (coll.Buffer, error) {
			full, err := m.full()
			if err != nil {
				return nil, err
			}
			shard, err := m.alloc(m.count / m.world)
			if err != nil {
				return nil, err
			}
			gathered, err := m.alloc(m.count)
			if err != nil {
				return nil, err
			}
			if err := m.do(m.be.Run(coll.ReduceScatter, full, shard, coll.Sum)); err != nil {
				return nil, err
			}
			if err := m.do(m.be.Run(coll.AllGather, shard, gathered, coll.Sum)); err != nil {
				return nil, err
			}
			return gathered, errors.Join(m.free(full), m.free(shard))
		},
	},
	{
		name:   "rs-ag-optimized-lifetime",
		steady: func(n, s int64) int64 { return n },
		peak:   func(n, s int64) int64 { return n + s },
		run: func(m *memSession) (coll.Buffer, error) {
			full, err := m.full()
			if err != nil {
				return nil, err
			}
			shard, err := m.alloc(m.count / m.world)
			if err != nil {
				return nil, err
			}
			if err := m.do(m.be.Run(coll.ReduceScatter, full, shard, coll.Sum)); err != nil {
				return nil, err
			}
			if err := m.free(full); err != nil {
				return nil, err
			}
			gathered, err := m.alloc(m.count)
			if err != nil {
				return nil, err
			}
			if err := m.do(m.be.Run(coll.AllGather, shard, gathered, coll.Sum)); err != nil {
				return nil, err
			}
			return gathered, m.free(shard)
		},
	},
	{
		// ReduceScatter leaves this rank's shard inside the full buffer at
		// rank x N/W, and AllGather reads it from there: no second buffer.
		name:   "rs-ag-in-place",
		steady: func(n, s int64) int64 { return n },
		peak:   func(n, s int64) int64 { return n },
		run: func(m *memSession) (coll.Buffer, error) {
			full, err := m.full()
			if err != nil {
				return nil, err
			}
			shardCount := m.count / m.world
			shard, err := m.be.View(full, m.be.Rank()*shardCount, shardCount)
			if err != nil {
				return nil, err
			}
			if err := m.do(m.be.Run(coll.ReduceScatter, full, shard, coll.Sum)); err != nil {
				return nil, err
			}
			return full, m.do(m.be.Run(coll.AllGather, shard, full, coll.Sum))
		},
	},
	hierarchicalLifetime,
}

// hierarchicalLifetime is the two-level decomposition's buffer lifetimes,
// as rs-ag-optimized-lifetime has them for the flat one: the group shard
// (N/g) is allocated, ReduceScatter in the group fills it, the full buffer
// is freed, AllReduce across the groups works on the shard in place, and
// the full result is allocated for AllGather in the group.
var hierarchicalLifetime = memoryMode{
	name:    "hierarchical-lifetime",
	grouped: true,
	steady:  func(n, s int64) int64 { return n },
	peak:    func(n, s int64) int64 { return n + s },
	run: func(m *memSession) (coll.Buffer, error) {
		in, across := m.scopes.be[coll.InGroup], m.scopes.be[coll.AcrossGroups]
		full, err := m.full()
		if err != nil {
			return nil, err
		}
		shard, err := m.alloc(m.count / m.scopes.groups.Size)
		if err != nil {
			return nil, err
		}
		if err := m.do(in.Run(coll.ReduceScatter, full, shard, coll.Sum)); err != nil {
			return nil, err
		}
		if err := m.free(full); err != nil {
			return nil, err
		}
		if err := m.do(across.Run(coll.AllReduce, shard, shard, coll.Sum)); err != nil {
			return nil, err
		}
		gathered, err := m.alloc(m.count)
		if err != nil {
			return nil, err
		}
		if err := m.do(in.Run(coll.AllGather, shard, gathered, coll.Sum)); err != nil {
			return nil, err
		}
		return gathered, m.free(shard)
	},
}

// DefaultMemoryModes are the seed's four strategies and rs-ag-in-place:
// every mode that runs on the whole world.
func DefaultMemoryModes() []string {
	var names []string
	for _, m := range memoryModes {
		if !m.grouped {
			names = append(names, m.name)
		}
	}
	return names
}

// MemoryModeNames lists the strategies in their order.
func MemoryModeNames() []string {
	names := make([]string, len(memoryModes))
	for i, m := range memoryModes {
		names[i] = m.name
	}
	return names
}

// memSession runs one mode: it allocates through an arena and samples the
// device's used memory after every allocation and collective.
type memSession struct {
	be           coll.Backend
	scopes       *scopes
	a            *arena
	count, world int
	fill         []byte
	devicePeak   int64
}

func (m *memSession) sample() error {
	st, err := m.be.Memory()
	if err != nil {
		return err
	}
	m.devicePeak = max(m.devicePeak, st.DeviceUsedBytes)
	return nil
}

func (m *memSession) alloc(count int) (coll.Buffer, error) {
	b, err := m.a.alloc(coll.Elems(coll.Float32, count))
	if err != nil {
		return nil, err
	}
	return b, m.sample()
}

// full allocates the payload and fills it with rank+1, as torch.full did.
func (m *memSession) full() (coll.Buffer, error) {
	b, err := m.alloc(m.count)
	if err != nil {
		return nil, err
	}
	return b, m.be.Fill(b, m.fill)
}

// do finishes a collective and samples memory once it has run.
func (m *memSession) do(err error) error {
	if err != nil {
		return err
	}
	if err := m.be.Synchronize(); err != nil {
		return err
	}
	return m.sample()
}

func (m *memSession) free(b coll.Buffer) error { return m.a.free(b) }

// MemoryRun is what the memory phase measures: each named mode at a
// payload of PayloadBytes (float32); Groups are the hierarchy's, for
// hierarchical-lifetime (nil when [hierarchy] is off).
type MemoryRun struct {
	PayloadBytes int64
	Modes        []string
	Groups       *Groups
}

// RunMemory measures each of the run's modes on this rank, with a barrier
// between modes as in the seed, and checks every element of each result.
// A wrong element on any rank fails the run with the mode named.
func RunMemory(be coll.Backend, comm coll.Comm, run MemoryRun, progress func(string)) (results []MemoryResult, err error) {
	var groups *Groups
	for _, name := range run.Modes {
		mode, ok := findMode(name)
		if !ok {
			return results, fmt.Errorf("memory mode %q is unknown", name)
		}
		if mode.grouped {
			if groups = run.Groups; groups == nil {
				return nil, fmt.Errorf("memory mode %s runs within and across groups: set [hierarchy] enabled = true, or drop it", name)
			}
		}
	}
	// The groups' communicators exist before the first mode's baseline, so
	// that their buffers (NCCL's) are in every mode's baseline alike.
	sc, closeScopes, err := openScopes(be, groups)
	if err != nil {
		return nil, fmt.Errorf("memory on rank %d: %w", be.Rank(), err)
	}
	defer func() {
		if cerr := closeScopes(); err == nil {
			err = cerr
		}
	}()
	for _, name := range run.Modes {
		mode, _ := findMode(name)
		if err := comm.Barrier(); err != nil {
			return results, err
		}
		r, err := measure(sc, mode, run.PayloadBytes)
		var local *CheckError
		if err != nil && !errors.As(err, &local) {
			return results, fmt.Errorf("memory mode %s at %d bytes on rank %d: %w", name, run.PayloadBytes, be.Rank(), err)
		}
		results = append(results, r)
		if err := agree(comm, "memory", "mode "+name, local); err != nil {
			return results, err
		}
		if progress != nil {
			progress(fmt.Sprintf("memory %-26s steady %12d B  peak %12d B  (analytic %d / %d, rank 0, checked)",
				name, r.SteadyDeltaBytes, r.PeakDeltaBytes, r.AnalyticSteady, r.AnalyticPeak))
		}
	}
	return results, nil
}

// shardOf is a mode's shard for a payload of n bytes: n/g for a grouped
// mode, n/W for the others.
func (mode memoryMode) shardOf(n int64, l coll.Layout) int64 {
	if mode.grouped && l.Group > 0 {
		return n / int64(l.Group)
	}
	return n / int64(l.World)
}

func findMode(name string) (memoryMode, bool) {
	for _, m := range memoryModes {
		if m.name == name {
			return m, true
		}
	}
	return memoryMode{}, false
}

func measure(sc *scopes, mode memoryMode, payloadBytes int64) (r MemoryResult, err error) {
	be := sc.be[coll.World]
	world := be.WorldSize()
	n := payloadBytes
	shard := mode.shardOf(n, sc.layout())
	r = MemoryResult{Mode: mode.name, PayloadBytes: n, AnalyticSteady: mode.steady(n, shard),
		AnalyticPeak: mode.peak(n, shard)}
	if err := be.Synchronize(); err != nil {
		return r, err
	}
	base, err := be.Memory()
	if err != nil {
		return r, err
	}
	be.ResetPeak()
	a := &arena{be: be}
	defer a.release(&err)
	m := &memSession{be: be, scopes: sc, a: a, count: int(n / int64(coll.Float32.Size())), world: world,
		fill: coll.Float32.Elem(coll.Input(coll.Sum, be.Rank())), devicePeak: base.DeviceUsedBytes}
	result, err := mode.run(m)
	if err != nil {
		return r, err
	}
	after, err := be.Memory()
	if err != nil {
		return r, err
	}
	r.BaselineBytes = base.LiveBytes
	r.SteadyDeltaBytes = after.LiveBytes - base.LiveBytes
	r.PeakDeltaBytes = after.PeakBytes - base.LiveBytes
	r.DeviceSteadyDelta, r.DevicePeakDelta = -1, -1
	if base.DeviceUsedBytes >= 0 {
		r.DeviceSteadyDelta = after.DeviceUsedBytes - base.DeviceUsedBytes
		r.DevicePeakDelta = max(m.devicePeak, after.DeviceUsedBytes) - base.DeviceUsedBytes
	}
	bad, err := checkConst(be, result, coll.Float32.Elem(coll.Expected(coll.Sum, world)))
	if err != nil {
		return r, err
	}
	r.Correct = bad == nil
	if bad != nil {
		return r, &CheckError{Phase: "memory", What: fmt.Sprintf("rank %d (%s): mode %s: %s", be.Rank(), be.Info().Host, mode.name, bad)}
	}
	return r, nil
}
