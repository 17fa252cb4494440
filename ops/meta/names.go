package meta

import (
	"strings"
	"unicode"
)

// NormalizeType turns a model type into the relative directory path swamp
// stores its data under (§2.2, ModelType.create + normalize): trim; lower
// case; `::` → `/`; each whitespace run → `/`; `.` → `/`; repeated `/`
// collapsed; one leading and one trailing `/` removed. So `AWS::EC2::VPC` →
// `aws/ec2/vpc`, `@myorg/foo-bar` stays, and a single `:` is kept. An empty
// result means swamp would refuse the type ("cannot be empty" /
// "normalization resulted in empty string").
func NormalizeType(s string) string {
	s = strings.TrimFunc(s, jsIsSpace)
	s = jsToLower(s)
	s = strings.ReplaceAll(s, "::", "/")
	s = replaceSpaceRuns(s)
	s = strings.ReplaceAll(s, ".", "/")
	for strings.Contains(s, "//") {
		s = strings.ReplaceAll(s, "//", "/")
	}
	s = strings.TrimPrefix(s, "/")
	s = strings.TrimSuffix(s, "/")
	return s
}

// replaceSpaceRuns is .replace(/\s+/g, "/").
func replaceSpaceRuns(s string) string {
	var b strings.Builder
	inRun := false
	for _, r := range s {
		if jsIsSpace(r) {
			if !inRun {
				b.WriteByte('/')
			}
			inRun = true
			continue
		}
		inRun = false
		b.WriteRune(r)
	}
	return b.String()
}

// jsIsSpace is JavaScript's \s and String.prototype.trim set (WhiteSpace and
// LineTerminator). It differs from unicode.IsSpace: U+FEFF is in, U+0085 is
// out.
func jsIsSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0xa0, 0x1680, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000, 0xfeff:
		return true
	}
	return 0x2000 <= r && r <= 0x200a
}

// jsToLower is String.prototype.toLowerCase: Go's per-rune mapping plus
// the two SpecialCasing rules JavaScript applies without a locale — İ → i̇,
// and Σ → ς at the end of a word (Final_Sigma). Unicode version differences
// between Go and the JavaScript engine aside, the results agree.
func jsToLower(s string) string {
	if !strings.ContainsAny(s, "\u0130\u03a3") {
		return strings.Map(unicode.ToLower, s)
	}
	runes := []rune(s)
	var b strings.Builder
	for i, r := range runes {
		switch {
		case r == 0x130:
			b.WriteString("i\u0307")
		case r == 0x3a3 && isFinalSigma(runes, i):
			b.WriteRune(0x3c2)
		default:
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

// isFinalSigma is Unicode's Final_Sigma condition for runes[i]: a cased
// letter before it (skipping case-ignorables) and none after it.
func isFinalSigma(runes []rune, i int) bool {
	before := false
	for j := i - 1; j >= 0; j-- {
		if isCaseIgnorable(runes[j]) {
			continue
		}
		before = isCased(runes[j])
		break
	}
	if !before {
		return false
	}
	for j := i + 1; j < len(runes); j++ {
		if isCaseIgnorable(runes[j]) {
			continue
		}
		return !isCased(runes[j])
	}
	return true
}

func isCased(r rune) bool {
	return unicode.In(r, unicode.Lu, unicode.Ll, unicode.Lt, unicode.Other_Lowercase, unicode.Other_Uppercase)
}

// isCaseIgnorable is Unicode's Case_Ignorable: Mn, Me, Cf, Lm, Sk and the
// Word_Break classes MidLetter, MidNumLet and Single_Quote.
func isCaseIgnorable(r rune) bool {
	switch r {
	case '\'', '.', ':', 0xb7, 0x387, 0x55f, 0x5f4, 0x2018, 0x2019, 0x2024, 0x2027,
		0xfe13, 0xfe52, 0xfe55, 0xff07, 0xff0e, 0xff1a:
		return true
	}
	return unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf, unicode.Lm, unicode.Sk)
}
