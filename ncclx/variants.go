package ncclx

/*
#include "abi.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"os"

	"rsag/coll"
)

// group is ranks that communicate together: the world, or a group Split
// made. It has one communicator per CTA policy asked for, each made the
// first time it is asked for and kept until the group is closed.
type group struct {
	rank, size int
	comms      map[coll.CTAPolicy]*communicator
	// boot is the world's Bootstrap: the world's policy communicators are
	// made with ncclCommInitRankConfig from a fresh unique id handed out
	// through it. A split group has none: its policy communicators are
	// ncclCommSplit of its first communicator, with a config.
	boot Bootstrap
	// parent is the communicator the group was split from; nil for the world.
	parent *communicator
}

// communicator is one NCCL communicator of a group and its CTA policy.
type communicator struct {
	comm   ncclComm // nil once destroyed or aborted
	policy coll.CTAPolicy
	g      *group
}

// adopt records a new communicator in its group and on the device, which
// polls, aborts and closes them all.
func (d *device) adopt(c *communicator) {
	c.g.comms[c.policy] = c
	d.comms = append(d.comms, c)
}

// ctaPolicies are the CTA policies with their ncclConfig_t.CTAPolicy value
// (NCCL_CTA_POLICY_*) and the version code of the NCCL that has it: 2.27
// brought CTAPolicy with default and efficiency, 2.28 zero (nccl.h).
var ctaPolicies = map[coll.CTAPolicy]struct {
	value int
	name  string
	since int
}{
	coll.DefaultCTAPolicy:    {0, "NCCL_CTA_POLICY_DEFAULT", 0},
	coll.EfficiencyCTAPolicy: {1, "NCCL_CTA_POLICY_EFFICIENCY", 22700},
	coll.ZeroCTAPolicy:       {2, "NCCL_CTA_POLICY_ZERO", 22800},
}

// bufferKinds are what each kind of buffer needs of NCCL: the version that
// brought it, the calls it makes, and what it does, in words.
var bufferKinds = map[coll.BufferKind]struct {
	what    string
	since   int
	symbols []string
}{
	coll.PlainBuffers: {what: "use plain buffers"},
	// ncclCommRegister and ncclMemAlloc came with NCCL 2.19.
	coll.RegisteredBuffers: {"register buffers", 21900, []string{"ncclCommRegister", "ncclCommDeregister"}},
	// Window registration came with NCCL 2.27.
	coll.SymmetricBuffers: {"register symmetric windows", 22700,
		[]string{"ncclMemAlloc", "ncclMemFree", "ncclCommWindowRegister", "ncclCommWindowDeregister"}},
}

// SupportsVariant says whether v can run on this NCCL, and if not, why and
// what to do: the loaded NCCL must be new enough for the buffer kind and
// the CTA policy and have their symbols, and no environment variable may
// make NCCL ignore what v asks for. Every rank of a job answers alike, as
// they load the same NCCL, so a refusal comes before any collective.
func (b *Backend) SupportsVariant(v coll.Variant) error {
	k, ok := bufferKinds[v.Buffers]
	if !ok {
		return fmt.Errorf("the NCCL backend does not know buffers %q: use %s", v.Buffers, joinNames(coll.BufferKinds))
	}
	p, ok := ctaPolicies[v.CTAPolicy]
	if !ok {
		return fmt.Errorf("the NCCL backend does not know cta_policy %q: use %s", v.CTAPolicy, joinNames(coll.CTAPolicies))
	}
	nccl := fmt.Sprintf("NCCL %s (%s)", formatNCCLVersion(b.ncclVersion), b.nc.path)
	newer := func(since int) string {
		return fmt.Sprintf("load NCCL %s or newer (%s=/path/to/libnccl.so.2)", shortVersion(since), NCCLLibraryEnv)
	}
	dropBuffers := fmt.Sprintf("drop %q from [timing] buffers", v.Buffers)
	if b.ncclVersion < k.since {
		return fmt.Errorf("buffers %s: %s cannot %s: that came with NCCL %s; %s or %s",
			v.Buffers, nccl, k.what, shortVersion(k.since), newer(k.since), dropBuffers)
	}
	if err := b.nc.lacks(k.symbols...); err != nil {
		return fmt.Errorf("buffers %s: NCCL %s: %w; %s or %s", v.Buffers, formatNCCLVersion(b.ncclVersion), err, newer(k.since), dropBuffers)
	}
	if v.Buffers == coll.SymmetricBuffers {
		// NCCL registers no window, and says nothing, when either is off
		// (symmetricSupport in NCCL 2.28's init.cc).
		for _, env := range []string{"NCCL_WIN_ENABLE", "NCCL_CUMEM_ENABLE"} {
			if os.Getenv(env) == "0" {
				return fmt.Errorf("buffers symmetric: %s=0 is set, and NCCL then registers no symmetric window; unset it or %s",
					env, dropBuffers)
			}
		}
	}
	if v.CTAPolicy == coll.DefaultCTAPolicy {
		return nil
	}
	dropPolicy := fmt.Sprintf("drop %q from [timing] cta_policies", v.CTAPolicy)
	if b.ncclVersion < p.since {
		return fmt.Errorf("cta_policy %s: %s has no %s: that came with NCCL %s; %s or %s",
			v.CTAPolicy, nccl, p.name, shortVersion(p.since), newer(p.since), dropPolicy)
	}
	// The world's policy communicators come from a unique id, a group's
	// from a split of the group's first communicator.
	maker := "ncclCommInitRankConfig"
	if b.c.g.boot == nil {
		maker = "ncclCommSplit"
	}
	if err := b.nc.lacks(maker); err != nil {
		return fmt.Errorf("cta_policy %s: NCCL %s: %w; %s or %s", v.CTAPolicy, formatNCCLVersion(b.ncclVersion), err, newer(p.since), dropPolicy)
	}
	// NCCL lets NCCL_CTA_POLICY override every communicator's config.
	if e, ok := os.LookupEnv("NCCL_CTA_POLICY"); ok {
		return fmt.Errorf("cta_policy %s: NCCL_CTA_POLICY=%s is set, and NCCL lets it override the CTA policy of every "+
			"communicator; unset it to sweep cta_policies, or %s", v.CTAPolicy, e, dropPolicy)
	}
	return nil
}

func joinNames[T fmt.Stringer](values []T) string {
	s := ""
	for i, v := range values {
		if i > 0 {
			s += ", "
		}
		s += v.String()
	}
	return s
}

// WithVariant returns a Backend of this one's group whose Alloc makes
// v.Buffers and whose collectives run on the group's communicator with
// v.CTAPolicy, made the first time a policy is asked for (collectively:
// every rank of the group asks for the same variants in the same order).
// The default policy is the group's first communicator, so Baseline runs
// exactly as before. The Backend returned owns nothing: its Close does
// nothing, and the Backend New returned releases every communicator.
func (b *Backend) WithVariant(v coll.Variant) (coll.Backend, error) {
	if err := b.SupportsVariant(v); err != nil {
		return nil, b.errorf("%w", err)
	}
	c, err := b.policyComm(b.c.g, v.CTAPolicy)
	if err != nil {
		return nil, err
	}
	return &Backend{device: b.device, c: c, kind: v.Buffers}, nil
}

// newConfig is NCCL_CONFIG_INITIALIZER with CTAPolicy set to policy.
func newConfig(policy int) C.rsag_ncclConfig {
	var cfg C.rsag_ncclConfig
	C.rsag_nccl_config_init(&cfg)
	cfg.CTAPolicy = C.int(policy)
	return cfg
}

// policyComm returns g's communicator with policy p, making it when it is
// the first time: in the world, ncclCommInitRankConfig from a fresh unique
// id (as the default one was made, with a config); in a split group,
// ncclCommSplit of the group's first communicator, all ranks one color.
func (d *device) policyComm(g *group, p coll.CTAPolicy) (*communicator, error) {
	if c, ok := g.comms[p]; ok {
		if c.comm == nil {
			return nil, d.errorf("cta_policy %s: the communicator was aborted or closed", p)
		}
		return c, nil
	}
	first := d.groupComm(g)
	if first == nil {
		return nil, d.errorf("cta_policy %s: the group's communicators were aborted or closed", p)
	}
	cfg := newConfig(ctaPolicies[p].value)
	c := &communicator{policy: p, g: g}
	var err error
	if g.boot != nil {
		var id [uniqueIDBytes]byte
		if id, err = d.uniqueID(g.boot); err != nil {
			return nil, err
		}
		c.comm, err = d.nc.initRankConfig(g.size, &id, g.rank, &cfg)
	} else {
		c.comm, err = d.nc.split(first.comm, 0, g.rank, &cfg)
	}
	if err != nil {
		return nil, d.errorf("creating the NCCL communicator of %d ranks with cta_policy %s: %w (set NCCL_DEBUG=INFO for NCCL's log)",
			g.size, p, err)
	}
	d.adopt(c)
	return c, nil
}

// groupComm is g's first communicator that is still alive.
func (d *device) groupComm(g *group) *communicator {
	for _, c := range d.comms {
		if c.g == g && c.comm != nil {
			return c
		}
	}
	return nil
}

// AllocBytes is the device memory an allocation of n bytes of kind k
// takes: n for plain and registered buffers (cuMemAlloc's own rounding is
// not visible and small), n rounded up to the VMM granularity for
// symmetric ones, as ncclMemAlloc rounds it.
func (b *Backend) AllocBytes(k coll.BufferKind, n int64) int64 {
	if k != coll.SymmetricBuffers || n <= 0 {
		return n
	}
	g := b.granularity
	return (n + g - 1) / g * g
}

// Split makes a group of the ranks of this Backend's group that pass the
// same color, ordered by key, with ncclCommSplit of this Backend's
// communicator (no config: the group inherits its CTA policy). It is
// collective over the group; a rank that passes coll.NoColor takes part as
// NCCL_SPLIT_NOCOLOR and gets no group (nil, no error). The Backend
// returned allocates the same kind of buffers as this one, shares the
// device and its buffers, and its Close destroys the group's communicators
// only.
func (b *Backend) Split(color, key int) (coll.Backend, error) {
	if color < 0 && color != coll.NoColor {
		return nil, b.errorf("split: color %d is negative: give a color of 0 or more, or coll.NoColor (%d) to join no group", color, coll.NoColor)
	}
	if err := b.nc.lacks("ncclCommSplit"); err != nil {
		return nil, b.errorf("split: NCCL %s: %w; load NCCL %s or newer (%s=/path/to/libnccl.so.2)",
			formatNCCLVersion(b.ncclVersion), err, shortVersion(21800), NCCLLibraryEnv)
	}
	if b.c.comm == nil {
		return nil, b.errorf("split: the communicator was aborted or closed")
	}
	if color == coll.NoColor {
		color = ncclSplitNoColor
	}
	comm, err := b.nc.split(b.c.comm, color, key, nil)
	if err != nil {
		return nil, b.errorf("split with color %d and key %d: %w", color, key, err)
	}
	if color == ncclSplitNoColor {
		if comm != nil { // NCCL returns none: one that came back is not ours to keep
			_ = b.nc.destroy(comm)
			return nil, b.errorf("split with NCCL_SPLIT_NOCOLOR: NCCL returned a communicator")
		}
		return nil, nil
	}
	size, rank, err := b.nc.countAndRank(comm)
	if err != nil {
		_ = b.nc.destroy(comm)
		return nil, b.errorf("split with color %d and key %d: %w", color, key, err)
	}
	g := &group{rank: rank, size: size, comms: map[coll.CTAPolicy]*communicator{}, parent: b.c}
	c := &communicator{comm: comm, policy: b.c.policy, g: g}
	b.adopt(c)
	return &Backend{device: b.device, c: c, kind: b.kind, owns: g}, nil
}

// within reports whether g is outer or was split, at any depth, from one
// of outer's communicators.
func (g *group) within(outer *group) bool {
	for ; g != nil; g = g.parent.groupOf() {
		if g == outer {
			return true
		}
	}
	return false
}

func (c *communicator) groupOf() *group {
	if c == nil {
		return nil
	}
	return c.g
}

// closeGroup destroys the communicators of this Backend's group and of the
// groups split from it, each after its graphs and its buffers'
// registrations; the buffers stay allocated, owned by the device.
func (b *Backend) closeGroup() error {
	var errs []error
	if err := b.cu.syncStream(b.stream); err != nil {
		errs = append(errs, err)
	}
	for g := range b.graphs {
		if g.b.c.g.within(b.owns) {
			errs = append(errs, g.release())
		}
	}
	for i := len(b.comms) - 1; i >= 0; i-- {
		if b.comms[i].g.within(b.owns) {
			errs = append(errs, b.destroy(b.comms[i]))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return b.errorf("closing the group of %d ranks: %w", b.owns.size, err)
	}
	return nil
}

// destroy deregisters the buffers registered with c (NCCL needs the
// communicator for that) and destroys it.
func (d *device) destroy(c *communicator) error {
	if c.comm == nil {
		return nil
	}
	var errs []error
	for buf := range d.allocs {
		if buf.regComm == c {
			errs = append(errs, d.unregister(buf))
		}
	}
	errs = append(errs, d.nc.destroy(c.comm))
	c.comm = nil
	return errors.Join(errs...)
}
