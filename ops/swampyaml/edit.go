package swampyaml

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
)

// ErrNoNamespace is returned by EditNamespace when asked to unset a
// namespace that .swamp.yaml does not configure. swamp's own message for
// this case is "No namespace is currently configured. Nothing to unset."
// (swamp-format §1.5.3 step 1).
var ErrNoNamespace = errors.New(".swamp.yaml: no datastore.namespace is configured")

// EditNamespace rewrites the bytes of a .swamp.yaml the way `swamp datastore
// namespace set <ns>` (ns != "", swamp-format §1.5.2 step 4) or `namespace unset` (ns ==
// "", swamp-format §1.5.3 step 3) does: parse, change one key, re-serialise everything
// with StyleConfig.
//
// Set: when there is no datastore block (or it is null), one is created as
// {type: filesystem, path: <repoDir>/.swamp} — appended as the last
// top-level key, or in place of the null — and then datastore.namespace is
// replaced in place or appended as the block's last key. repoDir must be
// absolute, as swamp always resolves it. The slug itself is not validated
// here (callers check swamp-format §1.5's slug rules first).
//
// Unset: only datastore.namespace is deleted; a datastore block that `set`
// created stays. ErrNoNamespace if there is none.
//
// As with swamp, comments and hand formatting are lost, unknown keys
// survive, flow lists become block lists, and the document passes through a
// JSON round trip (an unquoted timestamp becomes its ISO string, NaN and
// infinities become null). The legacy key `tool` is dropped, as swamp's
// writer drops it, after being promoted to `tools: [<tool>]` when `tools` is
// absent (swamp-format §1.2). The removed keys defaultDriver/defaultDriverConfig are
// refused, as swamp's reader refuses them.
func EditNamespace(src []byte, repoDir string, ns string) ([]byte, error) {
	root, err := Parse(src)
	if err != nil {
		return nil, fmt.Errorf(".swamp.yaml does not parse as YAML: %w", err)
	}
	if root.Kind != MapKind {
		return nil, fmt.Errorf(".swamp.yaml: expected a mapping at the top level, found %s", root.Kind)
	}
	for _, removed := range []string{"defaultDriver", "defaultDriverConfig"} {
		if _, ok := root.Get(removed); ok {
			return nil, fmt.Errorf(".swamp.yaml: the key %q is no longer supported by swamp; remove it first", removed)
		}
	}
	promoteLegacyTool(root)

	ds, hasDatastore := root.Get("datastore")
	if hasDatastore && ds.Kind != MapKind && ds.Kind != NullKind {
		return nil, fmt.Errorf(".swamp.yaml: datastore must be a mapping, found %s", ds.Kind)
	}
	if ns == "" {
		if !hasDatastore || ds.Kind != MapKind || !ds.Delete("namespace") {
			return nil, ErrNoNamespace
		}
	} else {
		if !hasDatastore || ds.Kind == NullKind {
			if !filepath.IsAbs(repoDir) {
				return nil, fmt.Errorf("swampyaml: repo directory %q must be absolute", repoDir)
			}
			ds = Map(
				Pair{Key: "type", Value: String("filesystem")},
				Pair{Key: "path", Value: String(filepath.Join(repoDir, ".swamp"))},
			)
			root.Set("datastore", ds)
		}
		ds.Set("namespace", String(ns))
	}
	return Marshal(jsonRoundTrip(root), StyleConfig)
}

// promoteLegacyTool mirrors the marker repository's handling of the legacy
// single `tool` key: read as `tools: [tool]` when `tools` is absent, never
// written back.
func promoteLegacyTool(root *Node) {
	tool, ok := root.Get("tool")
	if !ok {
		return
	}
	if _, has := root.Get("tools"); !has && tool.Kind == StringKind {
		root.Set("tools", Seq(String(tool.Str)))
	}
	root.Delete("tool")
}

// jsonRoundTrip is JSON.parse(JSON.stringify(v)) as swamp applies it before
// writing: Dates become ISO strings, non-finite numbers null, -0 zero.
func jsonRoundTrip(n *Node) *Node {
	switch n.Kind {
	case TimestampKind:
		return String(ISOString(n.Time))
	case NumberKind:
		if math.IsNaN(n.Num) || math.IsInf(n.Num, 0) {
			return Null()
		}
		if n.Num == 0 {
			return Number(0)
		}
		return Number(n.Num)
	case MapKind:
		out := &Node{Kind: MapKind, Pairs: make([]Pair, len(n.Pairs))}
		for i, p := range n.Pairs {
			out.Pairs[i] = Pair{Key: p.Key, Value: jsonRoundTrip(p.Value)}
		}
		return out
	case SeqKind:
		out := &Node{Kind: SeqKind, Items: make([]*Node, len(n.Items))}
		for i, item := range n.Items {
			out.Items[i] = jsonRoundTrip(item)
		}
		return out
	}
	c := *n
	return &c
}
