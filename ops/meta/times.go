package meta

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// NowISO returns the current time as JavaScript's new Date().toISOString():
// UTC, exactly three fraction digits, `Z` — the form swamp writes into
// createdAt (swamp-format §2.4).
func NowISO() string {
	return time.Now().UTC().Format("2006-01-02T15:04:05.000Z")
}

// CatalogTime is the catalog's created_at for a metadata createdAt (swamp-format §3.4):
// new Date(createdAt).toISOString(), always YYYY-MM-DDTHH:MM:SS.sssZ. It
// accepts exactly what the metadata schema accepts (seconds optional, any
// number of fraction digits) and fails otherwise.
func CatalogTime(createdAt string) (string, error) {
	if !isDatetime(createdAt) {
		return "", invalid("createdAt", "must be an ISO-8601 UTC timestamp such as 2026-08-01T12:00:00.000Z, got %q", createdAt)
	}
	// The pattern guarantees the layout: date, 'T', HH:MM, [:SS[.fraction]], Z.
	date, clock, _ := strings.Cut(strings.TrimSuffix(createdAt, "Z"), "T")
	hhmm, seconds := clock[:5], "00"
	ms := 0
	if rest := clock[5:]; rest != "" {
		seconds = rest[1:3]
		if len(rest) > 3 {
			ms = v8Milliseconds(rest[4:])
		}
	}
	return fmt.Sprintf("%sT%s:%s.%03dZ", date, hhmm, seconds, ms), nil
}

// v8Milliseconds is how V8's date parser turns the fraction digits of an
// ISO string into milliseconds (DateParser ReadMilliseconds after
// ReadUnsignedNumeral): leading zeros are skipped, at most nine significant
// digits are kept, and the value is scaled by the digit count capped at
// nine. For up to nine digits that is plain truncation (.1234 → 123); for
// more, leading zeros are lost (.000123456789 → 123, not 0) — a V8 quirk
// reproduced on purpose, checked against node's V8.
func v8Milliseconds(fraction string) int {
	length := len(fraction)
	significant := strings.TrimLeft(fraction, "0")
	if len(significant) > 9 {
		significant = significant[:9]
	}
	n := 0
	if significant != "" {
		n, _ = strconv.Atoi(significant)
	}
	switch {
	case length == 1:
		n *= 100
	case length == 2:
		n *= 10
	case length > 3:
		length = min(length, 9)
		for ; length > 3; length-- {
			n /= 10
		}
	}
	return n
}
