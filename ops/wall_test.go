package ops_test

import (
	"bytes"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/printer"
	"go/token"
	"io/fs"
	"os"
	"sort"
	"strings"
	"testing"
)

// exportedDecls parses the package in dir as go doc sees it (test files
// left out) and returns its exported top-level names — constants,
// variables, functions, types and the functions go doc lists under a
// type — each with the source text of its declaration.
func exportedDecls(t *testing.T, dir, importPath string) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, e := range ents {
		if n := e.Name(); strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") && e.Type()&fs.ModeType == 0 {
			f, err := parser.ParseFile(fset, dir+"/"+n, nil, parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
	}
	p, err := doc.NewFromFiles(fset, files, importPath)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	src := func(n ast.Node) string {
		var b bytes.Buffer
		_ = printer.Fprint(&b, fset, n)
		return b.String()
	}
	values := func(vs []*doc.Value) {
		for _, v := range vs {
			for _, n := range v.Names {
				if ast.IsExported(n) {
					out[n] = src(v.Decl)
				}
			}
		}
	}
	funcs := func(fs []*doc.Func) {
		for _, f := range fs {
			out[f.Name] = src(f.Decl)
		}
	}
	values(p.Consts)
	values(p.Vars)
	funcs(p.Funcs)
	for _, ty := range p.Types {
		out[ty.Name] = src(ty.Decl)
		values(ty.Consts)
		values(ty.Vars)
		funcs(ty.Funcs)
		for _, m := range ty.Methods {
			// A method's signature may leak an internal type too.
			out[ty.Name+"."+m.Name] = src(m.Decl)
		}
	}
	return out
}

// hostFacing is, per package, everything the host's API may export: what a
// host program uses to open a repo and then recover (ops), write
// (ops/write), read (ops/read) and migrate (ops/migrate) — the entry
// points, their options, results and typed errors. The doctor, the catalog
// sync and the shared vocabulary (progress, remedies, problems) keep their
// names in ops/doctor, ops/catalogsync and ops/report. A new export goes
// here only if a host needs it; the executor's machinery (steps, kinds, the
// dirty set, the loop itself) lives in ops/internal/engine.
var hostFacing = map[string]string{
	"": `Recover PreviewRecovery InspectRecovery RecoverOptions Recovery RecoveryError RecoveryPhase PhaseOpen PhaseRead PhaseRecover PhaseLeftovers PhaseClose Pending DescribeStep RemoveCrashLeftovers IsConflict CloseBucketClients Doctor`,
	"write": `WriteVersions Open Handle ErrHandleClosed WriteOptions VersionWrite WrittenVersion WriteFailedError InvalidWriteError ErrInvalidWrite
		InputChangedError UnmigratedWriteError UnmigratedData NamespaceChangedError OwnerMismatchError IntentKindVersionWrite Workflow
		DefaultContentType DefaultDataType DefaultGC DefaultLifetime DefaultOwnerRef OwnerModelMethod`,
	"read": `OpenData DataContent DataVersions DataVersion DataItem DataGroup ListData GroupByModel ModelData
		ChangedItems ResolveItem ResolveModel Model ModelName CurrentVersion ModelNotFoundError AmbiguousModelError
		DataNotFoundError UnreadableDataError`,
	"migrate": `Migrate MigrateOptions MigrateResult MigratePreview MigrateCompleted MigrateWarning MigrateFailedError
		MigrateInterruptedError DirectoryMove CollisionError CrossDeviceError NotADirectoryError SymlinkedPathError
		SetNamespace UnsetNamespace PreviewUnsetNamespace UnsetPreview NamespaceOptions SetResult UnsetResult
		ListNamespaceManifests NamespaceListing NamespaceEntry AlreadySetError NamespaceTakenError ReservedNamespaceError
		NoNamespaceError MultipleNamespacesError ForeignNamespacesError EnvOverrideError BaseMissingError UnfinishedIntentError`,
}

// maxOpsExports bounds the ops root: a door with the entry points a host
// needs first, not a second home for the protocols' vocabulary.
const maxOpsExports = 40

// executorNames are the executor's own names: none may come back to ops,
// whatever the allow-list says.
var executorNames = strings.Fields(`
	Execute Drive Record LiveApply Dirty Env Describe MissingDirs StepProgress CatalogStep MoveStampStep
	RemoveFileStep ErrCannotRedo Observation Prepared CatalogOpener RepoCatalog ReportCatalog CatalogChange
	Result StepError ConflictError RecoverOpen PreviewOpen Register Kinds
`)

// TestOpsExportsOnlyHostFacingNames keeps the wall up: go doc of ops and
// of each protocol package lists the host's API and nothing of the
// executor — no executor name, no step kind, no declaration that mentions
// ops/internal/engine (a host cannot name those types, so an exported field
// or signature holding one is unusable and leaks the machinery).
func TestOpsExportsOnlyHostFacingNames(t *testing.T) {
	for sub, names := range hostFacing {
		dir, importPath := ".", "github.com/swampj/swampj/ops"
		if sub != "" {
			dir, importPath = sub, importPath+"/"+sub
		}
		checkWall(t, dir, importPath, strings.Fields(names))
	}
	if n := len(strings.Fields(hostFacing[""])); n > maxOpsExports {
		t.Errorf("ops exports %d names, more than %d: the protocols' names belong in their own packages", n, maxOpsExports)
	}
}

