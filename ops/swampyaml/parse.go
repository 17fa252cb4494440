package swampyaml

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/swampj/swampj/ops/jsfmt"
	"gopkg.in/yaml.v3"
)

// Parse reads a single YAML document into the value swamp would hold after
// `parse` from @std/yaml 1.1.0 (default schema): plain scalars are typed by
// the same implicit resolvers the dumper consults (so `012` is the number 10,
// `yes` a string, an unquoted `2026-01-01` a timestamp), quoted and block
// scalars are strings, aliases are expanded, merge keys (`<<`) are applied,
// mapping keys become strings and follow JavaScript property order
// (array-index keys first). Duplicate keys, several documents, explicit tags
// other than the core ones, and complex keys are errors, as they are for
// swamp. An empty stream is null.
//
// gopkg.in/yaml.v3 does the syntax; only its node tree is used, never its own
// scalar resolution (which follows different rules).
func Parse(src []byte) (*Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(src))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return Null(), nil
		}
		return nil, err
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, ErrMultipleDocuments
	} else if !errors.Is(err, io.EOF) {
		return nil, err
	}
	c := converter{budget: maxNodes}
	return c.convert(&doc)
}

// ErrMultipleDocuments is returned by Parse for a stream of more than one
// YAML document, which swamp's parse refuses.
var ErrMultipleDocuments = errors.New("expected a single document in the stream, but found more")

// maxNodes bounds alias expansion ("billion laughs").
const maxNodes = 1 << 20

type converter struct{ budget int }

func (c *converter) convert(n *yaml.Node) (*Node, error) {
	c.budget--
	if c.budget < 0 {
		return nil, errors.New("document expands to too many nodes")
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return Null(), nil
		}
		return c.convert(n.Content[0])
	case yaml.AliasNode:
		if n.Alias == nil {
			return nil, fmt.Errorf("line %d: unknown alias", n.Line)
		}
		return c.convert(n.Alias)
	case yaml.ScalarNode:
		v, err := resolveScalar(n)
		if err != nil {
			return nil, err
		}
		v.Raw = n.Value
		return v, nil
	case yaml.SequenceNode:
		if err := checkCollectionTag(n, "!!seq"); err != nil {
			return nil, err
		}
		out := &Node{Kind: SeqKind, Items: make([]*Node, 0, len(n.Content))}
		for _, item := range n.Content {
			v, err := c.convert(item)
			if err != nil {
				return nil, err
			}
			out.Items = append(out.Items, v)
		}
		return out, nil
	case yaml.MappingNode:
		return c.mapping(n)
	}
	return nil, fmt.Errorf("line %d: unsupported YAML node", n.Line)
}

func checkCollectionTag(n *yaml.Node, want string) error {
	if n.Style&yaml.TaggedStyle != 0 && n.Tag != want {
		return fmt.Errorf("line %d: unsupported tag %s", n.Line, n.Tag)
	}
	return nil
}

// mapping builds a JavaScript object the way the loader's storeMappingPair
// does: a key may be set once, except that keys brought in by a merge may be
// overridden by a later explicit key; merged keys never replace present ones.
func (c *converter) mapping(n *yaml.Node) (*Node, error) {
	if err := checkCollectionTag(n, "!!map"); err != nil {
		return nil, err
	}
	out := &Node{Kind: MapKind}
	index := map[string]int{}
	line := map[string]int{} // where an explicit key was first written
	overridable := map[string]bool{}
	put := func(key string, v *Node) {
		if i, ok := index[key]; ok {
			out.Pairs[i].Value = v
			return
		}
		index[key] = len(out.Pairs)
		out.Pairs = append(out.Pairs, Pair{Key: key, Value: v})
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		v, err := c.convert(vn)
		if err != nil {
			return nil, err
		}
		if isMergeKey(kn) {
			sources := []*Node{v}
			if v.Kind == SeqKind {
				sources = v.Items
			}
			for _, src := range sources {
				if src.Kind != MapKind {
					return nil, fmt.Errorf("line %d: cannot merge mappings; the provided source object is unacceptable", kn.Line)
				}
				for _, p := range src.Pairs {
					if _, ok := index[p.Key]; !ok {
						put(p.Key, p.Value)
						overridable[p.Key] = true
					}
				}
			}
			continue
		}
		key, err := c.keyString(kn)
		if err != nil {
			return nil, err
		}
		if _, dup := index[key]; dup && !overridable[key] {
			return nil, fmt.Errorf("line %d: mapping key %q already defined at line %d", kn.Line, key, line[key])
		}
		line[key] = kn.Line
		put(key, v)
		delete(overridable, key)
	}
	out.Pairs = JSOrder(out.Pairs)
	return out, nil
}

func isMergeKey(k *yaml.Node) bool {
	if k.Kind != yaml.ScalarNode {
		return false
	}
	if k.Style&yaml.TaggedStyle != 0 {
		return k.Tag == "!!merge"
	}
	return isPlainStyle(k) && resolvesMerge(k.Value)
}

// keyString is JavaScript's String(key) for a scalar key.
func (c *converter) keyString(k *yaml.Node) (string, error) {
	if k.Kind == yaml.AliasNode && k.Alias != nil {
		k = k.Alias
	}
	if k.Kind != yaml.ScalarNode {
		return "", fmt.Errorf("line %d: complex mapping keys are not supported", k.Line)
	}
	v, err := resolveScalar(k)
	if err != nil {
		return "", err
	}
	var key string
	switch v.Kind {
	case StringKind:
		key = v.Str
	case NumberKind:
		key = JSNumberString(v.Num)
	case BoolKind:
		key = strconv.FormatBool(v.Bool)
	case NullKind:
		key = "null"
	default:
		// String(date) depends on the local time zone: not reproducible.
		return "", fmt.Errorf("line %d: a %s cannot be a mapping key", k.Line, v.Kind)
	}
	if key == "__proto__" {
		// Assigning __proto__ changes a JavaScript object's prototype
		// instead of adding a key; refuse rather than guess.
		return "", fmt.Errorf("line %d: the key __proto__ is not supported", k.Line)
	}
	return key, nil
}

