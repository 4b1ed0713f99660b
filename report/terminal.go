package report

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
	"unicode/utf8"

	"rsag/coll"
)

// TerminalWidth is the widest line rsag prints: a person's terminal, or a
// job log read in an editor split beside the code. Every table is built
// to fit it (foldTable), and the terminal writer folds prose that does not.
const TerminalWidth = 120

// Terminal is rank 0's terminal: it folds every line of prose wider than
// TerminalWidth at word boundaries, the rest indented, so that a note or
// a progress line stays readable however long its names. Table lines
// (they start with '+' or '|') are left alone: a table folds by design, not
// mid-row. It folds the lines that a single Write completes; what follows
// a Write that ended mid-line is passed on as it is. Safe for concurrent
// use.
func Terminal(w io.Writer) io.Writer { return &terminal{w: w} }

type terminal struct {
	mu      sync.Mutex
	w       io.Writer
	midLine bool // the last Write ended without a newline
}

func (t *terminal) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out bytes.Buffer
	rest := p
	for len(rest) > 0 {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			out.Write(rest)
			t.midLine = true
			break
		}
		line := string(rest[:i])
		if t.midLine {
			out.WriteString(line)
		} else {
			out.WriteString(FoldLine(line, TerminalWidth))
		}
		out.WriteByte('\n')
		t.midLine = false
		rest = rest[i+1:]
	}
	if _, err := t.w.Write(out.Bytes()); err != nil {
		return 0, err
	}
	return len(p), nil
}

// FoldLine folds one line of prose to width columns at spaces, each
// continuation indented two columns past the line's own indentation;
// a word longer than the width stays whole. A table line ('+' or '|'
// first) is returned as it is.
func FoldLine(line string, width int) string {
	if utf8.RuneCountInString(line) <= width || strings.HasPrefix(line, "+") || strings.HasPrefix(line, "|") {
		return line
	}
	trimmed := strings.TrimLeft(line, " ")
	indent := strings.Repeat(" ", len(line)-len(trimmed)+2)
	var b strings.Builder
	col := 0
	first := true
	for _, word := range strings.Fields(trimmed) {
		n := utf8.RuneCountInString(word)
		switch {
		case first:
			b.WriteString(line[:len(line)-len(trimmed)])
			col = len(line) - len(trimmed)
			first = false
		case col+1+n > width:
			b.WriteString("\n" + indent)
			col = len(indent)
		default:
			b.WriteByte(' ')
			col++
		}
		b.WriteString(word)
		col += n
	}
	return b.String()
}

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
