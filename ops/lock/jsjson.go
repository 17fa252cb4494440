// This file duplicates ops/repo/jsjson.go (minus jsLength): both packages
// write JSON byte-exact as JavaScript does. Keep the two in step, or move
// them to a shared internal package.

package lock

import (
	"fmt"
	"strings"
	"time"
)

// isoString formats t as JavaScript's Date.prototype.toISOString does: UTC,
// millisecond precision (truncated, as a JS Date holds whole milliseconds),
// "Z" suffix, and the six-digit signed year form outside 0000–9999.
func isoString(t time.Time) string {
	t = t.UTC()
	rest := t.Format("-01-02T15:04:05.000Z")
	y := t.Year()
	if y >= 0 && y <= 9999 {
		return fmt.Sprintf("%04d%s", y, rest)
	}
	if y < 0 {
		return fmt.Sprintf("-%06d%s", -y, rest)
	}
	return fmt.Sprintf("+%06d%s", y, rest)
}

// jsQuote writes s as JSON.stringify writes a string. It differs from
// encoding/json in what it leaves alone: JavaScript does not escape <, >, &,
// U+2028 or U+2029. Bytes that are not UTF-8 become U+FFFD, which is what a
// JavaScript reader decoding the same bytes would see.
func jsQuote(s string) string {
	var b strings.Builder
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
				fmt.Fprintf(&b, `\u%04x`, r)
			} else {
				// range yields RuneError for invalid bytes: written as U+FFFD.
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}
