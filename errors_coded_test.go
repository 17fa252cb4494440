package swampj_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryCodedErrorHasAClass: every type in the module with a Code method
// has a Class method beside it, so it is a swampj.Coded and the CLI's exit
// code comes from it. A type with a Code but no Class would be skipped by
// errors.As(err, &coded) and exit as a plain failure, its code lost.
func TestEveryCodedErrorHasAClass(t *testing.T) {
	code, class := map[string]string{}, map[string]bool{}
	err := filepath.WalkDir(".", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && p != "." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, 0)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || len(fn.Recv.List) != 1 {
				continue
			}
			recv := fn.Recv.List[0].Type
			if star, ok := recv.(*ast.StarExpr); ok {
				recv = star.X
			}
			id, ok := recv.(*ast.Ident)
			if !ok {
				continue
			}
			key := filepath.Dir(p) + "." + id.Name
			switch fn.Name.Name {
			case "Code":
				code[key] = p
			case "Class":
				class[key] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(code) < 40 {
		t.Fatalf("found only %d types with a Code method: the scan is broken", len(code))
	}
	for key, file := range code {
		if !class[key] {
			t.Errorf("%s (%s) has a Code method but no Class: it is not a swampj.Coded", key, file)
		}
	}
}