// TestOpsExportsNoAliases: a name lives in one package and is spelled one
// way. Neither ops nor a protocol package re-exports another package's
// type (type X = pkg.Y) or value (X = pkg.Y); callers name the package the
// name lives in.
func TestOpsExportsNoAliases(t *testing.T) {
	for sub := range hostFacing {
		dir := "."
		if sub != "" {
			dir = sub
		}
		for _, a := range exportedAliases(t, dir) {
			t.Errorf("ops/%s: %s is an alias; use the name where it lives", sub, a)
		}
	}
}

// exportedAliases lists the exported type aliases and the exported
// constants and variables whose value is only another package's name.
func exportedAliases(t *testing.T, dir string) []string {
	t.Helper()
	fset := token.NewFileSet()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		n := e.Name()
		if !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, dir+"/"+n, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, spec := range g.Specs {
				switch sp := spec.(type) {
				case *ast.TypeSpec:
					if sp.Name.IsExported() && sp.Assign.IsValid() {
						out = append(out, n+": type "+sp.Name.Name)
					}
				case *ast.ValueSpec:
					for i, name := range sp.Names {
						if !name.IsExported() || i >= len(sp.Values) {
							continue
						}
						if sel, ok := sp.Values[i].(*ast.SelectorExpr); ok {
							if _, ok := sel.X.(*ast.Ident); ok {
								out = append(out, n+": "+name.Name)
							}
						}
					}
				}
			}
		}
	}
	return out
}

// TestRecoverExportsOnlyHostFacingNames: the same for package recover
// (the startup hook, and the inspection of the journal: List, Show, ShowRun, Hold).
func TestRecoverExportsOnlyHostFacingNames(t *testing.T) {
	checkWall(t, "../recover", "github.com/swampj/swampj/recover",
		strings.Fields("Run Options Report JournalPath PendingError OpenError LeftoversError MarksLostError BlockedError ErrBusy ErrNotARepo "+
			"DefaultJournalLockTimeout InspectOptions List Listing ListedIntent ListedRun Show ShowRun Hold"))
}

func checkWall(t *testing.T, dir, importPath string, allowed []string) {
	allow := map[string]bool{}
	for _, n := range allowed {
		allow[n] = true
	}
	executor := map[string]bool{}
	for _, n := range executorNames {
		executor[n] = true
	}
	decls := exportedDecls(t, dir, importPath)
	var names []string
	for n := range decls {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		_, _, isMethod := strings.Cut(n, ".")
		switch {
		case !isMethod && (executor[n] || strings.HasPrefix(n, "Kind")):
			t.Errorf("%s exports %s, a name of the executor: it belongs in ops/internal/engine", importPath, n)
		case !isMethod && !allow[n]:
			t.Errorf("%s exports %s, which is not on the host-facing list: add it to the list in wall_test.go if a host program needs it, else unexport it or move it behind ops/internal", importPath, n)
		}
		if strings.Contains(decls[n], "engine.") {
			t.Errorf("%s: the exported declaration of %s mentions the internal engine, which a host cannot name:\n%s", importPath, n, decls[n])
		}
	}
	for _, n := range allowed {
		if _, ok := decls[n]; !ok {
			t.Errorf("%s no longer exports %s: take it off the host-facing list", importPath, n)
		}
	}
}

// fsArgumentAllowed are the exported functions of the host's packages that
// still take an fsx.FS argument, each for a reason: a constructor (the
// file system is given once, when the value is made), or a helper of
// ops/write's, whose signatures change with it.
var fsArgumentAllowed = map[string]bool{
	"ops/catalogsync.OpenHandle":     true, // a constructor
	"ops/catalogsync.OpenLazyHandle": true, // a constructor (ops/write's handle)
	"ops/read.CurrentVersion":        true, // ops/write's
	"ops/read.ModelName":             true, // ops/write's
}

// TestHostEntryPointsTakeNoFS: a host never passes a file system to an
// entry point. The file system is a test seam; it rides in the options
// (host.Common.FS, nil: the real disk), so a host writes
// recover.Run(ctx, dir, opts), doctor.Run(ctx, r, opts) and
// cache.Run(ctx, c, opts).
func TestHostEntryPointsTakeNoFS(t *testing.T) {
	dirs := map[string]string{".": "ops", "doctor": "ops/doctor", "doctor/cache": "ops/doctor/cache", "catalogsync": "ops/catalogsync",
		"migrate": "ops/migrate", "read": "ops/read", "write": "ops/write", "../recover": "recover"}
	checked := 0
	for dir, pkg := range dirs {
		fset := token.NewFileSet()
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			n := e.Name()
			if !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, dir+"/"+n, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range f.Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok || !fd.Name.IsExported() {
					continue
				}
				checked++
				name := pkg + "." + fd.Name.Name
				for _, p := range fd.Type.Params.List {
					if sel, ok := p.Type.(*ast.SelectorExpr); ok && sel.Sel.Name == "FS" && !fsArgumentAllowed[name] {
						t.Errorf("%s takes an fsx.FS argument: the file system goes in the options (host.Common.FS)", name)
					}
				}
			}
		}
	}
	if checked < 20 {
		t.Fatalf("checked only %d exported functions; is the test reading the source?", checked)
	}
}
