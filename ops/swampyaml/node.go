// Package swampyaml reads and writes YAML the way swamp does: Parse mirrors
// @std/yaml 1.1.0's parse (default schema) followed by the JavaScript object
// model, and Marshal reproduces @std/yaml 1.1.0's stringify byte for byte,
// in the two flavours swamp uses (swamp-format §2.4.1 for metadata.yaml,
// swamp-format §1.2 for .swamp.yaml). EditNamespace is the read-modify-write cycle of
// `swamp datastore namespace set/unset` on .swamp.yaml (swamp-format §1.5.2, §1.5.3).
// Parse is also the only reader of .swamp.yaml (ops/repo builds its Repo from
// Parse's tree), so swampj reads back exactly what it and swamp write.
//
// Go YAML libraries choose scalar styles differently from @std/yaml, so the
// emitter here is a port of @std/yaml's decision procedure, not a wrapper
// around gopkg.in/yaml.v3 (which is only used for parsing).
package swampyaml

import (
	"sort"
	"strconv"
	"time"
)

// Kind is the JavaScript type a Node stands for.
type Kind uint8

const (
	// StringKind is a JavaScript string; Marshal decides how to quote it.
	StringKind Kind = iota
	// NumberKind is a JavaScript number (an IEEE-754 double).
	NumberKind
	// BoolKind is true or false.
	BoolKind
	// NullKind is null.
	NullKind
	// TimestampKind is a JavaScript Date. Parse produces it for an unquoted
	// timestamp (the default schema's implicit !!timestamp); Marshal refuses
	// it because swamp never writes one (its writers JSON-round-trip first,
	// which turns a Date into its toISOString() string).
	TimestampKind
	// MapKind is a plain JavaScript object.
	MapKind
	// SeqKind is a JavaScript array.
	SeqKind
)

func (k Kind) String() string {
	switch k {
	case StringKind:
		return "string"
	case NumberKind:
		return "number"
	case BoolKind:
		return "boolean"
	case NullKind:
		return "null"
	case TimestampKind:
		return "timestamp"
	case MapKind:
		return "mapping"
	case SeqKind:
		return "sequence"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Node is one value of a small ordered tree: the JavaScript value swamp
// would hold in memory. Only the field matching Kind is meaningful.
type Node struct {
	Kind  Kind
	Str   string    // StringKind
	Num   float64   // NumberKind
	Bool  bool      // BoolKind
	Time  time.Time // TimestampKind, UTC, millisecond precision
	Pairs []Pair    // MapKind, in JavaScript property order
	Items []*Node   // SeqKind

	// Raw is the text of a scalar as Parse read it, before typing and
	// without quotes ("007" for the number 7), so a reader can name the
	// value as the user wrote it. Empty for nodes made by the constructors;
	// Marshal ignores it.
	Raw string
}

// Pair is one key of a MapKind node. Keys are strings, as in JavaScript.
type Pair struct {
	Key   string
	Value *Node
}

// String returns a string node.
func String(s string) *Node { return &Node{Kind: StringKind, Str: s} }

// Int returns a number node holding i. Integers beyond ±(2^53-1) are
// rounded, as a JavaScript number would round them.
func Int(i int64) *Node { return &Node{Kind: NumberKind, Num: float64(i)} }

// Number returns a number node.
func Number(f float64) *Node { return &Node{Kind: NumberKind, Num: f} }

// Bool returns a boolean node.
func Bool(b bool) *Node { return &Node{Kind: BoolKind, Bool: b} }

// Null returns a null node.
func Null() *Node { return &Node{Kind: NullKind} }

// Map returns a mapping node whose keys are written in the given order.
// Use JSOrder first if the pairs should follow JavaScript property order.
func Map(pairs ...Pair) *Node { return &Node{Kind: MapKind, Pairs: pairs} }

// Seq returns a sequence node.
func Seq(items ...*Node) *Node { return &Node{Kind: SeqKind, Items: items} }

// Get returns the value of key in a mapping node.
func (n *Node) Get(key string) (*Node, bool) {
	if n == nil || n.Kind != MapKind {
		return nil, false
	}
	for _, p := range n.Pairs {
		if p.Key == key {
			return p.Value, true
		}
	}
	return nil, false
}

// Set assigns key in a mapping node with JavaScript semantics: an existing
// key keeps its position, a new key goes after the other non-index keys, and
// a new array-index key ("42") goes among the index keys in numeric order.
func (n *Node) Set(key string, v *Node) {
	for i := range n.Pairs {
		if n.Pairs[i].Key == key {
			n.Pairs[i].Value = v
			return
		}
	}
	n.Pairs = append(n.Pairs, Pair{Key: key, Value: v})
	if IsArrayIndex(key) {
		n.Pairs = JSOrder(n.Pairs)
	}
}

// Delete removes key from a mapping node and reports whether it was there.
func (n *Node) Delete(key string) bool {
	for i := range n.Pairs {
		if n.Pairs[i].Key == key {
			n.Pairs = append(n.Pairs[:i:i], n.Pairs[i+1:]...)
			return true
		}
	}
	return false
}

// IsArrayIndex reports whether key is a JavaScript array index: the
// canonical decimal form of an integer in [0, 2^32-2]. Objects enumerate such
// keys first, in ascending numeric order, before all other string keys in
// insertion order (ECMAScript OrdinaryOwnPropertyKeys) — which is why a tag
// "42" comes before "type" in swamp's files (swamp-format §2.4).
func IsArrayIndex(key string) bool {
	if key == "" || len(key) > 10 || (len(key) > 1 && key[0] == '0') {
		return false
	}
	for i := 0; i < len(key); i++ {
		if key[i] < '0' || key[i] > '9' {
			return false
		}
	}
	v, err := strconv.ParseUint(key, 10, 64)
	return err == nil && v <= 1<<32-2
}

// JSOrder returns pairs in JavaScript property order: array-index keys in
// ascending numeric order, then the others in their given order.
func JSOrder(pairs []Pair) []Pair {
	out := make([]Pair, 0, len(pairs))
	var rest []Pair
	for _, p := range pairs {
		if IsArrayIndex(p.Key) {
			out = append(out, p)
		} else {
			rest = append(rest, p)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, _ := strconv.ParseUint(out[i].Key, 10, 64)
		b, _ := strconv.ParseUint(out[j].Key, 10, 64)
		return a < b
	})
	return append(out, rest...)
}
