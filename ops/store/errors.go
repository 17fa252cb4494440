package store

import (
	"errors"
	"fmt"
	"strings"

	"github.com/swampj/swampj"
)

// ErrInvalidVersion is returned when a version number is not positive.
var ErrInvalidVersion = errors.New("store: version number must be positive")

// UnreadableError is returned by ReadContent for a version that swamp could
// not serve: `data get` must say so, never print empty output (#3955).
type UnreadableError struct {
	// Path is the version directory.
	Path     string
	Problems []Problem
}

// Code is "unreadable_version".
func (e *UnreadableError) Code() string        { return "unreadable_version" }
func (e *UnreadableError) Class() swampj.Class { return swampj.ClassFailed }

func (e *UnreadableError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "store: %s is unreadable", e.Path)
	for i, p := range e.Problems {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		b.WriteString(p.Message)
	}
	return b.String()
}

// Has reports whether the error lists a problem with the given code.
func (e *UnreadableError) Has(code Code) bool {
	for _, p := range e.Problems {
		if p.Code == code {
			return true
		}
	}
	return false
}