func isPlainStyle(n *yaml.Node) bool {
	return n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) == 0
}

// resolveScalar types one scalar as the loader does.
func resolveScalar(n *yaml.Node) (*Node, error) {
	s := n.Value
	if n.Style&yaml.TaggedStyle != 0 {
		bad := func() (*Node, error) {
			return nil, fmt.Errorf("line %d: cannot resolve %q with explicit tag %s", n.Line, s, n.Tag)
		}
		switch n.Tag {
		case "!!str":
			return String(s), nil
		case "!!null":
			if s == "" || resolvesNull(s) {
				return Null(), nil
			}
			return bad()
		case "!!bool":
			if resolvesBool(s) {
				return Bool(s == "true" || s == "True" || s == "TRUE"), nil
			}
			return bad()
		case "!!int":
			if resolvesInt(s) {
				return Number(constructInt(s)), nil
			}
			return bad()
		case "!!float":
			if resolvesFloat(s) {
				return Number(constructFloat(s)), nil
			}
			return bad()
		case "!!timestamp":
			if resolvesTimestamp(s) {
				return &Node{Kind: TimestampKind, Time: constructTimestamp(s)}, nil
			}
			return bad()
		}
		return nil, fmt.Errorf("line %d: unsupported tag %s", n.Line, n.Tag)
	}
	if !isPlainStyle(n) {
		return String(s), nil
	}
	switch {
	case s == "" || resolvesNull(s):
		return Null(), nil
	case resolvesBool(s):
		return Bool(s == "true" || s == "True" || s == "TRUE"), nil
	case resolvesInt(s):
		return Number(constructInt(s)), nil
	case resolvesFloat(s):
		return Number(constructFloat(s)), nil
	case resolvesTimestamp(s):
		return &Node{Kind: TimestampKind, Time: constructTimestamp(s)}, nil
	}
	return String(s), nil // including the merge key `<<` used as a value
}

// constructInt is _type/int.ts constructYamlInteger (parseInt semantics,
// i.e. the nearest double for long digit strings).
func constructInt(data string) float64 {
	value := strings.ReplaceAll(data, "_", "")
	sign := 1.0
	if value[0] == '-' || value[0] == '+' {
		if value[0] == '-' {
			sign = -1
		}
		value = value[1:]
	}
	if value == "0" {
		return 0
	}
	if value[0] == '0' {
		switch value[1] {
		case 'b':
			return sign * parseIntRadix(value[2:], 2)
		case 'x':
			return sign * parseIntRadix(value[2:], 16)
		}
		return sign * parseIntRadix(value, 8)
	}
	if strings.Contains(value, ":") {
		parts := strings.Split(value, ":")
		total, base := 0.0, 1.0
		for i := len(parts) - 1; i >= 0; i-- {
			total += parseIntRadix(parts[i], 10) * base
			base *= 60
		}
		return sign * total
	}
	return sign * parseIntRadix(value, 10)
}

func parseIntRadix(digits string, radix int) float64 {
	x, ok := new(big.Int).SetString(digits, radix)
	if !ok {
		return math.NaN()
	}
	f, _ := new(big.Float).SetInt(x).Float64()
	return f
}

// constructFloat is _type/float.ts constructYamlFloat.
func constructFloat(data string) float64 {
	value := strings.ToLower(strings.ReplaceAll(data, "_", ""))
	sign := 1.0
	if value[0] == '-' {
		sign = -1
	}
	if value[0] == '-' || value[0] == '+' {
		value = value[1:]
	}
	switch value {
	case ".inf":
		return sign * math.Inf(1)
	case ".nan":
		return math.NaN()
	}
	f, err := strconv.ParseFloat(value, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return math.NaN()
	}
	return sign * f
}

// constructTimestamp is _type/timestamp.ts constructYamlTimestamp: UTC
// unless an offset is given, fraction truncated to milliseconds. Like
// JavaScript's Date.UTC it maps years 0–99 to 1900–1999 and lets
// out-of-range fields roll over.
func constructTimestamp(s string) time.Time {
	m := yamlDate().FindStringSubmatch(s)
	if m == nil {
		m = yamlTimestamp().FindStringSubmatch(s)
	}
	atoi := func(i int) int {
		if i >= len(m) || m[i] == "" {
			return 0
		}
		v, _ := strconv.Atoi(m[i])
		return v
	}
	year := atoi(1)
	if year <= 99 {
		year += 1900
	}
	month, day := atoi(2), atoi(3)
	if len(m) < 5 || m[4] == "" {
		return time.Date(year, time.Month(month), day, 0, 0, 0, 0, time.UTC)
	}
	ms := 0
	if m[7] != "" {
		frac := m[7]
		if len(frac) > 3 {
			frac = frac[:3]
		}
		frac += strings.Repeat("0", 3-len(frac))
		ms, _ = strconv.Atoi(frac)
	}
	t := time.Date(year, time.Month(month), day, atoi(4), atoi(5), atoi(6), ms*int(time.Millisecond), time.UTC)
	if m[9] != "" && m[10] != "" {
		delta := time.Duration(atoi(10)*60+atoi(11)) * time.Minute
		if m[9] == "-" {
			delta = -delta
		}
		t = t.Add(-delta)
	}
	return t
}

// ISOString formats t as JavaScript's Date.prototype.toISOString.
func ISOString(t time.Time) string { return jsfmt.ISOString(t) }
