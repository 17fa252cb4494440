package meta

import (
	"strings"

	"github.com/swampj/swampj/ops/jsfmt"
)

// NormalizeType turns a model type into the relative directory path swamp
// stores its data under (swamp-format §2.2, ModelType.create + normalize): trim; lower
// case; `::` → `/`; each whitespace run → `/`; `.` → `/`; repeated `/`
// collapsed; one leading and one trailing `/` removed. So `AWS::EC2::VPC` →
// `aws/ec2/vpc`, `@myorg/foo-bar` stays, and a single `:` is kept. An empty
// result means swamp would refuse the type ("cannot be empty" /
// "normalization resulted in empty string").
func NormalizeType(s string) string {
	s = strings.TrimFunc(s, jsIsSpace)
	s = jsfmt.ToLower(s)
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
