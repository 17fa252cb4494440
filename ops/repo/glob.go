package repo

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
)

// ExcludeMatcher is swamp's compiled `exclude` list
// (src/domain/datastore/datastore_pattern_matcher.ts, swamp-format §1.4): gitignore-style
// globs, blank and "#" lines ignored, "!" negates, the last matching pattern
// wins, and each pattern must match the whole relative path.
type ExcludeMatcher struct {
	patterns []compiledGlob
}

type compiledGlob struct {
	source  string
	re      *regexp.Regexp
	negated bool
}

// CompileExclude compiles patterns the way swamp's compilePatterns does. A
// pattern whose translation is not a valid regular expression is an error
// (swamp's `new RegExp` would throw on it too).
func CompileExclude(patterns []string) (*ExcludeMatcher, error) {
	m := &ExcludeMatcher{}
	for _, p := range patterns {
		// swamp filters on the untrimmed "#" prefix and the trimmed blank test.
		if jsTrim(p) == "" || strings.HasPrefix(p, "#") {
			continue
		}
		t := jsTrim(p)
		neg := strings.HasPrefix(t, "!")
		if neg {
			t = t[1:]
		}
		re, err := regexp.Compile(globToRegexp(t))
		if err != nil {
			return nil, fmt.Errorf("exclude pattern %q is not a valid glob: %v", p, err)
		}
		m.patterns = append(m.patterns, compiledGlob{source: p, re: re, negated: neg})
	}
	return m, nil
}

// Excluded reports whether rel (a "/"-separated path relative to the
// datastore root) is excluded: the last pattern that matches decides, a
// negated one re-including. One leading "/" is ignored.
func (m *ExcludeMatcher) Excluded(rel string) bool {
	if m == nil {
		return false
	}
	rel = strings.TrimPrefix(rel, "/")
	excluded := false
	for _, p := range m.patterns {
		if p.re.MatchString(rel) {
			excluded = !p.negated
		}
	}
	return excluded
}

// globToRegexp is swamp's globToRegExp, token for token:
//
//	**/  → (?:.+/)?   zero or more directories
//	**   → .*
//	*    → [^/]*
//	?    → [^/]
//	[…]  → passed through up to the first "]" (a lone "[" is literal)
//	. + ^ $ { } ( ) | \  → escaped
//	anything else        → itself
//
// The result is anchored. Known differences from JavaScript's engine, none of
// which matter for the paths swamp checks (plain directory names): RE2 reads
// a POSIX class such as [[:alpha:]] inside brackets, and "." here excludes
// only "\n" where JavaScript also excludes "\r", U+2028 and U+2029.
func globToRegexp(pattern string) string {
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(pattern); {
		c := pattern[i]
		switch {
		case c == '*' && i+1 < len(pattern) && pattern[i+1] == '*':
			if i+2 < len(pattern) && pattern[i+2] == '/' {
				b.WriteString("(?:.+/)?")
				i += 3
			} else {
				b.WriteString(".*")
				i += 2
			}
		case c == '*':
			b.WriteString("[^/]*")
			i++
		case c == '?':
			b.WriteString("[^/]")
			i++
		case c == '[':
			end := strings.IndexByte(pattern[i+1:], ']')
			if end < 0 {
				b.WriteString(`\[`)
				i++
			} else {
				b.WriteString(pattern[i : i+1+end+1])
				i += end + 2
			}
		case strings.IndexByte(".+^${}()|\\", c) >= 0:
			b.WriteByte('\\')
			b.WriteByte(c)
			i++
		default:
			b.WriteByte(c)
			i++
		}
	}
	b.WriteString("$")
	return b.String()
}

// jsTrim is String.prototype.trim: Unicode white space plus the BOM.
func jsTrim(s string) string {
	return strings.TrimFunc(s, func(r rune) bool { return unicode.IsSpace(r) || r == '\uFEFF' })
}
