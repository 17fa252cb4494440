// Package jsfmt writes values the way JavaScript does. swamp is a Deno
// program, so every JSON file it writes (locks, namespace manifests, the
// catalog's tags column) and every timestamp it stores carries JavaScript's
// formatting; files swampj writes must match byte for byte.
package jsfmt

import (
	"crypto/rand"
	"fmt"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

// ISOString formats t as Date.prototype.toISOString does: UTC, millisecond
// precision (truncated, as a JS Date holds whole milliseconds), "Z", and the
// six-digit signed year form outside 0000–9999.
func ISOString(t time.Time) string {
	t = t.UTC()
	rest := t.Format("-01-02T15:04:05.000Z")
	switch y := t.Year(); {
	case y >= 0 && y <= 9999:
		return fmt.Sprintf("%04d%s", y, rest)
	case y < 0:
		return fmt.Sprintf("-%06d%s", -y, rest)
	default:
		return fmt.Sprintf("+%06d%s", y, rest)
	}
}

// Quote returns s as JSON.stringify writes a string. It differs from
// encoding/json in what it leaves alone: JavaScript does not escape <, >, &,
// U+2028 or U+2029. Bytes that are not UTF-8 become U+FFFD, which is what a
// JavaScript reader decoding the same bytes would see.
func Quote(s string) string {
	var b strings.Builder
	WriteQuoted(&b, s)
	return b.String()
}

// WriteQuoted appends Quote(s) to b.
func WriteQuoted(b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if r < 0x20 {
				fmt.Fprintf(b, `\u%04x`, r)
			} else {
				// range yields RuneError for invalid bytes: written as U+FFFD.
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
}

// Length is String.prototype.length: the number of UTF-16 code units.
func Length(s string) int {
	n := 0
	for _, r := range s {
		if r == utf8.RuneError {
			n++
			continue
		}
		n += utf16.RuneLen(r)
	}
	return n
}

// RandomUUID is crypto.randomUUID(): a random version-4 UUID in lower case,
// the form swamp gives data ids, lock nonces and repo ids.
func RandomUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
