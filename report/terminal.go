package report

import (
	"fmt"
	"io"
	"math"
	"strings"
	"unicode/utf8"

	"rsag/coll"
	"rsag/internal/fold"
)

// TerminalWidth is the widest line rsag prints: a person's terminal, or a
// job log read in an editor split beside the code (fold.Width). Every
// table is built to fit it (foldTable), and the terminal writer folds
// prose that does not.
const TerminalWidth = fold.Width

// Terminal is rank 0's terminal: it folds every line of prose wider than
// TerminalWidth (fold.Line: at its clauses where they fit, else at
// spaces, the rest indented), so that a note or a progress line stays
// readable however long its names. Table lines (they start with '+' or
// '|') are left alone: a table folds by design, not mid-row. It folds the
// lines that a single Write completes; what follows a Write that ended
// mid-line is passed on as it is. Safe for concurrent use.
func Terminal(w io.Writer) io.Writer { return fold.NewWriterKeeping(w, tableLine) }

func tableLine(l string) bool { return strings.HasPrefix(l, "+") || strings.HasPrefix(l, "|") }

// USText writes microseconds as every report does (coll.USText).
func USText(us float64) string { return coll.USText(us) }

// BytesText writes a byte count in binary units: exactly where it is a
// whole number of one ("256 MiB", "1050 KiB"), else to three significant
// digits ("262.5 KiB" is 268800 B; "1.03 MiB"); below 1 KiB in bytes.
func BytesText(b int64) string {
	if b < 0 {
		return "-" + BytesText(-b)
	}
	units := []string{"KiB", "MiB", "GiB", "TiB"}
	if b < 1<<10 {
		return fmt.Sprintf("%d B", b)
	}
	for i := len(units) - 1; i >= 0; i-- {
		m := int64(1) << (10 * (i + 1))
		if b%m == 0 {
			return fmt.Sprintf("%d %s", b/m, units[i])
		}
	}
	v, i := float64(b)/1024, 0
	for v >= 1024 && i < len(units)-1 {
		v, i = v/1024, i+1
	}
	// Exact to one decimal (268800 B is 262.5 KiB) where that is exact;
	// otherwise three significant digits.
	if t := math.Round(v * 10); t/10 == v && v >= 100 {
		return fmt.Sprintf("%.1f %s", v, units[i])
	}
	return fmt.Sprintf("%s %s", trimZeros(fmt.Sprintf("%.3g", v)), units[i])
}

func trimZeros(s string) string {
	if !strings.Contains(s, ".") || strings.Contains(s, "e") {
		return s
	}
	return strings.TrimSuffix(strings.TrimRight(s, "0"), ".")
}

// tableWidth is the width of a rendered table's widest line.
func tableWidth(rendered string) int {
	w := 0
	for _, l := range strings.Split(rendered, "\n") {
		w = max(w, utf8.RuneCountInString(l))
	}
	return w
}
