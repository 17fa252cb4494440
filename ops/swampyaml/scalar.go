package swampyaml

import (
	"fmt"
	"strings"
)

// This file is @std/yaml 1.1.0's string scalar writer (_dumper_state.ts
// stringifyScalar, chooseScalarStyle, foldString, escapeString), ported
// literally; swamp-format §2.4.1 summarises it.
//
// JavaScript measures strings in UTF-16 code units. The port walks runes
// instead, which gives the same answers: an astral character is two
// surrogate code units, neither of them "printable", so any string holding
// one is written double-quoted before a length or an index matters; every
// other string has exactly one code unit per rune.

type scalarStyle int

const (
	stylePlain scalarStyle = iota + 1
	styleSingle
	styleLiteral
	styleFolded
	styleDouble
)

const (
	indentPerLevel = 2  // stringify's default indent
	lineWidthLimit = 80 // stringify's default lineWidth
)

// isPrintable is _dumper_state.ts isPrintable applied to a UTF-16 code unit;
// astral runes stand for their (unprintable) surrogates.
func isPrintable(c rune) bool {
	return (0x20 <= c && c <= 0x7e) ||
		(0xa1 <= c && c <= 0xd7ff && c != 0x2028 && c != 0x2029) ||
		(0xe000 <= c && c <= 0xfffd && c != 0xfeff)
}

func isWhiteSpace(c rune) bool { return c == ' ' || c == '\t' }

// isPlainSafe: allowed after the first character of a plain scalar
// (swamp-format §2.4.1 rule 5: none of `: , [ ] { } #`).
func isPlainSafe(c rune) bool {
	if !isPrintable(c) {
		return false
	}
	switch c {
	case ',', '[', ']', '{', '}', ':', '#':
		return false
	}
	return true
}

// isPlainSafeFirst: allowed as the first character (swamp-format §2.4.1 rule 4).
func isPlainSafeFirst(c rune) bool {
	if !isPrintable(c) || isWhiteSpace(c) {
		return false
	}
	switch c {
	case '-', '?', ':', ',', '[', ']', '{', '}', '#', '&', '*', '!', '|', '>',
		'\'', '"', '%', '@', '`':
		return false
	}
	return true
}

// chooseScalarStyle is _dumper_state.ts chooseScalarStyle with the
// quoteStyle option of unstable_stringify: doubleQuote selects `"` where the
// stable dumper uses `'`. The caller has handled the empty string and the
// YAML 1.1 booleans.
func chooseScalarStyle(s []rune, singleLineOnly bool, lineWidth int, doubleQuote bool) scalarStyle {
	hasLineBreak := false
	hasFoldableLine := false
	previousLineBreak := -1
	plain := isPlainSafeFirst(s[0]) && !isWhiteSpace(s[len(s)-1])

	// A line is foldable when it is longer than the width and does not
	// start with a space ("more-indented" lines cannot be folded).
	foldable := func(end int) bool {
		return end-previousLineBreak-1 > lineWidth && s[previousLineBreak+1] != ' '
	}
	for i, c := range s {
		if !singleLineOnly && c == '\n' {
			hasLineBreak = true
			hasFoldableLine = hasFoldableLine || foldable(i)
			previousLineBreak = i
		} else if !isPrintable(c) {
			return styleDouble
		}
		plain = plain && isPlainSafe(c)
	}
	if !singleLineOnly {
		hasFoldableLine = hasFoldableLine || foldable(len(s))
	}
	if !hasLineBreak && !hasFoldableLine {
		if plain && !resolvesImplicitly(string(s)) {
			return stylePlain
		}
		if doubleQuote {
			return styleDouble
		}
		return styleSingle
	}
	// (The dumper's "indent > 9 needs double quotes" edge case cannot occur
	// with the fixed indent of 2.)
	if hasFoldableLine {
		return styleFolded
	}
	return styleLiteral
}

// stringifyScalar writes the string s found at nesting level (the top-level
// mapping's values are level 1). Keys are never block scalars.
func stringifyScalar(s string, level int, isKey bool, st Style) string {
	if s == "" {
		return "''" // swamp-format §2.4.1 rule 1; also with quoteStyle '"' (swamp-format §1.2)
	}
	if isCompatBoolean(s) {
		return "'" + s + "'" // swamp-format §2.4.1 rule 2; also with quoteStyle '"' (swamp-format §1.2)
	}
	indent := indentPerLevel * max(1, level)
	// The width shrinks with depth down to min(lineWidth, 40): 78 for a
	// top-level value, 76 one level deeper (swamp-format §2.4.1).
	lineWidth := max(min(lineWidthLimit, 40), lineWidthLimit-indent)
	runes := []rune(s)
	switch chooseScalarStyle(runes, isKey, lineWidth, st == StyleConfig) {
	case stylePlain:
		return s
	case styleSingle:
		return "'" + strings.ReplaceAll(s, "'", "''") + "'"
	case styleLiteral:
		return "|" + blockHeader(runes) + trimTrailingNewline(indentString(s, indent))
	case styleFolded:
		return ">" + blockHeader(runes) + trimTrailingNewline(indentString(foldString(runes, lineWidth), indent))
	default:
		return `"` + escapeString(s) + `"`
	}
}

