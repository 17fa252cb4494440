package swampyaml

import (
	"fmt"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Style selects which of swamp's two stringify calls Marshal imitates.
type Style int

const (
	// StyleMetadata is `stringify(data)` from @std/yaml 1.1.0 with default
	// options, as swamp writes metadata.yaml (swamp-format §2.4.1):
	// strings quoted only when needed, then with single quotes.
	StyleMetadata Style = iota
	// StyleConfig is `stringify(data, {quoteStyle: '"'})` from
	// @std/yaml/unstable-stringify, as swamp writes .swamp.yaml (swamp-format §1.2): the
	// same decisions, but double quotes where StyleMetadata uses single
	// ones — except '' and the YAML 1.1 booleans, which stay single-quoted.
	StyleConfig
)

// Marshal writes n as swamp's YAML writer does: block style, 2-space indent,
// keys in the given order, no `---`, exactly one trailing "\n". Strings must
// be valid UTF-8 (a JavaScript string cannot hold anything else).
func Marshal(n *Node, style Style) ([]byte, error) {
	e := emitter{style: style}
	out, err := e.node(n, 0, true, true, false)
	if err != nil {
		return nil, err
	}
	return []byte(out + "\n"), nil
}

type emitter struct{ style Style }

// node is _dumper_state.ts stringifyNode with flowLevel -1 (block style
// everywhere) and no anchors (swamp's JSON round trip leaves no shared
// objects). level counts nesting; compact means "continue on the current
// line" (the first pair of a mapping inside a sequence item, or the
// document's top level).
func (e *emitter) node(n *Node, level int, block, compact, isKey bool) (string, error) {
	if n == nil {
		return "", fmt.Errorf("swampyaml: nil node")
	}
	switch n.Kind {
	case StringKind:
		if !utf8.ValidString(n.Str) {
			return "", fmt.Errorf("swampyaml: string %q is not valid UTF-8", n.Str)
		}
		return stringifyScalar(n.Str, level, isKey, e.style), nil
	case NumberKind:
		return formatYAMLNumber(n.Num), nil
	case BoolKind:
		if n.Bool {
			return "true", nil
		}
		return "false", nil
	case NullKind:
		return "null", nil
	case MapKind:
		if block && len(n.Pairs) > 0 {
			return e.blockMapping(n, level, compact)
		}
		return e.flowMapping(n, level)
	case SeqKind:
		// arrayIndent is true by default: items sit one level deeper than
		// their key (`tools:` / `  - claude`).
		if block && len(n.Items) > 0 {
			return e.blockSequence(n, level, compact)
		}
		return e.flowSequence(n, level)
	case TimestampKind:
		return "", fmt.Errorf("swampyaml: cannot write a timestamp node; swamp writes dates as ISO strings")
	}
	return "", fmt.Errorf("swampyaml: unknown node kind %d", n.Kind)
}

func (e *emitter) blockMapping(n *Node, level int, compact bool) (string, error) {
	separator := "\n" + strings.Repeat(" ", indentPerLevel*level)
	results := make([]string, 0, len(n.Pairs))
	for _, p := range n.Pairs {
		if !utf8.ValidString(p.Key) {
			return "", fmt.Errorf("swampyaml: key %q is not valid UTF-8", p.Key)
		}
		keyString := stringifyScalar(p.Key, level+1, true, e.style)
		// A key longer than 1024 code units needs an explicit `? ` pair.
		explicitPair := len(utf16.Encode([]rune(keyString))) > 1024
		valueString, err := e.node(p.Value, level+1, true, explicitPair, false)
		if err != nil {
			return "", err
		}
		var pair strings.Builder
		if explicitPair {
			pair.WriteString("? ")
		}
		pair.WriteString(keyString)
		if explicitPair {
			pair.WriteString(separator)
		}
		if strings.HasPrefix(valueString, "\n") {
			pair.WriteString(":") // a nested block starts on the next line
		} else {
			pair.WriteString(": ")
		}
		pair.WriteString(valueString)
		results = append(results, pair.String())
	}
	prefix := separator
	if compact {
		prefix = ""
	}
	return prefix + strings.Join(results, separator), nil
}

func (e *emitter) blockSequence(n *Node, level int, compact bool) (string, error) {
	whitespace := "\n" + strings.Repeat(" ", indentPerLevel*level)
	results := make([]string, 0, len(n.Items))
	for _, item := range n.Items {
		s, err := e.node(item, level+1, true, true, false)
		if err != nil {
			return "", err
		}
		if strings.HasPrefix(s, "\n") {
			results = append(results, "-"+s)
		} else {
			results = append(results, "- "+s)
		}
	}
	prefix := whitespace
	if compact {
		prefix = ""
	}
	return prefix + strings.Join(results, whitespace), nil
}

// flowMapping and flowSequence are only reached for empty collections
// (`{}`, `[]`): with flowLevel -1 every non-empty collection is a block.
func (e *emitter) flowMapping(n *Node, level int) (string, error) {
	parts := make([]string, 0, len(n.Pairs))
	for _, p := range n.Pairs {
		k := stringifyScalar(p.Key, level, false, e.style)
		v, err := e.node(p.Value, level, false, false, false)
		if err != nil {
			return "", err
		}
		if len(utf16.Encode([]rune(k))) > 1024 {
			k = "? " + k
		}
		parts = append(parts, k+": "+v)
	}
	return "{" + strings.Join(parts, ", ") + "}", nil
}

func (e *emitter) flowSequence(n *Node, level int) (string, error) {
	parts := make([]string, 0, len(n.Items))
	for _, item := range n.Items {
		v, err := e.node(item, level, false, false, false)
		if err != nil {
			return "", err
		}
		parts = append(parts, v)
	}
	return "[" + strings.Join(parts, ", ") + "]", nil
}
