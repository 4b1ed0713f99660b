// Package exitcode is how a subcommand of rsag says its exit status without
// exiting: it returns an *Error, and main alone turns it into os.Exit (the
// shape of vegeta's main.go: each command a function that returns an error).
package exitcode

import (
	"errors"
	"fmt"
	"io"
)

// Error is a command's failure and the exit status it asks for. Err is what
// main prints after the command's name; nil when the command has already
// said all it had to say (a failed comparison prints its own verdict).
type Error struct {
	Code int
	Err  error
}

func (e *Error) Error() string {
	if e.Err == nil {
		return ""
	}
	return e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// New is err with exit status code; nil when code is 0.
func New(code int, err error) error {
	if code == 0 {
		return nil
	}
	return &Error{Code: code, Err: err}
}

// Silent is exit status code with nothing more to say; nil when code is 0.
func Silent(code int) error { return New(code, nil) }

// Of is the exit status err asks for: 0 for nil, an *Error's code, else 1;
// and whether there is a message to print.
func Of(err error) (code int, say bool) {
	if err == nil {
		return 0, false
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code, e.Err != nil
	}
	return 1, true
}

// Say prints err's message, if it has one, after name ("rsag compare:
// ..."), and returns its exit status: what main does with a command's
// error, and what a command's tests do to see it as a user would.
func Say(stderr io.Writer, name string, err error) int {
	code, say := Of(err)
	if say {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
	}
	return code
}
