package swampyaml

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// JSNumberString formats f as JavaScript's Number.prototype.toString() (and
// String(f), and JSON.stringify for finite numbers): the shortest digits that
// round-trip, in plain notation for decimal exponents in [-6, 21), otherwise
// as d.ddde±n (ECMAScript Number::toString).
func JSNumberString(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case f == 0:
		return "0" // also -0
	case f < 0:
		return "-" + JSNumberString(-f)
	}
	// Shortest round-trip digits and exponent, e.g. "1.2345e+06".
	mant, exp, _ := strings.Cut(strconv.FormatFloat(f, 'e', -1, 64), "e")
	digits := strings.Replace(mant, ".", "", 1)
	e, _ := strconv.Atoi(exp)
	k := len(digits)
	n := e + 1 // position of the decimal point relative to the digits
	switch {
	case k <= n && n <= 21:
		return digits + strings.Repeat("0", n-k)
	case 0 < n && n <= 21:
		return digits[:n] + "." + digits[n:]
	case -6 < n && n <= 0:
		return "0." + strings.Repeat("0", -n) + digits
	}
	sign := "+"
	if n-1 < 0 {
		sign = "-"
	}
	abs := n - 1
	if abs < 0 {
		abs = -abs
	}
	if k == 1 {
		return digits + "e" + sign + strconv.Itoa(abs)
	}
	return digits[:1] + "." + digits[1:] + "e" + sign + strconv.Itoa(abs)
}

var scientificWithoutDot = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[-+]?[0-9]+e`) })

// formatYAMLNumber is how stringify writes a number: an integer (int type:
// whole and not -0) as its JavaScript decimal string; any other number by
// the float type's represent, which spells the specials .nan/.inf/-.inf/-0.0
// and inserts a dot into exponent forms without one (5e-7 → 5.e-7).
func formatYAMLNumber(f float64) string {
	switch {
	case math.IsNaN(f):
		return ".nan"
	case math.IsInf(f, 1):
		return ".inf"
	case math.IsInf(f, -1):
		return "-.inf"
	case f == 0 && math.Signbit(f):
		return "-0.0"
	case f == math.Trunc(f):
		return JSNumberString(f)
	}
	s := JSNumberString(f)
	if scientificWithoutDot().MatchString(s) {
		s = strings.Replace(s, "e", ".e", 1)
	}
	return s
}
