// Package fold keeps what rsag prints for a person within a terminal's
// width (issue 57): a line longer than Width is folded at spaces, at its
// clauses ("; ") where they fit, each continuation indented two columns
// past the line's own indentation. Only the terminal's copy is folded:
// run.json, summary.json, junit.xml, rsag.prom and the history keep a
// message on one line, and Unfold gives a folded text's lines back.
package fold

import (
	"bytes"
	"io"
	"strings"
	"sync"
	"unicode/utf8"
)

// Width is the widest line rsag prints: a person's terminal, or a job log
// read in an editor split beside the code.
const Width = 120

// step is the indentation a continuation adds to its line's own.
const step = "  "

// Line folds line (one line, no newline) into lines of at most width
// columns. It breaks only at a single space between two words, so Unfold
// gives the line back byte for byte. A clause that fits on a line of its
// own is not split: it goes whole onto the next line when the current one
// cannot hold it; a longer clause starts a line of its own and breaks at
// its words. A word longer than the width (a long path) stays whole on a
// line of its own. A line within the width is returned as it is.
func Line(line string, width int) string {
	if utf8.RuneCountInString(line) <= width {
		return line
	}
	body := strings.TrimLeft(line, " ")
	lead := line[:len(line)-len(body)]
	indent := lead + step
	var lines []string
	cur, col, fresh := lead, len(lead), true // fresh: cur holds no word yet
	newLine := func() {
		if !fresh {
			lines = append(lines, cur)
			cur, col, fresh = indent, len(indent), true
		}
	}
	for _, clause := range clauses(words(body)) {
		// A clause that fits a line of its own is not split; a longer one
		// starts a line of its own.
		if n := clauseWidth(clause); n+len(indent) > width || col+1+n > width {
			newLine()
		}
		for _, w := range clause {
			n := utf8.RuneCountInString(w)
			switch {
			case fresh:
				cur, col, fresh = cur+w, col+n, false
			case col+1+n <= width:
				cur, col = cur+" "+w, col+1+n
			default:
				newLine()
				cur, col, fresh = cur+w, col+n, false
			}
		}
	}
	return strings.Join(append(lines, cur), "\n")
}

// words splits s at the spaces Line may break at: a single space between
// two other characters. Runs of spaces stay inside a word.
func words(s string) []string {
	var out []string
	start := 0
	for i := 1; i < len(s)-1; i++ {
		if s[i] == ' ' && s[i-1] != ' ' && s[i+1] != ' ' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// clauses groups words into clauses, each ending with a word that ends
// with ";" (or with the line).
func clauses(ws []string) [][]string {
	var out [][]string
	start := 0
	for i, w := range ws {
		if strings.HasSuffix(w, ";") || i == len(ws)-1 {
			out = append(out, ws[start:i+1])
			start = i + 1
		}
	}
	return out
}

// clauseWidth is a clause's width on one line.
func clauseWidth(ws []string) int {
	n := len(ws) - 1
	for _, w := range ws {
		n += utf8.RuneCountInString(w)
	}
	return n
}

// Unfold gives back the lines Line folded at width: a line indented two
// columns past the line before it joins that line, with one space, where
// Line would have broken there (the line before ends a clause, or could
// not hold the continuation's first word). Lines that Line did not make,
// such as a launcher's indented list, are left as they are.
func Unfold(text string, width int) string {
	lines := strings.Split(text, "\n")
	var out []string
	lead := "" // the indentation of the line being rebuilt
	prev := "" // its last physical line
	for i, l := range lines {
		if i > 0 && continues(prev, l, lead+step, width) {
			out[len(out)-1] += " " + l[len(lead+step):]
			prev = l
			continue
		}
		out = append(out, l)
		lead = l[:len(l)-len(strings.TrimLeft(l, " "))]
		prev = l
	}
	return strings.Join(out, "\n")
}

// continues says whether l is a continuation Line made of prev: indented
// by indent exactly, and prev ended where Line would end a line.
func continues(prev, l, indent string, width int) bool {
	if prev == "" || !strings.HasPrefix(l, indent) || len(l) == len(indent) || l[len(indent)] == ' ' {
		return false
	}
	if strings.HasSuffix(prev, ";") {
		return true
	}
	first := words(l[len(indent):])[0]
	return utf8.RuneCountInString(prev)+1+utf8.RuneCountInString(first) > width
}

// NewWriter wraps w, once: every line a Write completes is folded with
// Line at Width; what follows a Write that ended mid-line is passed on as
// it is. Safe for concurrent use.
func NewWriter(w io.Writer) io.Writer { return NewWriterKeeping(w, nil) }

// NewWriterKeeping is NewWriter that passes the lines keep says are laid
// out already (a table's rows) as they are.
func NewWriterKeeping(w io.Writer, keep func(line string) bool) io.Writer {
	if fw, ok := w.(*writer); ok && keep == nil {
		return fw
	}
	return &writer{w: w, keep: keep}
}

type writer struct {
	mu      sync.Mutex
	w       io.Writer
	keep    func(string) bool
	midLine bool // the last Write ended without a newline
}

func (t *writer) Write(p []byte) (int, error) {
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
		if t.midLine || (t.keep != nil && t.keep(line)) {
			out.WriteString(line)
		} else {
			out.WriteString(Line(line, Width))
		}
		out.WriteByte('\n')
		t.midLine = false
		rest = rest[i+1:]
	}
	// One Write for the whole of it: a folded message reaches the
	// launcher's pipe at once, not interleaved with another rank's lines.
	if _, err := t.w.Write(out.Bytes()); err != nil {
		return 0, err
	}
	return len(p), nil
}
