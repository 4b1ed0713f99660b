package config

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// clipBytes is how much of an input an error message repeats: enough to
// recognise a value, not enough for a megabyte of it to fill a terminal
// (or a log).
const clipBytes = 80

// Clip returns s whole when it is short, else its first 80 bytes (whole
// characters) followed by "... (N bytes)".
func Clip(s string) string {
	if len(s) <= clipBytes {
		return s
	}
	return fmt.Sprintf("%s... (%d bytes)", head(s), len(s))
}

// head is the first clipBytes bytes of s, cut between characters.
func head(s string) string {
	n := clipBytes
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// quotedRE matches a double-quoted string as %q and the TOML library write
// one, escapes included.
var quotedRE = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)

// ClipQuoted clips every long quoted value in msg: the messages of the
// TOML library, of the names' parsers and of the flag package quote the
// value they refuse.
func ClipQuoted(msg string) string {
	if len(msg) <= clipBytes {
		return msg
	}
	return quotedRE.ReplaceAllStringFunc(msg, func(q string) string {
		inner := q[1 : len(q)-1]
		if len(inner) <= clipBytes {
			return q
		}
		h := head(inner)
		// Never end inside an escape: an odd run of backslashes would
		// escape the closing quote.
		if n := len(h) - len(strings.TrimRight(h, `\`)); n%2 == 1 {
			h = h[:len(h)-1]
		}
		return fmt.Sprintf(`"%s"... (%d bytes)`, h, len(inner))
	})
}
