// Package termsafe is the one path by which text that came from a file
// (summary.json, run.json, a host name another rank sent) reaches a
// terminal. A string in a file can hold ESC, BEL or CR: printed raw, it can
// retitle the window, ring the bell, move the cursor or overwrite a printed
// FAILED. Here every such character is written as a visible escape
// (\x1b, \r, \u202e) instead, so that what the terminal shows is what the
// file holds.
package termsafe

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// unsafe reports whether r must not reach a terminal as it is: the C0
// controls but newline and tab, DEL, the C1 controls (which some
// terminals take as ESC sequences) and the Unicode controls that reorder
// or break what is shown (bidirectional overrides and isolates, line and
// paragraph separators).
func unsafe(r rune) bool {
	switch {
	case r == '\n' || r == '\t':
		return false
	case r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f):
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x2028, r == 0x2029, r == 0x200e, r == 0x200f:
		return true
	}
	return false
}

func escape(b *strings.Builder, r rune) {
	switch {
	case r == '\r':
		b.WriteString(`\r`)
	case r < 0x100:
		fmt.Fprintf(b, `\x%02x`, r)
	default:
		fmt.Fprintf(b, `\u%04x`, r)
	}
}

// String is s with every character that is unsafe on a terminal, and every
// byte that is not UTF-8, written as an escape; newlines and tabs too,
// since a string from a file is shown on one line of a table.
func String(s string) string {
	if clean(s, false) {
		return s
	}
	return escapeAll(s, false)
}

// clean reports whether s needs no escape; keepLines lets newline and tab
// through (a writer's whole output), else they are escaped too.
func clean(s string, keepLines bool) bool {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n == 1) || unsafe(r) || (!keepLines && (r == '\n' || r == '\t')) {
			return false
		}
		i += n
	}
	return true
}

func escapeAll(s string, keepLines bool) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unsafe(r) || (!keepLines && (r == '\n' || r == '\t')):
			if r == '\n' {
				b.WriteString(`\n`)
			} else if r == '\t' {
				b.WriteString(`\t`)
			} else {
				escape(&b, r)
			}
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// Writer writes what it is given to W with every unsafe character escaped
// (newlines and tabs pass: they are the output's own). A rune split across
// two writes is escaped byte by byte; rsag writes whole lines.
type Writer struct{ W io.Writer }

// NewWriter wraps w, once: a Writer is not wrapped again.
func NewWriter(w io.Writer) io.Writer {
	if _, ok := w.(Writer); ok {
		return w
	}
	return Writer{W: w}
}

func (w Writer) Write(p []byte) (int, error) {
	s := string(p)
	if clean(s, true) {
		return w.W.Write(p)
	}
	if _, err := io.WriteString(w.W, escapeAll(s, true)); err != nil {
		return 0, err
	}
	return len(p), nil
}
