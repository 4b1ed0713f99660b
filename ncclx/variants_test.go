package ncclx

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"rsag/coll"
	"rsag/phases"
)

// The fast paths (registered buffers, symmetric windows, CTA policies) and
// Split, over the fake libraries: on one rank for what one rank decides
// (refusals, layouts, footprints), and on several ranks, through the call
// log the fakes write, for what NCCL needs of all of them (window offsets,
// the order of registration, communicators made once).

// nccl228Config is ncclConfig_t of NCCL 2.28's nccl.h (struct
// ncclConfig_v22800, src/nccl.h.in at v2.28.3-1) on LP64: each field's
// offset, by the C rules for its type (size_t and pointers 8-aligned).
var nccl228Config = []struct {
	name   string
	offset uintptr
}{
	{"size", 0}, {"magic", 8}, {"version", 12}, {"blocking", 16}, {"cgaClusterSize", 20}, {"minCTAs", 24},
	{"maxCTAs", 28}, {"netName", 32}, {"splitShare", 40}, {"trafficClass", 44}, {"commName", 48},
	{"collnetEnable", 56}, {"CTAPolicy", 60}, {"shrinkShare", 64}, {"nvlsCTAs", 68},
	{"nChannelsPerNetPeer", 72}, {"nvlinkCentricSched", 76},
}

const nccl228ConfigSize = 80

// abi.h's ncclConfig_t has NCCL 2.28's layout, the fake NCCL's own
// declaration agrees field by field, and a new config is what
// NCCL_CONFIG_INITIALIZER makes with CTAPolicy set.
func TestConfigLayout(t *testing.T) {
	cfg := newConfig(2)
	if got := unsafe.Sizeof(cfg); got != nccl228ConfigSize {
		t.Errorf("sizeof(ncclConfig_t) = %d, want %d", got, nccl228ConfigSize)
	}
	fields := configFields(&cfg)
	if len(fields) != len(nccl228Config) {
		t.Fatalf("%d fields, NCCL 2.28 has %d", len(fields), len(nccl228Config))
	}
	for i, f := range fields {
		if w := nccl228Config[i]; f.name != w.name || f.offset != w.offset {
			t.Errorf("field %d: %s at %d, want %s at %d", i, f.name, f.offset, w.name, w.offset)
		}
		want := int64(math.MinInt32) // NCCL_CONFIG_UNDEF_INT
		switch f.name {
		case "size":
			want = nccl228ConfigSize
		case "magic":
			want = 0xcafebeef
		case "version":
			want = 22800
		case "CTAPolicy":
			want = 2
		case "netName", "commName":
			want = 0 // NCCL_CONFIG_UNDEF_PTR
		}
		if f.value != want {
			t.Errorf("%s = %d, want %d", f.name, f.value, want)
		}
	}

	// The fake writes field i after version as 1000+i (pointers i*0x100)
	// at its own offsets; reading them back at ours must find each.
	b := newFake(t)
	var p unsafe.Pointer
	if err := b.nc.lib.bind([]symbol{sym(&p, "rsagFakeConfigLayout")}); err != nil {
		t.Fatal(err)
	}
	api := *b.nc
	api.commInitRankConfig = p
	var id [uniqueIDBytes]byte
	echo := newConfig(0)
	if _, err := api.initRankConfig(1, &id, 0, &echo); err != nil {
		t.Fatal(err)
	}
	for i, f := range configFields(&echo) {
		want := int64(1000 + i - 2)
		switch {
		case f.name == "size":
			want = nccl228ConfigSize // the fake's sizeof
		case f.name == "magic":
			want = 0xcafebeef
		case f.name == "version":
			want = 22800
		case f.name == "netName" || f.name == "commName":
			want = int64(i-2) * 0x100
		}
		if f.value != want {
			t.Errorf("the fake wrote %s as %d, want %d: the declarations disagree at offset %d", f.name, f.value, want, f.offset)
		}
	}
}

