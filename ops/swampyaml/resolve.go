package swampyaml

import (
	"regexp"
	"sync"
)

// The implicit scalar types of @std/yaml's DEFAULT_SCHEMA, in the order its
// loader tries them: null, bool, int, float (core), then timestamp and merge
// (swamp-format §2.4.1 rule 3). The dumper quotes a string that any of
// them would resolve, and Parse uses the same functions to type plain
// scalars, so a value written by Marshal always reads back as a string.

// resolvesNull is _type/nil.ts resolveYamlNull (the empty plain scalar is
// handled by the callers).
func resolvesNull(s string) bool {
	return s == "~" || s == "null" || s == "Null" || s == "NULL"
}

// resolvesBool is _type/bool.ts: YAML 1.2 core booleans only. The YAML 1.1
// words (yes, on, …) are strings to the parser; the dumper quotes them for
// compatibility by a separate rule (compatBooleans).
func resolvesBool(s string) bool {
	switch s {
	case "true", "True", "TRUE", "false", "False", "FALSE":
		return true
	}
	return false
}

// resolvesInt is _type/int.ts resolveYamlInteger, ported literally: optional
// sign; 0b…/0x…/leading-zero octal with `_` allowed; decimal; base 60
// (`1:30`). Note the quirks kept on purpose: `09` and `0o17` are NOT ints,
// `0X1F` is not either (only a lower-case x).
func resolvesInt(data string) bool {
	max := len(data)
	if max == 0 {
		return false
	}
	index := 0
	hasDigits := false
	at := func(i int) byte {
		if i < max {
			return data[i]
		}
		return 0 // JavaScript's undefined: equal to nothing below
	}
	ch := at(index)
	if ch == '-' || ch == '+' {
		index++
		ch = at(index)
	}
	if ch == '0' {
		if index+1 == max {
			return true
		}
		index++
		ch = at(index)
		switch ch {
		case 'b':
			index++
			for ; index < max; index++ {
				ch = data[index]
				if ch == '_' {
					continue
				}
				if ch != '0' && ch != '1' {
					return false
				}
				hasDigits = true
			}
			return hasDigits && ch != '_'
		case 'x':
			index++
			for ; index < max; index++ {
				ch = data[index]
				if ch == '_' {
					continue
				}
				if !isHexDigit(ch) {
					return false
				}
				hasDigits = true
			}
			return hasDigits && ch != '_'
		}
		for ; index < max; index++ {
			ch = data[index]
			if ch == '_' {
				continue
			}
			if ch < '0' || ch > '7' {
				return false
			}
			hasDigits = true
		}
		return hasDigits && ch != '_'
	}
	if ch == '_' {
		return false
	}
	for ; index < max; index++ {
		ch = data[index]
		if ch == '_' {
			continue
		}
		if ch == ':' {
			break
		}
		if ch < '0' || ch > '9' {
			return false
		}
		hasDigits = true
	}
	if !hasDigits || ch == '_' {
		return false
	}
	if ch != ':' {
		return true
	}
	return base60Tail().MatchString(data[index:])
}

var base60Tail = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(:[0-5]?[0-9])+$`) })

func isHexDigit(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'A' && c <= 'F' || c >= 'a' && c <= 'f'
}

// yamlFloat is _type/float.ts YAML_FLOAT_PATTERN. The first alternative also
// matches plain integers, which is harmless: they are ints already.
var yamlFloat = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(?:[-+]?(?:0|[1-9][0-9_]*)(?:\.[0-9_]*)?(?:[eE][-+]?[0-9]+)?` +
		`|\.[0-9_]+(?:[eE][-+]?[0-9]+)?` +
		`|[-+]?\.(?:inf|Inf|INF)` +
		`|\.(?:nan|NaN|NAN))$`)
})

// resolvesFloat is _type/float.ts resolveYamlFloat ("NaN" is not a float:
// only the dotted .nan forms are).
func resolvesFloat(s string) bool {
	return yamlFloat().MatchString(s) && s[len(s)-1] != '_'
}

// yamlDate and yamlTimestamp are _type/timestamp.ts's two patterns. A date
// needs two-digit month and day; a date-time may use one digit, and `T`, `t`
// or blanks as separator.
var (
	yamlDate      = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^([0-9][0-9][0-9][0-9])-([0-9][0-9])-([0-9][0-9])$`) })
	yamlTimestamp = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^([0-9][0-9][0-9][0-9])-([0-9][0-9]?)-([0-9][0-9]?)` +
			`(?:[Tt]|[ \t]+)([0-9][0-9]?):([0-9][0-9]):([0-9][0-9])(?:\.([0-9]*))?` +
			`(?:[ \t]*(Z|([-+])([0-9][0-9]?)(?::([0-9][0-9]))?))?$`)
	})
)

func resolvesTimestamp(s string) bool {
	return yamlDate().MatchString(s) || yamlTimestamp().MatchString(s)
}

// resolvesMerge is _type/merge.ts: the merge key `<<`.
func resolvesMerge(s string) bool { return s == "<<" }

// resolvesImplicitly reports whether a plain scalar s would be read as
// something other than a string (swamp-format §2.4.1 rule 3).
func resolvesImplicitly(s string) bool {
	return resolvesNull(s) || resolvesBool(s) || resolvesInt(s) ||
		resolvesFloat(s) || resolvesTimestamp(s) || resolvesMerge(s)
}

// compatBooleans is DEPRECATED_BOOLEANS_SYNTAX: YAML 1.1 booleans, which the
// dumper always single-quotes in compat mode (the default), whatever the
// quote style (swamp-format §2.4.1 rule 2, swamp-format §1.2).
func isCompatBoolean(s string) bool {
	switch s {
	case "y", "Y", "yes", "Yes", "YES", "on", "On", "ON",
		"n", "N", "no", "No", "NO", "off", "Off", "OFF":
		return true
	}
	return false
}
