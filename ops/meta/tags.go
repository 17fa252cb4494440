package meta

import (
	"strings"

	"github.com/swampj/swampj/ops/jsfmt"
	"github.com/swampj/swampj/ops/swampyaml"
)

// JSOrder returns the tags as a JavaScript object holds them (swamp-format §2.4): keys
// that are array indices ("0", "42") first in ascending numeric order, then
// the others in insertion order. A repeated key keeps its first position and
// its last value, as repeated assignment to an object property does.
func (t Tags) JSOrder() Tags {
	if t.inJSOrder() {
		return t
	}
	pairs := make([]swampyaml.Pair, 0, len(t))
	index := make(map[string]int, len(t))
	values := make(map[string]string, len(t))
	for _, tag := range t {
		if _, seen := index[tag.Key]; !seen {
			index[tag.Key] = len(pairs)
			pairs = append(pairs, swampyaml.Pair{Key: tag.Key})
		}
		values[tag.Key] = tag.Value
	}
	out := make(Tags, 0, len(pairs))
	for _, p := range swampyaml.JSOrder(pairs) {
		out = append(out, Tag{Key: p.Key, Value: values[p.Key]})
	}
	return out
}

// inJSOrder reports whether t is already as a JavaScript object would hold
// it — no array-index key, no repeated key — the common case, which then
// costs no maps (a rebuild builds 100,000 tags columns).
func (t Tags) inJSOrder() bool {
	for i, tag := range t {
		if swampyaml.IsArrayIndex(tag.Key) {
			return false
		}
		for _, earlier := range t[:i] {
			if earlier.Key == tag.Key {
				return false
			}
		}
	}
	return true
}

// TagsJSON is the catalog's tags column (swamp-format §3.4): JSON.stringify of the tags
// object — compact, keys in JavaScript order (JSOrder), and JavaScript's
// string escaping, which differs from encoding/json: only `"`, `\` and
// control characters are escaped (\b \f \n \r \t, others \u00xx in lower
// case), while `/ < > &`, U+2028/U+2029 and all non-ASCII text stay raw.
func TagsJSON(t Tags) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, tag := range t.JSOrder() {
		if i > 0 {
			b.WriteByte(',')
		}
		jsfmt.WriteQuoted(&b, tag.Key)
		b.WriteByte(':')
		jsfmt.WriteQuoted(&b, tag.Value)
	}
	b.WriteByte('}')
	return b.String()
}