// The fake NCCL refuses what a real NCCL would silently misread, so that
// the other tests' configs are known to be checked.
func TestFakeChecksTheConfig(t *testing.T) {
	b := newFake(t)
	for _, c := range []struct {
		name    string
		version string
		change  func(cfg *configT)
		want    string // "" for success
	}{
		{"the initializer with zero", "22809", func(*configT) {}, ""},
		{"a policy NCCL has not", "22809", func(c *configT) { c.CTAPolicy = 7 }, "CTAPolicy is not a policy this NCCL has"},
		{"zero on NCCL 2.27", "22700", func(*configT) {}, "CTAPolicy is not a policy this NCCL has"},
		{"a version before CTAPolicy", "22809", func(c *configT) { c.version = 22600 }, "before NCCL 2.27"},
		{"another field set", "22809", func(c *configT) { c.nvlsCTAs = 1 }, "other than CTAPolicy"},
		{"the wrong size", "22809", func(c *configT) { c.size = 72 }, "80 bytes"},
		{"no magic", "22809", func(c *configT) { c.magic = 0 }, "magic"},
	} {
		t.Setenv("RSAG_FAKE_NCCL_VERSION", c.version)
		cfg := newConfig(ctaPolicies[coll.ZeroCTAPolicy].value)
		c.change(&cfg)
		var id [uniqueIDBytes]byte
		if err := b.nc.uniqueID(&id); err != nil {
			t.Fatal(err)
		}
		comm, err := b.nc.initRankConfig(1, &id, 0, &cfg)
		if c.want == "" {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			} else if err := b.nc.destroy(comm); err != nil {
				t.Error(err)
			}
			continue
		}
		var e *Error
		if !errors.As(err, &e) || e.Op != "ncclCommInitRankConfig" || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want ncclCommInitRankConfig failing with %q", c.name, err, c.want)
		}
	}
}

// configT is abi.h's ncclConfig_t, named for the tests (which cannot name C).
type configT = cConfig

