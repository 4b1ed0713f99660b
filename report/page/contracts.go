// The page's sections of the equality itself: the contracts (exact) and
// the numerics (floats, within the bound).

package page

import (
	"fmt"

	"rsag/report"
)

func contractsSection(s report.Summary) section {
	sec := section{ID: "contracts", Title: "Contracts",
		How: "Each contract is a proof on exact int64 data, run on every rank. An -equivalence contract holds when AllReduce and " +
			"ReduceScatter + AllGather give the same result as the formula; a -rejected one holds when the wrong variant was told apart."}
	if len(s.Contracts) == 0 {
		sec.Empty = absent(s, "contracts")
		return sec
	}
	t := &table{Head: heads("contract", "held on", "failed on ranks", "detail (rank 0)")}
	for _, c := range s.Contracts {
		held := cell{Text: fmt.Sprintf("%d/%d", c.HeldOn, s.WorldSize), Sort: fmt.Sprint(c.HeldOn), Class: "n ok"}
		r := row{}
		if len(c.FailedRanks) > 0 || c.HeldOn < s.WorldSize {
			held.Class, r.Class = "n bad", "bad"
		}
		r.Cells = []cell{plain(c.Name), held, plain(orDash(listText(c.FailedRanks))), wrap(c.Detail)}
		t.Rows = append(t.Rows, r)
	}
	sec.Blocks = []block{{Table: t}}
	return sec
}

func numericsSection(s report.Summary) section {
	sec := section{ID: "numerics", Title: "Numerics",
		How: fmt.Sprintf("AllReduce against ReduceScatter + AllGather on the same seeded random floats, element by element, and each against the exact "+
			"sum; the worst rank. On 2 ranks both paths add a + b and are bitwise equal; on more, the library's two algorithms add in different "+
			"orders and may differ in the last bits, which is harmless while the error stays within the bound for summing %d terms.", s.WorldSize)}
	if len(s.Numerics) == 0 {
		sec.Empty = absent(s, "numerics")
		return sec
	}
	t := &table{Sortable: true, Head: heads("dtype", "size", "AllReduce vs RS + AG", "max abs error AR", "max abs error RS+AG", "bound", "error / bound", "within bound")}
	for _, n := range s.Numerics {
		r := row{Cells: []cell{plain(text(n.DType)), size(n.SizeBytes), plain(n.Verdict()), num("%.3g", n.MaxAbsErrorDirect),
			num("%.3g", n.MaxAbsErrorDecomposed), num("%.3g", n.Bound), num("%.3f", n.MaxBoundRatio), yesNo(n.WithinBound)}}
		if !n.WithinBound {
			r.Class = "bad"
		}
		t.Rows = append(t.Rows, r)
	}
	sec.Blocks = []block{{Table: t}}
	return sec
}