// blockHeader returns the indentation indicator (needed when the text starts
// with a space after any leading newlines) and the chomping indicator: `-`
// without a final newline, none for one, `+` for more (the text "\n" alone
// counts as keep).
func blockHeader(s []rune) string {
	var b strings.Builder
	i := 0
	for i < len(s) && s[i] == '\n' {
		i++
	}
	if i < len(s) && s[i] == ' ' {
		fmt.Fprint(&b, indentPerLevel)
	}
	n := len(s)
	clip := s[n-1] == '\n'
	keep := clip && ((n >= 2 && s[n-2] == '\n') || n == 1)
	switch {
	case keep:
		b.WriteString("+")
	case clip:
	default:
		b.WriteString("-")
	}
	b.WriteString("\n")
	return b.String()
}

// indentString indents every non-empty line by spaces.
func indentString(s string, spaces int) string {
	pad := strings.Repeat(" ", spaces)
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = pad + l
		}
	}
	return strings.Join(lines, "\n")
}

func trimTrailingNewline(s string) string { return strings.TrimSuffix(s, "\n") }

// foldString is _dumper_state.ts foldString: in folded style k consecutive
// newlines mean k+1 newlines, except next to a more-indented line or at the
// start, so an extra "\n" is inserted between two ordinary lines.
func foldString(s []rune, width int) string {
	nextLF := 0
	for nextLF < len(s) && s[nextLF] != '\n' {
		nextLF++
	}
	var b strings.Builder
	b.WriteString(foldLine(s[:nextLF], width))
	prevMoreIndented := s[0] == '\n' || s[0] == ' '

	// The remaining chunks match /(\n+)([^\n]*)/g.
	for i := nextLF; i < len(s); {
		j := i
		for j < len(s) && s[j] == '\n' {
			j++
		}
		k := j
		for k < len(s) && s[k] != '\n' {
			k++
		}
		line := s[j:k]
		moreIndented := len(line) > 0 && line[0] == ' '
		b.WriteString(string(s[i:j]))
		if !prevMoreIndented && !moreIndented && len(line) > 0 {
			b.WriteString("\n")
		}
		b.WriteString(foldLine(line, width))
		prevMoreIndented = moreIndented
		i = k
	}
	return b.String()
}

// foldLine is _dumper_state.ts foldLine: greedy breaking at single spaces
// (matches of / [^ ]/), taking the longest piece within the width, or else
// the shortest piece over it. A line without a break point stays whole.
func foldLine(line []rune, width int) string {
	if len(line) == 0 || line[0] == ' ' {
		return string(line)
	}
	start, curr := 0, 0
	var pieces []string
	for next := 0; next+1 < len(line); next++ {
		if line[next] != ' ' || line[next+1] == ' ' {
			continue
		}
		if next-start > width {
			end := next
			if curr > start {
				end = curr
			}
			pieces = append(pieces, string(line[start:end]))
			start = end + 1 // the space becomes the line break
		}
		curr = next
	}
	if len(line)-start > width && curr > start {
		pieces = append(pieces, string(line[start:curr]), string(line[curr+1:]))
	} else {
		pieces = append(pieces, string(line[start:]))
	}
	return strings.Join(pieces, "\n")
}

// escapeSequences is ESCAPE_SEQUENCES.
var escapeSequences = map[rune]string{
	0x00:   `\0`,
	0x07:   `\a`,
	0x08:   `\b`,
	0x09:   `\t`,
	0x0a:   `\n`,
	0x0b:   `\v`,
	0x0c:   `\f`,
	0x0d:   `\r`,
	0x1b:   `\e`,
	0x22:   `\"`,
	0x5c:   `\\`,
	0x85:   `\N`,
	0xa0:   `\_`,
	0x2028: `\L`,
	0x2029: `\P`,
}

// escapeString is _dumper_state.ts escapeString: named escapes first, then
// printable characters as themselves, then \xXX, \uXXXX or \UXXXXXXXX
// (upper-case hex). A surrogate pair, i.e. an astral rune, becomes one
// \UXXXXXXXX (`ok 😀` → "ok \U0001F600").
func escapeString(s string) string {
	var b strings.Builder
	for _, c := range s {
		if seq, ok := escapeSequences[c]; ok {
			b.WriteString(seq)
			continue
		}
		switch {
		case isPrintable(c):
			b.WriteRune(c)
		case c <= 0xff:
			fmt.Fprintf(&b, `\x%02X`, c)
		case c <= 0xffff:
			fmt.Fprintf(&b, `\u%04X`, c)
		default:
			fmt.Fprintf(&b, `\U%08X`, c)
		}
	}
	return b.String()
}
