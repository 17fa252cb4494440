package store

import (
	"strconv"
	"unicode"
	"unicode/utf8"
)

// MaxVersion is Number.MAX_SAFE_INTEGER (2^53-1), the largest version swamp's
// metadata schema accepts (zod's int()) and the largest integer a JavaScript
// number holds exactly.
const MaxVersion = 1<<53 - 1

// parseIntJS returns what JavaScript's parseInt(s, 10) returns for s, which is
// how swamp reads both the `latest` file (swamp-format §2.5) and version directory names
// (swamp-format §2.7.1): leading whitespace skipped, an optional sign, then the longest run
// of ASCII digits; anything after the digits is ignored ("12abc" is 12,
// "2-old" is 2). ok is false when there are no digits (parseInt gives NaN)
// and also when the number is beyond ±MaxVersion: swamp reads such a number
// inexactly (a double) and no version can carry it, so it is never taken for
// a version number, and never clamped to one. parseIntJSText tells the two
// apart.
func parseIntJS(s string) (n int64, ok bool) {
	n, _, ok, big := parseIntJSText(s)
	return n, ok && !big
}

// parseIntJSText is parseIntJS that also returns the sign and digits it read
// and, in big, whether they are beyond ±MaxVersion (n is then 0).
func parseIntJSText(s string) (n int64, text string, ok, big bool) {
	i := 0
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if !isJSSpace(r) {
			break
		}
		i += size
	}
	from := i
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
		return 0, "", false, false
	}
	text = s[from:i]
	v, err := strconv.ParseInt(s[start:i], 10, 64)
	if err != nil || v > MaxVersion { // ErrRange is the only error: the text is all digits
		return 0, text, true, true
	}
	if neg {
		v = -v
	}
	return v, text, true, false
}

// trimJS is String.prototype.trim: it strips JavaScript whitespace and line
// terminators from both ends. swamp trims `latest` before parsing it (swamp-format §2.5).
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
// "0" and "007" qualify, "2-old" does not (swamp-format §2.7.3).
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
// no padding, as swamp writes it (`version.toString()`, swamp-format §2.2).
func versionName(v int64) string { return strconv.FormatInt(v, 10) }
