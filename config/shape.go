package config

import "fmt"

// The bounds on a document's shape, checked by checkShape before the TOML
// decoder sees it: the decoder's time and memory grow faster than the
// nesting (5,000 inline tables within each other, 20 KB, took it over 120 s
// and 1.4 GB), so a small file must not decide how much a node spends on
// reading it. Each bound is far above any real config: ch7's nests 3 deep
// ([[run]], a key, a list) and the largest, 64 [[run]] tables of every key
// with 64 sizes each, has about 1,200 keys and 5,000 values.
const (
	// MaxDepth bounds the nesting: each part of a table header or a dotted
	// key, each inline table and each array is one level.
	MaxDepth = 32
	// MaxKeys bounds the keys, each part of a dotted key or header counted.
	MaxKeys = 10_000
	// MaxValues bounds the values: every number, string, boolean, date,
	// array and inline table, each element of an array counted.
	MaxValues = 100_000
)

// checkShape scans a TOML document's bytes once, without decoding them,
// and refuses one that nests deeper than MaxDepth or holds more than
// MaxKeys keys or MaxValues values. The scan follows TOML's strings and
// comments, so that brackets inside them are not counted; on a document
// that is not TOML it may count more than the decoder would see, never less
// before the first place the decoder refuses.
func checkShape(source, text string) error {
	s := shapeScanner{src: text, line: 1}
	s.document()
	if s.err == "" {
		return nil
	}
	return &Error{Source: source, Msg: fmt.Sprintf("line %d: %s", s.errLine, s.err)}
}

type shapeScanner struct {
	src          string
	i            int
	line         int
	header       int // levels of the current [table] or [[table]] header
	keys, values int
	err          string // the first bound passed
	errLine      int
}

func (s *shapeScanner) fail(format string, args ...any) {
	if s.err == "" {
		s.err, s.errLine = fmt.Sprintf(format, args...), s.line
	}
	s.i = len(s.src) // stop
}

func (s *shapeScanner) done() bool { return s.i >= len(s.src) }
func (s *shapeScanner) peek() byte { return s.src[s.i] }

// level refuses a depth past MaxDepth.
func (s *shapeScanner) level(depth int) bool {
	if depth > MaxDepth {
		s.fail("nests %d levels deep, above rsag's bound of %d (each part of a table header or dotted key, each inline table and each array is a level): no config needs more than a few; flatten it", depth, MaxDepth)
		return false
	}
	return true
}

func (s *shapeScanner) countKeys(n int) bool {
	if s.keys += n; s.keys > MaxKeys {
		s.fail("holds more than %d keys (each part of a dotted key or table header counted), rsag's bound: a config has a few dozen; is it the config?", MaxKeys)
		return false
	}
	return true
}

func (s *shapeScanner) countValue() bool {
	if s.values++; s.values > MaxValues {
		s.fail("holds more than %d values (each element of an array counted), rsag's bound: a config has a few hundred; is it the config?", MaxValues)
		return false
	}
	return true
}

// document scans statements: headers, key/value pairs, comments.
func (s *shapeScanner) document() {
	for !s.done() {
		s.blanks(true)
		if s.done() {
			return
		}
		switch s.peek() {
		case '[':
			s.i++
			if !s.done() && s.peek() == '[' {
				s.i++
			}
			parts := s.key(']')
			s.header = parts
			if !s.countKeys(parts) || !s.level(parts) {
				return
			}
			for !s.done() && s.peek() == ']' {
				s.i++
			}
		default:
			s.pair(s.header)
		}
		s.restOfLine()
	}
}

// pair scans key = value at the given depth of its table.
func (s *shapeScanner) pair(depth int) {
	start := s.i
	parts := s.key('=')
	if !s.countKeys(parts) || !s.level(depth+parts) {
		return
	}
	if !s.done() && s.peek() == '=' {
		s.i++
		s.value(depth + parts)
	} else if s.i == start && !s.done() {
		s.i++ // not a key: step over it (the decoder refuses it)
	}
}

