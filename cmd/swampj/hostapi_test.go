package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// hostAPI are the packages of this module a host program is meant to
// import, each with what it is for (docs/design.md, "The host API"). The
// CLI is a host like any other: it reaches the engine through them only.
var hostAPI = map[string]string{
	"":                 "the error vocabulary: Coded, Class, Next",
	"recover":          "the startup hook, and the journal's inspection",
	"ops":              "recovery and the description of a journaled step",
	"ops/write":        "writing versions",
	"ops/migrate":      "the namespace and its migration",
	"ops/read":         "reading versions, models and changes",
	"ops/doctor":       "checking and repairing: the findings, statuses and report of every datastore kind",
	"ops/doctor/cache": "checking and repairing an S3 or GCS datastore's local cache (its errors: the bucket lock, a rolled-back repair)",
	"ops/catalogsync":  "verifying and rebuilding swamp's catalog",
	"ops/report":       "what the protocols share: progress, remedies, open intents",
	"ops/wrapped":      "running a command under the write barrier, and the run guard of a remote datastore",
	"ops/repo":         "finding and loading a repo, and the addresses in it",
	"ops/example":      "writing the example repo (the demo) and synthetic ones",
	"ops/host":         "host.Common, the options every journaled command shares",
	"ops/meta":         "swamp's metadata: the values of a write's options (ops/write's Options hold them)",
	"fsx":              "the type of every options value's FS (the crash tests' kill points go in through it): only the names in hostFSX",
}

// hostFSX are the names of fsx the CLI may use: the disk it hands to the
// host packages, the reading of a write's input (interruptible, its
// failures told apart from the datastore's) and the description of a
// refused permission.
var hostFSX = map[string]bool{
	"FS": true, "Real": true, "WithKillPoint": true, "KillPending": true,
	"File": true, "InterruptibleReader": true, "SourceError": true,
	"DescribeAccess": true,
	// The trust boundary: a host holds its disk to the repo it works on.
	"Confined": true, "NewConfined": true, "Reroot": true,
}

// TestCLIImportsOnlyTheHostAPI fails when a non-test file of cmd/swampj
// imports a package of this module that is not in hostAPI, or uses a name
// of fsx that is not in hostFSX.
func TestCLIImportsOnlyTheHostAPI(t *testing.T) {
	const module = "github.com/swampj/swampj"
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		af, err := parser.ParseFile(token.NewFileSet(), f, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		ast.Inspect(af, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if x, ok := sel.X.(*ast.Ident); ok && x.Name == "fsx" && !hostFSX[sel.Sel.Name] {
					t.Errorf("%s uses fsx.%s: reach the disk through a host package", f, sel.Sel.Name)
				}
			}
			return true
		})
		for _, imp := range af.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if p != module && !strings.HasPrefix(p, module+"/") {
				continue
			}
			rel := strings.TrimPrefix(strings.TrimPrefix(p, module), "/")
			if _, ok := hostAPI[rel]; !ok {
				t.Errorf("%s imports %s, which is not a package of the host API: reach it through one that is", f, p)
			}
		}
	}
	if checked < 10 {
		t.Fatalf("checked only %d files", checked)
	}
}
