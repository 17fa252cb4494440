package swampj_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// cliText matches what only the CLI may say: one of its commands
// ("swampj recover", "swampj catalog rebuild") or a long flag ("--confirm").
var cliText = regexp.MustCompile(`swampj (recover|doctor|catalog (verify|rebuild)|data (list|get|write|versions|put)|datastore|journal (list|show)|run|demo|completion|help)\b|(^|[\s'"(\x60])--[a-z][a-z-]+`)

// cliTextAllowed are the string literals of library packages that may name
// a command or flag, each with why. Keys are "path: literal prefix".
var cliTextAllowed = map[string]string{
	"ops/wrapped/remoteguard.go: --pull":                     "swamp's own flag: the run guard runs `swamp datastore sync --pull` before the command",
	"ops/wrapped/remoteguard.go: %s datastore sync --pull: ": "the failure of that swamp command, named as it was run",
}

// Library packages say what happened and what is true on disk; which
// command or flag to use is the CLI's to add (cmd/swampj, cliHint and the
// remedy renderers). Every string literal of every non-test file outside
// cmd/ is checked.
func TestLibraryTextNamesNoCLICommandOrFlag(t *testing.T) {
	checked := 0
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || p == "cmd") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") || strings.Contains(p, "fsxtest") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, p, src, 0)
		if err != nil {
			return err
		}
		checked++
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil || !cliText.MatchString(s) {
				return true
			}
			for key := range cliTextAllowed {
				if path, prefix, _ := strings.Cut(key, ": "); path == filepath.ToSlash(p) && strings.HasPrefix(s, prefix) {
					return true
				}
			}
			t.Errorf("%s: %q names a CLI command or flag; return the remedy as data and let cmd/swampj render it", fset.Position(lit.Pos()), s)
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 50 {
		t.Fatalf("checked only %d files", checked)
	}
}
