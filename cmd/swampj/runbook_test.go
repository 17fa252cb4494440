package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/swampj/swampj/ops/doctor"
)

// TestRunbookCoversEveryCode: every error code the CLI can print (the
// --json error codes) and every doctor finding code has a section in
// RUNBOOK.md — a heading that names it in backquotes. The codes are read
// from the source: literals returned by a Code() method, passed to
// withCode, returned by classify, and the catalog's and the doctor's code
// constants. The per-file problems of an unreadable version (ops/store,
// ops/meta) are details inside a finding, not codes of their own.
func TestRunbookCoversEveryCode(t *testing.T) {
	codes := sourceCodes(t, "../..")
	if len(codes) < 40 {
		t.Fatalf("found only %d codes in the source: the scan is broken", len(codes))
	}
	book, err := os.ReadFile("../../RUNBOOK.md")
	if err != nil {
		t.Fatal(err)
	}
	headed := map[string]bool{}
	quoted := regexp.MustCompile("`([a-z_]+)`")
	for _, line := range strings.Split(string(book), "\n") {
		if strings.HasPrefix(line, "#") {
			for _, m := range quoted.FindAllStringSubmatch(line, -1) {
				headed[m[1]] = true
			}
		}
	}
	var missing []string
	for c := range codes {
		if !headed[c] {
			missing = append(missing, c+" ("+codes[c]+")")
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Fatalf("RUNBOOK.md has no section heading naming these codes:\n  %s", strings.Join(missing, "\n  "))
	}
}

// sourceCodes maps each code to the file that defines it.
func sourceCodes(t *testing.T, root string) map[string]string {
	t.Helper()
	codes := map[string]string{}
	add := func(lit *ast.BasicLit, file string) {
		if lit == nil || lit.Kind != token.STRING {
			return
		}
		if s, err := strconv.Unquote(lit.Value); err == nil && regexp.MustCompile(`^[a-z][a-z_]+$`).MatchString(s) {
			codes[s] = file
		}
	}
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			if rel != "." && (rel == "ops/store" || rel == "ops/meta" || strings.HasPrefix(d.Name(), ".") || rel == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncDecl:
				if n.Name.Name == "Code" || n.Name.Name == "classify" {
					ast.Inspect(n.Body, func(m ast.Node) bool {
						if r, ok := m.(*ast.ReturnStmt); ok {
							for _, e := range r.Results {
								lit, _ := e.(*ast.BasicLit)
								add(lit, rel)
							}
						}
						return true
					})
				}
			case *ast.CallExpr:
				if id, ok := n.Fun.(*ast.Ident); ok && id.Name == "withCode" && len(n.Args) > 0 {
					lit, _ := n.Args[0].(*ast.BasicLit)
					add(lit, rel)
				}
			case *ast.ValueSpec:
				// const CodeX = "…" (catalog), DoctorX DoctorCode = "…"
				typed := false
				if id, ok := n.Type.(*ast.Ident); ok && id.Name == "DoctorCode" {
					typed = true
				}
				for i, name := range n.Names {
					if i < len(n.Values) && (typed || (strings.HasPrefix(name.Name, "Code") && strings.HasPrefix(rel, "catalog"))) {
						lit, _ := n.Values[i].(*ast.BasicLit)
						add(lit, rel)
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return codes
}

// TestRunbookDoctorTable: RUNBOOK.md's table of doctor findings
// has one row per code of the doctor's code table (doctor.Codes()), no
// row for a code it does not have, every cell filled, and each row's
// remedy names the code's usual remedy: its command, or its code where it
// is a person's action. The table and the code cannot drift apart.
func TestRunbookDoctorTable(t *testing.T) {
	book, err := os.ReadFile("../../RUNBOOK.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(book), "## Doctor findings, code by code")
	if !ok {
		t.Fatal("RUNBOOK.md has no section \"Doctor findings, code by code\"")
	}
	table, _, _ = strings.Cut(table, "\n## ")
	rows := map[string][]string{}
	row := regexp.MustCompile("^\\| `([a-z_]+)` \\|")
	for _, line := range strings.Split(table, "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if _, dup := rows[m[1]]; dup {
			t.Errorf("%s has two rows", m[1])
		}
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		rows[m[1]] = cells
	}
	for _, c := range doctor.Codes() {
		cells, ok := rows[string(c.Code)]
		delete(rows, string(c.Code))
		if !ok {
			t.Errorf("doctor code %s has no row in RUNBOOK.md's table of doctor findings", c.Code)
			continue
		}
		if len(cells) != 4 {
			t.Errorf("%s: want 4 cells (code, cause, what it means for swamp, remedy), got %d", c.Code, len(cells))
			continue
		}
		for i, cell := range cells {
			if strings.TrimSpace(cell) == "" {
				t.Errorf("%s: cell %d is empty", c.Code, i+1)
			}
		}
		wants := []string{"`" + string(c.Remedy) + "`"}
		for _, cmd := range printedCommands(remedyHint(c.Remedy)) {
			wants = append(wants, "`swampj "+strings.Join(cmd, " ")+"`")
		}
		for _, want := range wants {
			if !strings.Contains(cells[3], want) {
				t.Errorf("%s: the remedy cell does not name its usual remedy %s: %s", c.Code, want, cells[3])
			}
		}
	}
	for code := range rows {
		t.Errorf("RUNBOOK.md's table of doctor findings has a row for %s, which the doctor does not report", code)
	}
}
