package catalog_test

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The catalog knows SQL and rows, not the metadata model or anything else
// above it: no file of the package, tests included, imports a
// package of the ops tree. Rows are built from metadata in ops/catalogrow.
func TestCatalogImportsNothingAboveIt(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no Go files: %v", err)
	}
	for _, f := range files {
		af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range af.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(path, "github.com/swampj/swampj/ops") || strings.HasPrefix(path, "github.com/swampj/swampj/cmd") ||
				strings.HasPrefix(path, "github.com/swampj/swampj/recover") || strings.HasPrefix(path, "github.com/swampj/swampj/journal") {
				t.Errorf("%s imports %s: the catalog must not depend on the layers above it", f, path)
			}
		}
	}
}
