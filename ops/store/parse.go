package store

import (
	"math"
	"strconv"
	"unicode"
	"unicode/utf8"
)

// parseIntJS returns what JavaScript's parseInt(s, 10) returns for s, which is
// how swamp reads both the `latest` file (§2.5) and version directory names
// (§2.7.1): leading whitespace skipped, an optional sign, then the longest run
// of ASCII digits; anything after the digits is ignored ("12abc" is 12,
// "2-old" is 2). ok is false when there are no digits (parseInt gives NaN).
//
// JavaScript numbers are doubles, so swamp itself loses precision above 2^53;
// a run of digits too large for int64 saturates at ±MaxInt64 here, which no
// real version directory can match.
func parseIntJS(s string) (n int64, ok bool) {
	i := 0
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if !isJSSpace(r) {
			break
		}
		i += size
	}
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	start := i
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == start {
		return 0, false
	}
	v, err := strconv.ParseInt(s[start:i], 10, 64)
	if err != nil { // only ErrRange is possible: the text is all digits
		v = math.MaxInt64
	}
	if neg {
		v = -v
	}
	return v, true
}

// trimJS is String.prototype.trim: it strips JavaScript whitespace and line
// terminators from both ends. swamp trims `latest` before parsing it (§2.5).
func trimJS(s string) string {
	for len(s) > 0 {
		r, size := utf8.DecodeRuneInString(s)
		if !isJSSpace(r) {
			break
		}
		s = s[size:]
	}
	for len(s) > 0 {
		r, size := utf8.DecodeLastRuneInString(s)
		if !isJSSpace(r) {
			break
		}
		s = s[:len(s)-size]
	}
	return s
}

// isJSSpace is ECMAScript's WhiteSpace or LineTerminator. It differs from
// unicode.IsSpace in two runes: U+FEFF (a BOM) is JavaScript whitespace and
// U+0085 (NEL) is not.
func isJSSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0x00A0, 0xFEFF, 0x2028, 0x2029:
		return true
	}
	return unicode.Is(unicode.Zs, r)
}

// isAllDigits is the walk classifier's /^\d+$/ (JavaScript \d is ASCII only):
// "0" and "007" qualify, "2-old" does not (§2.7.3).
func isAllDigits(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		if name[i] < '0' || name[i] > '9' {
			return false
		}
	}
	return true
}

// versionName is the canonical directory name of version v: plain decimal,
// no padding, as swamp writes it (`version.toString()`, §2.2).
func versionName(v int64) string { return strconv.FormatInt(v, 10) }