// newFakeWith is newFake over a fake NCCL built with defs.
func newFakeWith(t *testing.T, defs ...string) *Backend {
	t.Helper()
	useFakeCUDA(t)
	useFakeNCCL(t, defs...)
	b, err := New(fakeBoot{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func allVariants() []coll.Variant {
	var vs []coll.Variant
	for _, k := range coll.BufferKinds {
		for _, p := range coll.CTAPolicies {
			vs = append(vs, coll.Variant{Buffers: k, CTAPolicy: p})
		}
	}
	return vs
}

// An NCCL too old for a variant is refused, before any collective, with
// the version that brought what it lacks and what to do.
func TestSupportsVariantByVersion(t *testing.T) {
	const newer = "; load NCCL %s or newer (RSAG_NCCL_LIBRARY=/path/to/libnccl.so.2) or drop %q from [timing] %s"
	for _, c := range []struct {
		version string
		v       coll.Variant
		want    string // "" for nil
	}{
		{"22700", coll.Variant{Buffers: "symmetric", CTAPolicy: "efficiency"}, ""},
		{"22700", coll.Variant{Buffers: "plain", CTAPolicy: "zero"},
			"cta_policy zero: NCCL 2.27.0 (%s) has no NCCL_CTA_POLICY_ZERO: that came with NCCL 2.28" + fmt.Sprintf(newer, "2.28", "zero", "cta_policies")},
		{"22605", coll.Variant{Buffers: "symmetric", CTAPolicy: "default"},
			"buffers symmetric: NCCL 2.26.5 (%s) cannot register symmetric windows: that came with NCCL 2.27" + fmt.Sprintf(newer, "2.27", "symmetric", "buffers")},
		{"22605", coll.Variant{Buffers: "registered", CTAPolicy: "efficiency"},
			"cta_policy efficiency: NCCL 2.26.5 (%s) has no NCCL_CTA_POLICY_EFFICIENCY: that came with NCCL 2.27" + fmt.Sprintf(newer, "2.27", "efficiency", "cta_policies")},
		{"21806", coll.Variant{Buffers: "registered", CTAPolicy: "default"},
			"buffers registered: NCCL 2.18.6 (%s) cannot register buffers: that came with NCCL 2.19" + fmt.Sprintf(newer, "2.19", "registered", "buffers")},
		{"21806", coll.Baseline, ""},
		{"22809", coll.Variant{Buffers: "pinned", CTAPolicy: "default"}, `the NCCL backend does not know buffers "pinned": use plain, registered, symmetric`},
		{"22809", coll.Variant{Buffers: "plain", CTAPolicy: "max"}, `the NCCL backend does not know cta_policy "max": use default, efficiency, zero`},
	} {
		t.Run(c.version+" "+c.v.String(), func(t *testing.T) {
			b := newFakeVersion(t, c.version)
			want := c.want
			if strings.Contains(want, "%s") {
				want = fmt.Sprintf(want, b.nc.path)
			}
			err := b.SupportsVariant(c.v)
			if (want == "") != (err == nil) || (err != nil && err.Error() != want) {
				t.Fatalf("got %v\nwant %q", err, want)
			}
			vb, werr := b.WithVariant(c.v)
			if err != nil && (vb != nil || werr == nil || !strings.HasSuffix(werr.Error(), want)) {
				t.Errorf("WithVariant: %v, %v; want the same refusal", vb, werr)
			}
		})
	}
	b := newFake(t)
	for _, v := range allVariants() {
		if err := b.SupportsVariant(v); err != nil {
			t.Errorf("NCCL 2.28.9, %s: %v", v, err)
		}
	}
}

// An NCCL that says it is new enough but lacks a symbol still loads, and
// the variant that needs the symbol is refused naming it and the NCCL that
// brought it.
func TestSupportsVariantMissingSymbols(t *testing.T) {
	for _, c := range []struct {
		abi    string
		v      coll.Variant
		split  bool
		symbol string
		since  string
		load   string // the NCCL to load: the variant's, which may be newer than the symbol
	}{
		{"22605", coll.Variant{Buffers: "symmetric", CTAPolicy: "default"}, false, "ncclCommWindowRegister", "2.27", "2.27"},
		{"21806", coll.Variant{Buffers: "registered", CTAPolicy: "default"}, false, "ncclCommRegister", "2.19", "2.19"},
		{"21300", coll.Variant{Buffers: "plain", CTAPolicy: "efficiency"}, false, "ncclCommInitRankConfig", "2.14", "2.27"},
		{"21300", coll.Baseline, true, "ncclCommSplit", "2.18", "2.18"},
	} {
		t.Run(c.abi+" "+c.symbol, func(t *testing.T) {
			b := newFakeWith(t, "-DFAKE_ABI="+c.abi) // it reports 2.28.9 all the same
			var err error
			if c.split {
				_, err = b.Split(0, 0)
			} else {
				err = b.SupportsVariant(c.v)
			}
			want := fmt.Sprintf("NCCL 2.28.9: %s lacks %s, which came with NCCL %s; load NCCL %s or newer", b.nc.path, c.symbol, c.since, c.load)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("got %v, want it to contain %q", err, want)
			}
			// The rest works: the baseline's collectives.
			x, _ := b.Alloc(coll.Elems(coll.Float32, 4))
			if err := b.Run(coll.AllReduce, x, x, coll.Sum); err != nil {
				t.Error(err)
			}
		})
	}
}

// Environment variables that make NCCL ignore a variant refuse it.
func TestSupportsVariantEnvironment(t *testing.T) {
	b := newFake(t)
	for _, c := range []struct {
		env, value string
		v          coll.Variant
		want       string
	}{
		{"NCCL_CTA_POLICY", "1", coll.Variant{Buffers: "plain", CTAPolicy: "zero"}, "NCCL_CTA_POLICY=1 is set, and NCCL lets it override"},
		{"NCCL_WIN_ENABLE", "0", coll.Variant{Buffers: "symmetric", CTAPolicy: "default"}, "NCCL_WIN_ENABLE=0 is set"},
		{"NCCL_CUMEM_ENABLE", "0", coll.Variant{Buffers: "symmetric", CTAPolicy: "default"}, "NCCL_CUMEM_ENABLE=0 is set"},
	} {
		t.Run(c.env, func(t *testing.T) {
			t.Setenv(c.env, c.value)
			if err := b.SupportsVariant(c.v); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want %q", err, c.want)
			}
			if err := b.SupportsVariant(coll.Baseline); err != nil {
				t.Errorf("baseline: %v", err)
			}
		})
	}
}

// A symmetric buffer's footprint is rounded up to the driver's VMM
// granularity (asked for the memory ncclMemAlloc makes), or 2 MiB when the
// driver cannot say; the others' is exact.
func TestAllocBytes(t *testing.T) {
	t.Setenv("RSAG_FAKE_CUDA_GRANULARITY", "65536")
	b := newFake(t)
	for _, c := range []struct {
		k    coll.BufferKind
		n    int64
		want int64
	}{
		{coll.SymmetricBuffers, 1, 65536}, {coll.SymmetricBuffers, 65536, 65536},
		{coll.SymmetricBuffers, 65537, 131072}, {coll.SymmetricBuffers, 0, 0},
		{coll.PlainBuffers, 65537, 65537}, {coll.RegisteredBuffers, 12345, 12345},
	} {
		if got := b.AllocBytes(c.k, c.n); got != c.want {
			t.Errorf("AllocBytes(%s, %d) = %d, want %d", c.k, c.n, got, c.want)
		}
	}

	useFakeCUDA(t, "-DOMIT_GRANULARITY")
	useFakeNCCL(t)
	old, err := New(fakeBoot{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if got := old.AllocBytes(coll.SymmetricBuffers, 1); got != fallbackGranularity {
		t.Errorf("without cuMemGetAllocationGranularity: %d, want %d", got, fallbackGranularity)
	}
}

// policyValue is the ncclConfig_t.CTAPolicy a policy's communicator has.
func policyValue(p coll.CTAPolicy) string { return strconv.Itoa(ctaPolicies[p].value) }

// regKind is what the fake says of a buffer a collective used: "reg" or
// "win" and the offset into it, or "none".
func regKind(s string) (kind string, offset int64) {
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return parts[0], -1
	}
	off, _ := strconv.ParseInt(parts[2], 10, 64)
	return parts[0], off
}

var collectiveNames = []string{"ncclAllReduce", "ncclReduceScatter", "ncclAllGather"}

// checkRegistrations walks one rank's calls of one variant in order: every
// allocation is registered once (a window for symmetric, aligned, at offset
// 0, NCCL_WIN_COLL_SYMMETRIC), every collective's buffers are registered
// then (the fake says which registration of the collective's communicator
// holds them), and each buffer is deregistered before it is freed.
func checkRegistrations(t *testing.T, where string, v coll.Variant, calls []call) {
	t.Helper()
	alloc, reg, free, dereg := "cuMemAlloc_v2", "ncclCommRegister", "cuMemFree_v2", "ncclCommDeregister"
	if v.Buffers == coll.SymmetricBuffers {
		alloc, reg, free, dereg = "ncclMemAlloc", "ncclCommWindowRegister", "ncclMemFree", "ncclCommWindowDeregister"
	}
	kind := map[coll.BufferKind]string{coll.PlainBuffers: "none", coll.RegisteredBuffers: "reg", coll.SymmetricBuffers: "win"}[v.Buffers]
	state := map[string]string{} // pointer -> "allocated", "registered", "deregistered"
	allocs, colls := 0, 0
	for _, c := range calls {
		p := c.str("ptr")
		if c.kv["buf"] != "" {
			p = c.str("buf")
		}
		switch {
		case c.name == alloc:
			state[p] = "allocated"
			allocs++
		case c.name == reg && v.Buffers != coll.PlainBuffers:
			if state[p] != "allocated" {
				t.Errorf("%s: %s of %s, which is %q", where, reg, p, state[p])
			}
			state[p] = "registered"
			if v.Buffers == coll.SymmetricBuffers &&
				(c.str("offset") != "0" || c.str("flags") != "1" || c.num("buf")%ncclWinRequiredAlignment != 0) {
				t.Errorf("%s: window not at offset 0, NCCL_WIN_COLL_SYMMETRIC and 4096-aligned: %v", where, c)
			}
		case c.name == dereg:
			if state[p] != "registered" {
				t.Errorf("%s: %s of %s, which is %q", where, dereg, p, state[p])
			}
			state[p] = "deregistered"
		case c.name == free:
			want := "deregistered"
			if v.Buffers == coll.PlainBuffers {
				want = "allocated"
			}
			if state[p] != want {
				t.Errorf("%s: %s of %s, which is %q, not %s", where, free, p, state[p], want)
			}
			delete(state, p)
		case slices.Contains(collectiveNames, c.name):
			colls++
			if c.str("policy") != policyValue(v.CTAPolicy) {
				t.Errorf("%s: a collective on a communicator of policy %s: %v", where, c.str("policy"), c)
			}
			for _, arg := range []string{"sendreg", "recvreg"} {
				if k, _ := regKind(c.str(arg)); k != kind {
					t.Errorf("%s: %s is %q, want %s: %v", where, arg, c.str(arg), kind, c)
				}
			}
		case c.name == "ncclCommRegister" || c.name == "ncclCommWindowRegister" || c.name == "cuMemAlloc_v2" || c.name == "ncclMemAlloc":
			t.Errorf("%s: %s in a %s run", where, c.name, v.Buffers)
		}
	}
	if allocs == 0 || colls == 0 {
		t.Errorf("%s: %d allocations and %d collectives: the run did nothing", where, allocs, colls)
	}
	for p, s := range state {
		t.Errorf("%s: %s is left %s", where, p, s)
	}
}

// checkWindowOffsets holds every collective on symmetric buffers against
// NCCL's rule: a buffer is at the same offset of its window on every rank,
// except the in-place shard (ReduceScatter's output, AllGather's input),
// which is at rank x its size from the full buffer's offset, in the same
// window.
func checkWindowOffsets(t *testing.T, where string, perRank map[int][]call) {
	t.Helper()
	type key struct{ clique, seq string }
	byColl := map[key][]call{}
	for _, calls := range perRank {
		for _, c := range filter(calls, collectiveNames...) {
			k := key{c.str("clique"), c.str("seq")}
			byColl[k] = append(byColl[k], c)
		}
	}
	if len(byColl) == 0 {
		t.Fatalf("%s: no collectives", where)
	}
	for k, cs := range byColl {
		if len(cs) != len(perRank) {
			t.Errorf("%s: collective %v ran on %d ranks of %d", where, k, len(cs), len(perRank))
			continue
		}
		ts := map[string]int64{"4": 8, "7": 4}[cs[0].str("type")] // int64, float32
		for _, arg := range []string{"sendreg", "recvreg"} {
			shard := (cs[0].name == "ncclReduceScatter" && arg == "recvreg") || (cs[0].name == "ncclAllGather" && arg == "sendreg")
			other := map[string]string{"sendreg": "recvreg", "recvreg": "sendreg"}[arg]
			_, first := regKind(cs[0].str(arg))
			for _, c := range cs {
				_, off := regKind(c.str(arg))
				if off == first && !shard {
					continue
				}
				_, base := regKind(c.str(other))
				rank, _ := strconv.ParseInt(c.str("rank"), 10, 64)
				inPlace := shard && strings.Split(c.str(arg), ":")[1] == strings.Split(c.str(other), ":")[1] &&
					off == base+rank*c.num("count")*ts
				if off != first && !inPlace {
					t.Errorf("%s: %s at offset %d on rank %d and %d on another: %v", where, arg, off, rank, first, c)
				}
			}
		}
	}
}

// The sweep runs every buffers x cta_policy combination on 2 ranks,
// through the phases' own timing (every method, both placements), which
// checks every element of every output. From the call log: each policy's
// communicator is made once, with a checked config, however many variants
// use it; every variant's collectives run on its policy's communicator,
// with its buffers registered before and deregistered before they are
// freed; windows are at equal offsets on every rank.
func TestSweepEveryVariant(t *testing.T) {
	variants := allVariants()
	var samples [2][]phases.TimingSample
	log := runRanks(t, 2, func(r fakeRank, b *Backend) error {
		for _, v := range variants {
			if err := mark(r.rank, v.String()); err != nil {
				return err
			}
			// As a config asks for it: the run names the variant, and the
			// timing phase takes it from the backend.
			run := timingRun(v.String())
			run.Buffers, run.CTAPolicies = []coll.BufferKind{v.Buffers}, []coll.CTAPolicy{v.CTAPolicy}
			got, err := phases.RunTiming(b, r, []coll.Sweep{run}, nil, nil)
			samples[r.rank] = append(samples[r.rank], got...)
			if err != nil {
				return fmt.Errorf("rank %d, %s: %w", r.rank, v, err)
			}
			if m, err := b.Memory(); err != nil || m.LiveBytes != 0 {
				return fmt.Errorf("rank %d after %s: %+v, %v", r.rank, v, m, err)
			}
		}
		return mark(r.rank, "close")
	})
	run := timingRun("")
	want := len(variants) * len(run.SizesBytes) * len(run.DTypes) * len(run.Placements) * len(run.Methods) * run.Cycles * 2
	for r, s := range samples {
		if len(s) != want {
			t.Errorf("rank %d: %d samples, want %d", r, len(s), want)
		}
		for _, x := range s {
			if !x.Correct {
				t.Errorf("rank %d: %+v is not correct", r, x)
			}
		}
	}

	segs := log.byRank()
	for r := range 2 {
		var made []call
		for _, v := range variants {
			made = append(made, filter(segs[v.String()][r], "ncclCommInitRankConfig")...)
		}
		if len(made) != 2 || made[0].str("policy") != "1" || made[1].str("policy") != "2" {
			t.Errorf("rank %d made %v, want one communicator each for efficiency (1) and zero (2)", r, made)
		}
		if n := len(filter(segs["close"][r], "ncclCommDestroy")); n != 3 {
			t.Errorf("rank %d's Close destroyed %d communicators, want 3", r, n)
		}
	}
	configs := log.filter("config")
	if len(configs) != 4 {
		t.Errorf("%d configs in the log, want 2 per rank", len(configs))
	}
	for _, v := range variants {
		for r := range 2 {
			checkRegistrations(t, fmt.Sprintf("rank %d, %s", r, v), v, segs[v.String()][r])
		}
		if v.Buffers == coll.SymmetricBuffers {
			checkWindowOffsets(t, v.String(), segs[v.String()])
		}
	}
}

func (l *callLog) filter(names ...string) []call { return filter(l.calls, names...) }

// int64s writes n copies of v.
func int64s(v int64, n int) []byte { return bytes.Repeat(int64Bytes(v), n) }

// A variant's buffers count in the root's Memory at the bytes asked for,
// work with any Backend's collectives, keep their windows when the variant
// is closed, and give the sums expected, in place too.
func TestVariantBuffersAcrossRanks(t *testing.T) {
	t.Setenv("RSAG_FAKE_CUDA_GRANULARITY", "65536")
	log := runRanks(t, 2, func(r fakeRank, b *Backend) error {
		v, err := b.WithVariant(coll.Variant{Buffers: coll.SymmetricBuffers, CTAPolicy: coll.ZeroCTAPolicy})
		if err != nil {
			return err
		}
		x, err := v.Alloc(coll.Elems(coll.Int64, 1024))
		if err != nil {
			return err
		}
		y, err := v.Alloc(coll.Elems(coll.Int64, 1024))
		if err != nil {
			return err
		}
		if m, _ := b.Memory(); m.LiveBytes != 16384 || b.AllocBytes(coll.SymmetricBuffers, 8192) != 65536 {
			return fmt.Errorf("rank %d: live %d bytes, footprint %d", r.rank, m.LiveBytes, b.AllocBytes(coll.SymmetricBuffers, 8192))
		}
		got := make([]byte, 8192)
		check := func(what string, buf coll.Buffer, want int64) error {
			if err := b.Synchronize(); err != nil {
				return err
			}
			if err := b.Read(buf, got); err != nil {
				return err
			}
			if !bytes.Equal(got, int64s(want, 1024)) {
				return fmt.Errorf("rank %d, %s: %v..., want %d", r.rank, what, got[:16], want)
			}
			return nil
		}
		if err := v.Write(x, int64s(int64(r.rank+1), 1024)); err != nil {
			return err
		}
		if err := v.Run(coll.AllReduce, x, y, coll.Sum); err != nil {
			return err
		}
		if err := check("all-reduce", y, 3); err != nil {
			return err
		}
		shard, err := v.View(x, r.rank*512, 512)
		if err != nil {
			return err
		}
		if err := v.Run(coll.ReduceScatter, x, shard, coll.Sum); err != nil {
			return err
		}
		if err := v.Run(coll.AllGather, shard, x, coll.Sum); err != nil {
			return err
		}
		if err := check("in-place reduce-scatter and all-gather", x, 3); err != nil {
			return err
		}
		// The world's default communicator runs on the variant's buffers.
		if err := b.Run(coll.AllReduce, y, x, coll.Sum); err != nil {
			return err
		}
		if err := check("the root's all-reduce of a variant's buffer", x, 6); err != nil {
			return err
		}
		if err := v.Close(); err != nil {
			return err
		}
		if err := mark(r.rank, "closed"); err != nil {
			return err
		}
		if err := v.Run(coll.AllReduce, x, y, coll.Sum); err != nil {
			return fmt.Errorf("after the variant's Close: %w", err)
		}
		if err := check("after the variant's Close", y, 12); err != nil {
			return err
		}
		return errors.Join(v.Free(x), b.Free(y), mark(r.rank, "close")) // either may free them
	})
	segs := log.byRank()
	for r := range 2 {
		calls := segs["new"][r]
		windows := filter(calls, "ncclCommWindowRegister")
		if len(windows) != 2 {
			t.Fatalf("rank %d: %d windows", r, len(windows))
		}
		for _, w := range windows {
			if w.str("size") != "8192" || w.str("offset") != "0" || w.str("flags") != "1" || w.num("buf")%4096 != 0 {
				t.Errorf("rank %d: %v", r, w)
			}
		}
		if n := filter(segs["closed"][r], "ncclCommDestroy", "ncclCommWindowDeregister"); len(n) != 2 {
			t.Errorf("rank %d: after the variant's Close %v, want its two windows deregistered at Free and nothing destroyed", r, n)
		}
	}
	checkWindowOffsets(t, "symmetric/zero", segs["new"])
}

// A window NCCL did not make (no symmetric memory on this communicator)
// fails the allocation in words, and the memory is released.
func TestNoWindowIsAnError(t *testing.T) {
	b := newFake(t)
	t.Setenv("RSAG_FAKE_NCCL_NO_WINDOW", "1")
	v, err := b.WithVariant(coll.Variant{Buffers: coll.SymmetricBuffers, CTAPolicy: coll.DefaultCTAPolicy})
	if err != nil {
		t.Fatal(err)
	}
	x, err := v.Alloc(coll.Elems(coll.Float32, 16))
	if x != nil || err == nil || !strings.Contains(err.Error(), "NCCL registered no symmetric window") {
		t.Errorf("got %v, %v", x, err)
	}
	if m, _ := b.Memory(); m.LiveBytes != 0 {
		t.Errorf("live %d bytes after a failed allocation", m.LiveBytes)
	}
}

// A variant's collectives are the timed path too.
func TestVariantTimeDoesNotAllocate(t *testing.T) {
	b := newFake(t)
	v, err := b.WithVariant(coll.Variant{Buffers: coll.SymmetricBuffers, CTAPolicy: coll.ZeroCTAPolicy})
	if err != nil {
		t.Fatal(err)
	}
	x, err := v.Alloc(coll.Elems(coll.Float32, 256))
	if err != nil {
		t.Fatal(err)
	}
	op := func() error { return v.Run(coll.AllGather, x, x, coll.Sum) }
	if n := testing.AllocsPerRun(50, func() { _, _ = v.Time(op) }); n != 0 {
		t.Errorf("a variant's Time allocates %v times per call", n)
	}
}

// Split gives each group its ranks, ordered by key; the group and the
// world use each other's buffers; a group's policies are splits with a
// config; closing the group destroys its communicators only.
func TestSplit(t *testing.T) {
	wantRank := map[int]int{0: 1, 1: 1, 2: 0, 3: 0} // color rank%2, key -rank
	log := runRanks(t, 4, func(r fakeRank, b *Backend) error {
		if _, err := b.Split(-2, 0); err == nil || !strings.Contains(err.Error(), "color -2 is negative") {
			return fmt.Errorf("split with color -2: %v", err)
		}
		world, err := b.Alloc(coll.Elems(coll.Int64, 4))
		if err != nil {
			return err
		}
		if err := b.Write(world, int64s(int64(r.rank+1), 4)); err != nil {
			return err
		}
		sb, err := b.Split(r.rank%2, -r.rank)
		if err != nil {
			return err
		}
		g := sb.(*Backend)
		if g.Rank() != wantRank[r.rank] || g.WorldSize() != 2 || b.Rank() != r.rank || b.WorldSize() != 4 {
			return fmt.Errorf("rank %d: group rank %d of %d, world rank %d of %d", r.rank, g.Rank(), g.WorldSize(), b.Rank(), b.WorldSize())
		}
		mine, err := g.Alloc(coll.Elems(coll.Int64, 4))
		if err != nil {
			return err
		}
		got := make([]byte, 32)
		check := func(what string, buf coll.Buffer, want int64) error {
			if err := b.Synchronize(); err != nil {
				return err
			}
			if err := b.Read(buf, got); err != nil || !bytes.Equal(got, int64s(want, 4)) {
				return fmt.Errorf("rank %d, %s: %v, %v; want %d", r.rank, what, got, err, want)
			}
			return nil
		}
		groupSum := map[int]int64{0: 1 + 3, 1: 2 + 4}[r.rank%2]
		if err := g.Run(coll.AllReduce, world, mine, coll.Sum); err != nil {
			return err
		}
		if err := check("the group's all-reduce of the world's buffer", mine, groupSum); err != nil {
			return err
		}
		if err := b.Run(coll.AllReduce, mine, world, coll.Sum); err != nil {
			return err
		}
		if err := check("the world's all-reduce of the group's buffer", world, 2*(4+6)); err != nil {
			return err
		}
		gv, err := g.WithVariant(coll.Variant{Buffers: coll.RegisteredBuffers, CTAPolicy: coll.EfficiencyCTAPolicy})
		if err != nil {
			return err
		}
		if gv.Rank() != g.Rank() || gv.WorldSize() != 2 {
			return fmt.Errorf("the group's variant is rank %d of %d", gv.Rank(), gv.WorldSize())
		}
		reg, err := gv.Alloc(coll.Elems(coll.Int64, 4))
		if err != nil {
			return err
		}
		if err := gv.Run(coll.AllReduce, mine, reg, coll.Sum); err != nil {
			return err
		}
		if err := check("the group's variant", reg, 2*groupSum); err != nil {
			return err
		}
		if err := mark(r.rank, "close-group"); err != nil {
			return err
		}
		if err := g.Close(); err != nil {
			return err
		}
		if err := mark(r.rank, "after"); err != nil {
			return err
		}
		if err := g.Run(coll.AllReduce, world, mine, coll.Sum); err == nil || !strings.Contains(err.Error(), "aborted or closed") {
			return fmt.Errorf("the group's all-reduce after its Close: %v", err)
		}
		if err := gv.Run(coll.AllReduce, world, mine, coll.Sum); err == nil {
			return errors.New("the group's variant ran after the group's Close")
		}
		// The group's buffers are the device's: the world still uses them.
		if err := b.Run(coll.AllReduce, reg, world, coll.Sum); err != nil {
			return err
		}
		if err := check("the world's all-reduce after the group closed", world, 4*(4+6)); err != nil {
			return err
		}
		if err := mark(r.rank, "nocolor"); err != nil {
			return err
		}
		// NCCL_SPLIT_NOCOLOR: rank 3 takes part and gets no group.
		color := 0
		if r.rank == 3 {
			color = coll.NoColor
		}
		if nb, err := b.Split(color, r.rank); err != nil || (nb == nil) != (r.rank == 3) {
			return fmt.Errorf("rank %d: split with color %d: %v, %v", r.rank, color, nb, err)
		} else if nb != nil {
			if nb.WorldSize() != 3 || nb.Rank() != r.rank {
				return fmt.Errorf("rank %d: the group without rank 3: rank %d of %d", r.rank, nb.Rank(), nb.WorldSize())
			}
			if err := nb.Close(); err != nil {
				return err
			}
		}
		return mark(r.rank, "close")
	})
	segs := log.byRank()
	for r := range 4 {
		nocolor := filter(segs["nocolor"][r], "ncclCommSplit")
		if len(nocolor) != 1 || (r == 3) != (nocolor[0].str("color") == "-1") || (r == 3) != (nocolor[0].str("newcomm") == "0") {
			t.Errorf("rank %d: the split without rank 3 is %v, want rank 3 at color -1 (NCCL_SPLIT_NOCOLOR) with no communicator", r, nocolor)
		}
		splits := filter(segs["new"][r], "ncclCommSplit")
		if len(splits) != 2 {
			t.Fatalf("rank %d: %d splits, want the group's and its policy's", r, len(splits))
		}
		s, p := splits[0], splits[1]
		if s.str("config") != "0" || s.str("newsize") != "2" || s.str("newrank") != strconv.Itoa(wantRank[r]) || s.str("policy") != "0" {
			t.Errorf("rank %d: the group's split %v", r, s)
		}
		if p.str("config") != "1" || p.str("policy") != "1" || p.str("color") != "0" || p.str("comm") != s.str("newcomm") {
			t.Errorf("rank %d: the policy's split %v, want all of the group one color, with the config", r, p)
		}
		closed := filter(segs["close-group"][r], "ncclCommDestroy", "ncclCommDeregister")
		if len(closed) != 3 || closed[0].name != "ncclCommDeregister" || closed[1].str("comm") != p.str("newcomm") ||
			closed[2].str("comm") != s.str("newcomm") {
			t.Errorf("rank %d: the group's Close did %v, want its registration released, then its two communicators", r, closed)
		}
		if n := filter(segs["close"][r], "ncclCommDestroy"); len(n) != 1 {
			t.Errorf("rank %d: the world's Close destroyed %v, want its own one", r, n)
		}
	}
}

// Abort aborts every communicator: the world's, the policies', a group's
// and its policy's; nothing runs after it, and Close still releases the
// buffers (NCCL released their registrations with the communicators).
func TestAbortEveryCommunicator(t *testing.T) {
	log := runRanks(t, 2, func(r fakeRank, b *Backend) error {
		var handles []coll.Backend
		for _, v := range []coll.Variant{
			{Buffers: coll.SymmetricBuffers, CTAPolicy: coll.EfficiencyCTAPolicy},
			{Buffers: coll.RegisteredBuffers, CTAPolicy: coll.ZeroCTAPolicy},
		} {
			vb, err := b.WithVariant(v)
			if err != nil {
				return err
			}
			handles = append(handles, vb)
		}
		g, err := b.Split(0, r.rank)
		if err != nil {
			return err
		}
		gv, err := g.(*Backend).WithVariant(coll.Variant{Buffers: coll.PlainBuffers, CTAPolicy: coll.ZeroCTAPolicy})
		if err != nil {
			return err
		}
		handles = append(handles, g, gv, b)
		var bufs []coll.Buffer
		for _, h := range handles {
			x, err := h.Alloc(coll.Elems(coll.Float32, 64))
			if err != nil {
				return err
			}
			bufs = append(bufs, x)
		}
		if err := mark(r.rank, "abort"); err != nil {
			return err
		}
		b.Abort()
		for i, h := range handles {
			if err := h.Run(coll.AllReduce, bufs[i], bufs[i], coll.Sum); err == nil || !strings.Contains(err.Error(), "aborted or closed") {
				return fmt.Errorf("rank %d: a collective on handle %d after Abort: %v", r.rank, i, err)
			}
		}
		if _, err := b.WithVariant(coll.Variant{Buffers: coll.PlainBuffers, CTAPolicy: coll.DefaultCTAPolicy}); err == nil {
			return errors.New("a variant after Abort")
		}
		return b.AsyncError()
	})
	segs := log.byRank()
	for r := range 2 {
		calls := segs["abort"][r]
		if n := len(filter(calls, "ncclCommAbort")); n != 5 {
			t.Errorf("rank %d: %d communicators aborted, want 5", r, n)
		}
		if n := filter(calls, "ncclCommDestroy", "ncclCommDeregister", "ncclCommWindowDeregister"); len(n) != 0 {
			t.Errorf("rank %d: after Abort %v", r, n)
		}
		if len(filter(calls, "ncclMemFree")) != 1 || len(filter(calls, "cuMemFree_v2")) != 4 {
			t.Errorf("rank %d: Close after Abort freed %v", r, filter(calls, "ncclMemFree", "cuMemFree_v2"))
		}
	}
}