// key scans a key, bare, quoted or dotted, up to stop, '=' or the end of
// the line, and returns its number of parts.
func (s *shapeScanner) key(stop byte) int {
	parts := 0
	for {
		s.blanks(false)
		if s.done() {
			return parts
		}
		switch c := s.peek(); c {
		case '"', '\'':
			s.str()
			parts++
		case stop, '=', '\n', '#', '.':
		default:
			for !s.done() && !isKeyEnd(s.peek()) {
				s.i++
			}
			parts++
		}
		s.blanks(false)
		if s.done() || s.peek() != '.' {
			return parts
		}
		s.i++
	}
}

func isKeyEnd(c byte) bool {
	switch c {
	case ' ', '\t', '\r', '\n', '.', '=', '[', ']', '{', '}', '"', '\'', '#', ',':
		return true
	}
	return false
}

// value scans one value at depth (its key's); arrays and inline tables
// recurse, each a level deeper, so the recursion is at most MaxDepth deep.
func (s *shapeScanner) value(depth int) {
	s.blanks(false)
	if s.done() || !s.countValue() {
		return
	}
	switch s.peek() {
	case '"', '\'':
		s.str()
	case '[':
		s.i++
		if !s.level(depth + 1) {
			return
		}
		s.container(']', func() { s.value(depth + 1) })
	case '{':
		s.i++
		if !s.level(depth + 1) {
			return
		}
		s.container('}', func() { s.pair(depth + 1) })
	default:
		// A number, boolean or date: up to what ends a value. A date's
		// space makes its time a second "value": counted, harmless.
		start := s.i
		for !s.done() && !isValueEnd(s.peek()) {
			s.i++
		}
		if s.i == start && s.peek() != '\n' {
			s.i++ // a stray '=' or '}': step over it (the decoder refuses it)
		}
	}
}

func isValueEnd(c byte) bool {
	switch c {
	case ' ', '\t', '\r', '\n', ',', '[', ']', '{', '}', '"', '\'', '#', '=':
		return true
	}
	return false
}

// container scans the elements of an array or inline table up to end,
// across lines and comments (TOML 1.1 allows both in inline tables).
func (s *shapeScanner) container(end byte, element func()) {
	for {
		s.blanks(true)
		if s.done() {
			return
		}
		switch s.peek() {
		case end:
			s.i++
			return
		case ',':
			s.i++
		default:
			before := s.i
			element()
			if s.i == before && !s.done() {
				s.i++
			}
		}
	}
}

// blanks skips spaces and tabs, and with lines also newlines and comments.
func (s *shapeScanner) blanks(lines bool) {
	for !s.done() {
		switch s.peek() {
		case ' ', '\t', '\r':
			s.i++
		case '\n':
			if !lines {
				return
			}
			s.line++
			s.i++
		case '#':
			if !lines {
				return
			}
			s.restOfLine()
		default:
			return
		}
	}
}

// restOfLine skips to the next line: what is left after a statement is a
// comment or, in a document the decoder refuses, anything.
func (s *shapeScanner) restOfLine() {
	for !s.done() && s.peek() != '\n' {
		s.i++
	}
}

// str scans a string: basic ("..."), literal ('...') or either's
// multi-line form, whose closing quotes may be followed by up to two more
// of the string's own.
func (s *shapeScanner) str() {
	q := s.peek()
	multi := len(s.src)-s.i >= 3 && s.src[s.i+1] == q && s.src[s.i+2] == q
	if multi {
		s.i += 3
	} else {
		s.i++
	}
	for !s.done() {
		c := s.peek()
		switch {
		case c == '\\' && q == '"':
			s.i++
			if !s.done() && s.peek() == '\n' {
				s.line++
			}
			s.i++
		case c == '\n':
			if !multi {
				return // a single-line string does not cross lines
			}
			s.line++
			s.i++
		case c == q && !multi:
			s.i++
			return
		case c == q && len(s.src)-s.i >= 3 && s.src[s.i+1] == q && s.src[s.i+2] == q:
			s.i += 3
			for k := 0; k < 2 && !s.done() && s.peek() == q; k++ {
				s.i++
			}
			return
		default:
			s.i++
		}
	}
}
