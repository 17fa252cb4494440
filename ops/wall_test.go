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

// hostFacing is everything ops may export: what a host program uses to
// open a repo and then recover, write, read, migrate, doctor, rebuild and
// verify — the entry points, their options, results and typed errors.
// A new export goes here only if a host needs it; the executor's machinery
// (steps, kinds, the dirty set, the loop itself) lives in ops/internal/engine.
var hostFacing = strings.Fields(`
	Recover PreviewRecovery RecoverOptions IntentOutcome StepView DescribeStep RemoveCrashLeftovers
	WriteVersions WriteOptions VersionWrite WrittenVersion WriteFailedError InvalidWriteError ErrInvalidWrite
	InputChangedError UnmigratedWriteError IntentKindVersionWrite
	DefaultContentType DefaultDataType DefaultGC DefaultLifetime DefaultOwnerRef OwnerModelMethod
	OpenData DataContent DataVersions DataVersion DataItem DataGroup ListData GroupByModel ModelData
	ChangedItems ResolveItem ResolveModel Model ModelNotFoundError AmbiguousModelError Workflow
	DataNotFoundError UnreadableDataError UnreadableVersion UnmigratedError
	SetNamespace UnsetNamespace PreviewUnsetNamespace UnsetPreview NamespaceOptions SetResult UnsetResult ListNamespaceManifests NamespaceListing
	NamespaceEntry ForeignNamespace AlreadySetError NamespaceTakenError ReservedNamespaceError NoNamespaceError
	MultipleNamespacesError ForeignNamespacesError NamespaceChangedError EnvOverrideError BaseMissingError
	Migrate MigrateOptions MigrateResult MigratePreview MigrateCompleted MigrateWarning MigrateFailedError MigrateInterruptedError
	DirectoryMove CollisionError CrossDeviceError NotADirectoryError SymlinkedPathError OwnerMismatchError
	Doctor DoctorOptions DoctorReport DoctorCheck DoctorCode DoctorFinding DoctorInFlight DoctorMove
	DoctorRepairError DoctorStatus SwampCheck Problem DataProblem ItemProblem LockChangedError IntentKindRepair
	DoctorCatalogCopy DoctorCatalogLatestWrong DoctorCatalogRowUnreadable DoctorCatalogStale DoctorCatalogUnusable
	DoctorDirectoryUnreadable DoctorFound DoctorJournalHolderStale DoctorLatestDamaged DoctorLatestNotFound
	DoctorLatestUnreadable DoctorLockDead DoctorManual DoctorOpenIntent DoctorRecordUnreadable DoctorRepaired
	DoctorSkipped DoctorStagingLeftover DoctorSwampCheck DoctorVersionUnreadable DoctorWouldRepair DoctorLocalDirHidden
	SwampCheckCompleteness SwampCheckContamination SwampCheckHealth SwampCheckMigration
	RebuildCatalog VerifyCatalog CatalogOptions CatalogReport CatalogCounts RebuildTimings CatalogHandle OpenCatalog StaleNamespace
	ExpectedRows ExpectedOptions Expected CodeRowInvalid CodeTypeNotNormalized
	Progress ProgressEvent
	Remedy RemedyRecover RemedyRecoverOrRollback RemedyRebuildCatalog RemedyMigrate RemedyMigrateReverse
	RemedyUnsetMigrate RemedyUnsetNamespace RemedyRepair RemedyNone RemedyFixAccess RemedyInspect RemedySwampUpgrade RemedyMountReadWrite
	RemedyRetry RemedyCheckAgain DoctorNotice DoctorOutcome DoctorAction DoctorClean DoctorRepairedAll DoctorRepairable
	DoctorBusy DoctorManualLeft DoctorNoticeNote DoctorNoticeWarning
	ErrBusy ErrNotARepo ErrConflict ErrStepFailed IsConflict OpenIntentsError UnfinishedIntentError IntentStillOpenError
`)

// executorNames are the executor's own names: none may come back to ops,
// whatever the allow-list says.
var executorNames = strings.Fields(`
	Execute Drive Record LiveApply Dirty Env Describe MissingDirs StepProgress CatalogStep MoveStampStep
	RemoveFileStep ErrCannotRedo Observation Prepared CatalogOpener RepoCatalog ReportCatalog CatalogChange
	Result StepError ConflictError RecoverOpen PreviewOpen Register Kinds
`)

// TestOpsExportsOnlyHostFacingNames keeps the wall up: go doc ./ops lists
// the host's API and nothing of the executor — no executor name, no step
// kind, no declaration that mentions ops/internal/engine (a host cannot
// name those types, so an exported field or signature holding one is
// unusable and leaks the machinery).
func TestOpsExportsOnlyHostFacingNames(t *testing.T) {
	checkWall(t, ".", "github.com/swampj/swampj/ops", hostFacing)
}

// TestRecoverExportsOnlyHostFacingNames: the same for package recover.
func TestRecoverExportsOnlyHostFacingNames(t *testing.T) {
	checkWall(t, "../recover", "github.com/swampj/swampj/recover",
		strings.Fields("Run Options Report JournalPath PendingError OpenError LeftoversError MarksLostError BlockedError ErrBusy ErrNotARepo"))
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
