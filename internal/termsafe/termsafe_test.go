package termsafe

import (
	"bytes"
	"fmt"
	"testing"
)

func TestEscapes(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"plain host-1 µs", "plain host-1 µs"},
		{"\x1b]0;owned\x07", `\x1b]0;owned\x07`},
		{"FAILED\rheld  ", `FAILED\rheld  `},
		{"a\nb\tc", `a\nb\tc`},
		{"\u009b31m", `\x9b31m`},
		{"abc\u202edef", `abc\u202edef`},
		{"bad \xff byte", `bad \xff byte`},
	} {
		if got := String(c.in); got != c.want {
			t.Errorf("String(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	var b bytes.Buffer
	fmt.Fprintf(NewWriter(NewWriter(&b)), "line one \x1b[2J\nline\ttwo\r\n")
	if want := "line one \\x1b[2J\nline\ttwo\\r\n"; b.String() != want {
		t.Errorf("Writer wrote %q, want %q", b.String(), want)
	}
}
