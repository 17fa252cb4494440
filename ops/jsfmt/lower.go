package jsfmt

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// ToLower is JavaScript's String.prototype.toLowerCase, which swamp applies
// to model types (ModelType normalisation) and to data names (the reserved
// `latest`): Unicode default case conversion without a locale. It differs
// from strings.ToLower in three ways:
//
//   - full mappings from SpecialCasing.txt: İ (U+0130) becomes "i̇" (i and
//     U+0307), not "i";
//   - the Final_Sigma rule: Σ (U+03A3) becomes ς (U+03C2) when a cased
//     letter precedes it and none follows it (case-ignorable characters
//     such as "'", "." and combining marks skipped), else σ;
//   - the Unicode version: the JavaScript engine swamp runs on (Deno 2.9,
//     ICU with Unicode 16) knows case pairs that Go's tables (Unicode 15.0)
//     do not; lowerExtra and the property tables below add them, so that
//     the results agree for every code point (checked against deno by
//     TestToLowerMatchesDeno's table, and once over all of Unicode).
//
// Language-specific rules (Turkish dotless i, Lithuanian) are not applied,
// as toLowerCase does not apply them. Bytes that are not UTF-8 are kept.
func ToLower(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return strings.ToLower(s)
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteByte(s[i])
		case r == 0x130:
			b.WriteString("i\u0307")
		case r == 0x3a3:
			if finalSigma(s, i, i+size) {
				b.WriteRune(0x3c2)
			} else {
				b.WriteRune(0x3c3)
			}
		default:
			b.WriteRune(lowerRune(r))
		}
		i += size
	}
	return b.String()
}

// lowerRune is the simple lowercase mapping of r, Unicode 16.
func lowerRune(r rune) rune {
	if l, ok := lowerExtra[r]; ok {
		return l
	}
	if 0x10d50 <= r && r <= 0x10d65 { // Garay capital letters (Unicode 16)
		return r + 0x20
	}
	return unicode.ToLower(r)
}

// lowerExtra holds the Unicode 16 lowercase mappings Go 1.26's tables
// (Unicode 15.0) lack, besides the Garay range in lowerRune.
var lowerExtra = map[rune]rune{
	0x1c89: 0x1c8a, // CYRILLIC CAPITAL LETTER TJE
	0xa7cb: 0x0264, // LATIN CAPITAL LETTER RAMS HORN
	0xa7cc: 0xa7cd, // LATIN CAPITAL LETTER S WITH DIAGONAL STROKE
	0xa7da: 0xa7db, // LATIN CAPITAL LETTER LAMBDA
	0xa7dc: 0x019b, // LATIN CAPITAL LETTER LAMBDA WITH STROKE
}

// finalSigma is Unicode's Final_Sigma condition for the Σ at s[start:end]:
// before it, skipping case-ignorable characters, a cased one; after it,
// skipping case-ignorable characters, no cased one. As in ICU, a character
// that is both case-ignorable and cased (a modifier letter such as ʰ) is
// skipped.
func finalSigma(s string, start, end int) bool {
	before := false
	for i := start; i > 0; {
		r, size := utf8.DecodeLastRuneInString(s[:i])
		i -= size
		if caseIgnorable(r) {
			continue
		}
		before = cased(r)
		break
	}
	if !before {
		return false
	}
	for i := end; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if caseIgnorable(r) {
			continue
		}
		return !cased(r)
	}
	return true
}

// cased is the Cased property (Lowercase, Uppercase or Lt), Unicode 16.
func cased(r rune) bool {
	return unicode.In(r, unicode.Lu, unicode.Ll, unicode.Lt, unicode.Other_Lowercase, unicode.Other_Uppercase, casedExtra)
}

// caseIgnorable is the Case_Ignorable property, Unicode 16: Mn, Me, Cf, Lm,
// Sk and the Word_Break classes MidLetter, MidNumLet and Single_Quote.
func caseIgnorable(r rune) bool {
	switch r {
	case '\'', '.', ':', 0xb7, 0x387, 0x55f, 0x5f4, 0x2018, 0x2019, 0x2024, 0x2027,
		0xfe13, 0xfe52, 0xfe55, 0xff07, 0xff0e, 0xff1a:
		return true
	case 0x1171e: // AHOM CONSONANT SIGN MEDIAL RA: Mn in 15.0, Mc in 16
		return false
	}
	return unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf, unicode.Lm, unicode.Sk, ignorableExtra)
}

// casedExtra and ignorableExtra are what Unicode 16 adds to Cased and
// Case_Ignorable over Go's Unicode 15.0 tables (from deno's \p{Cased} and
// \p{Case_Ignorable}).
var casedExtra = &unicode.RangeTable{
	R16: []unicode.Range16{{Lo: 0x1c89, Hi: 0x1c8a, Stride: 1}, {Lo: 0xa7cb, Hi: 0xa7cd, Stride: 1}, {Lo: 0xa7da, Hi: 0xa7dc, Stride: 1}},
	R32: []unicode.Range32{{Lo: 0x10d50, Hi: 0x10d65, Stride: 1}, {Lo: 0x10d70, Hi: 0x10d85, Stride: 1}},
}

var ignorableExtra = &unicode.RangeTable{
	R16: []unicode.Range16{{Lo: 0x0897, Hi: 0x0897, Stride: 1}},
	R32: []unicode.Range32{
		{Lo: 0x10d4e, Hi: 0x10d4e, Stride: 1}, {Lo: 0x10d69, Hi: 0x10d6d, Stride: 1}, {Lo: 0x10d6f, Hi: 0x10d6f, Stride: 1},
		{Lo: 0x10efc, Hi: 0x10efc, Stride: 1}, {Lo: 0x113bb, Hi: 0x113c0, Stride: 1}, {Lo: 0x113ce, Hi: 0x113ce, Stride: 1},
		{Lo: 0x113d0, Hi: 0x113d0, Stride: 1}, {Lo: 0x113d2, Hi: 0x113d2, Stride: 1}, {Lo: 0x113e1, Hi: 0x113e2, Stride: 1},
		{Lo: 0x11f5a, Hi: 0x11f5a, Stride: 1}, {Lo: 0x1611e, Hi: 0x16129, Stride: 1}, {Lo: 0x1612d, Hi: 0x1612f, Stride: 1},
		{Lo: 0x16d40, Hi: 0x16d42, Stride: 1}, {Lo: 0x16d6b, Hi: 0x16d6c, Stride: 1}, {Lo: 0x1e5ee, Hi: 0x1e5ef, Stride: 1},
	},
}
