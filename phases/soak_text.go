package phases

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"time"

	"rsag/coll"
)

// PairsText lists pairs: "int8 prod, uint8 prod".
func PairsText(ps []SoakPair) string {
	var out []string
	for _, p := range ps {
		out = append(out, p.String())
	}
	return strings.Join(out, ", ")
}

// SkippedWhy says why a pair is not drawn on world ranks.
func SkippedWhy(world int) string {
	return fmt.Sprintf("inputs small enough that the reduction and the sum of %d of them stay exact could only all be 1, which could not tell one rank's data from another's", world)
}

// soakProgress is rank 0's line: iterations, bytes moved, failures.
func soakProgress(res SoakResult, took time.Duration, spec SoakSpec) string {
	of := fmt.Sprintf("of %d", spec.Iterations)
	if spec.Duration > 0 {
		of = fmt.Sprintf("in %.1f s of %.0f s", took.Seconds(), spec.Duration.Seconds())
	}
	return fmt.Sprintf("soak: %d iterations %s, %s moved by rank 0, %d failed (seed %d)",
		len(res.Iterations), of, bytesText(res.BytesMoved), res.Failed, spec.Seed)
}

// bytesText is a byte count in decimal units: "512 B", "3.4 MB".
func bytesText(n int64) string {
	switch {
	case n < 1e3:
		return fmt.Sprintf("%d B", n)
	case n < 1e6:
		return fmt.Sprintf("%.1f kB", float64(n)/1e3)
	case n < 1e9:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	}
	return fmt.Sprintf("%.2f GB", float64(n)/1e9)
}

// soakCaseText names a drawn case: "1.2M int32 sum in-place +64 B".
func soakCaseText(c coll.Case) string {
	return fmt.Sprintf("%s %s %s %s +%d B", coll.SizeText(c.SizeBytes), c.DType, c.Op, c.Placement, c.Offset)
}

// stepText names the fault's step as the verdict does: "AllReduce (direct)",
// "ReduceScatter (decomposed, step 1 of 2)".
func stepText(f SoakFault, m coll.TimedMode) string {
	if len(m.Steps) == 1 {
		return fmt.Sprintf("%s (%s)", f.Collective, m.Name)
	}
	return fmt.Sprintf("%s (%s, step %d of %d)", f.Collective, m.Name, f.Step+1, len(m.Steps))
}

// bitsText is an element's bits as a hexadecimal number (its bytes are
// little-endian): 0x40400000 for float32 3.
func bitsText(b []byte) string {
	var v [8]byte
	copy(v[:], b)
	return fmt.Sprintf("0x%0*x", 2*len(b), binary.LittleEndian.Uint64(v[:]))
}

// allKinds is the kind every chunk has, or "" when they differ.
func allKinds(kinds []string) string {
	for _, k := range kinds {
		if k != kinds[0] {
			return ""
		}
	}
	return kinds[0]
}

func itOrThem(chunks []int) string {
	if len(chunks) == 1 {
		return "it"
	}
	return "them"
}

// faultText is ranks' evidence, the same on each of them: how many
// elements, in which chunks, and the first, with its value and bits.
func faultText(fs []SoakFault, m coll.TimedMode, world int) string {
	f := fs[0]
	var ranks []int
	var hosts []string
	for _, g := range fs {
		ranks = append(ranks, g.Rank)
		if !slices.Contains(hosts, g.Host) {
			hosts = append(hosts, g.Host)
		}
	}
	return fmt.Sprintf("%s (%s) %s: %d of %d elements wrong, in %s; the first is element %d (byte %d of the output, which starts %d B into its allocation): expected %s (%s), got %s (%s)",
		ranksText(ranks, world), strings.Join(hosts, ", "), stepText(f, m), f.Wrong, f.Elements, chunksText(f.Chunks), f.Index, f.OffsetBytes, f.Case.Offset,
		valueText(f.Expected), f.ExpectedBits, valueText(f.Got), f.GotBits)
}

// valueText writes a whole number as one, anything else as Go does.
func valueText(v float64) string {
	if v == float64(int64(v)) {
		return fmt.Sprint(int64(v))
	}
	return fmt.Sprint(v)
}

func chunksText(q []int) string {
	if len(q) == 1 {
		return fmt.Sprintf("chunk %d", q[0])
	}
	return fmt.Sprintf("chunks %s", intsText(q))
}

func ranksText(r []int, world int) string {
	if len(r) == world {
		return "every rank"
	}
	if len(r) == 1 {
		return fmt.Sprintf("rank %d", r[0])
	}
	return "ranks " + intsText(r)
}

func intsText(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ",")
}
