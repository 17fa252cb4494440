package engine_test

import (
	"go/build"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/swampj/swampj"

// executorDeps are the only packages of the module the executor may build
// on: the errors every layer shares, the one door to the disk, and the
// journal it runs. A protocol's package (a lock, a repo layout, a store,
// the catalog, the step kinds of ops/internal/protocol) is what the
// executor runs without knowing it.
var executorDeps = map[string]bool{
	module:              true,
	module + "/fsx":     true,
	module + "/journal": true,
}

// moduleDeps is every package of the module that importPath builds on,
// directly or not (test files left out, as a build sees them), each with
// the import chain that brings it in.
func moduleDeps(t *testing.T, importPath string) map[string]string {
	t.Helper()
	chains := map[string]string{}
	var walk func(path, chain string)
	walk = func(path, chain string) {
		p, err := build.Import(path, ".", 0)
		if err != nil {
			t.Fatalf("%s: %v", chain, err)
		}
		for _, imp := range p.Imports {
			if imp != module && !strings.HasPrefix(imp, module+"/") {
				continue
			}
			if _, seen := chains[imp]; seen {
				continue
			}
			chains[imp] = chain + " -> " + imp
			walk(imp, chains[imp])
		}
	}
	walk(importPath, importPath)
	return chains
}

// TestEngineImportsNoDomainPackage keeps the executor protocol-free: what
// ops/internal/engine builds on, directly or not, is only the errors
// package, fsx and journal — never ops/lock, meta, store, repo,
// catalogrow, catalog or the kinds' own package.
func TestEngineImportsNoDomainPackage(t *testing.T) {
	deps := moduleDeps(t, module+"/ops/internal/engine")
	var names []string
	for p := range deps {
		names = append(names, p)
	}
	sort.Strings(names)
	for _, p := range names {
		if !executorDeps[p] {
			t.Errorf("ops/internal/engine imports %s (%s): the executor knows no protocol; "+
				"move what needs it to ops/internal/protocol and reach it through engine.Kind or engine.Protocols", p, deps[p])
		}
	}
}
