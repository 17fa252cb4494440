// Package repo is the swamp repo model: where the repo is, which datastore
// it uses and how every runtime path resolves (swamp-format §1), data
// addresses (swamp-format §2.1–2.2) and namespace manifests (swamp-format §1.5.1).
//
// All disk access goes through an fsx.FS.
package repo

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/swampj/swampj/fsx"
)

// Well-known names (swamp-format §1.1).
const (
	LocalDirName   = ".swamp"      // runtime directory in the repo root
	ConfigFileName = ".swamp.yaml" // repo marker / config
	CatalogName    = "_catalog.db"
	JournalName    = "_journal.db" // swampj's own journal, in the local tier
)

// CatalogPathOf is where the catalog of the repo at dir lives: always
// {repo}/.swamp/data/_catalog.db, in every mode (swamp-format §3.1). It needs no
// .swamp.yaml, so a startup hook can find it without parsing anything.
func CatalogPathOf(dir string) string { return filepath.Join(dir, LocalDirName, "data", CatalogName) }

// JournalPathOf is where swampj's journal of the repo at dir lives: in the
// local tier, outside every namespaced subdirectory, so no migration ever
// moves it.
func JournalPathOf(dir string) string { return filepath.Join(dir, LocalDirName, JournalName) }

// DefaultSubdirs is DEFAULT_DATASTORE_SUBDIRS, in swamp's order
// (datastore_config.ts:48-64, swamp-format §1.3). Migration and the "unmigrated data"
// checks iterate all 15, including the always-local ones (swamp-format §9.10).
var DefaultSubdirs = []string{
	"auto-definitions",
	"definitions-evaluated",
	"workflows-evaluated",
	"data",
	"outputs",
	"workflow-runs",
	"secrets",
	"bundles",
	"vault-bundles",
	"driver-bundles",
	"report-bundles",
	"audit",
	"telemetry",
	"logs",
	"files",
}

// AlwaysLocalSubdirs is ALWAYS_LOCAL_SUBDIRS (datastore_config.ts:36-42):
// never in the datastore tier, never namespaced, whatever `directories` says.
var AlwaysLocalSubdirs = []string{"secrets", "bundles", "vault-bundles", "driver-bundles", "report-bundles"}

// MergeableOnReverse are the four bundle directories that a reverse
// namespace migration tolerates at the un-namespaced path (swamp-format §4.2, §10.12).
var MergeableOnReverse = []string{"bundles", "vault-bundles", "driver-bundles", "report-bundles"}

// CatalogFiles is every name the catalog can have on disk: the database, its
// WAL-mode and rollback sidecars, and the compaction copy with its own
// sidecars (swamp-format §9.4, §11). They are one unit: never move or delete one alone.
var CatalogFiles = []string{
	"_catalog.db",
	"_catalog.db-wal",
	"_catalog.db-shm",
	"_catalog.db-journal",
	"_catalog.db.compact",
	"_catalog.db.compact-wal",
	"_catalog.db.compact-shm",
}

// CatalogCreatingPrefix starts the temp files in which swampj builds a new
// catalog beside it (catalog.CreationPrefix(CatalogName)).
const CatalogCreatingPrefix = "." + CatalogName + ".creating-"

// IsCatalogFile reports whether name (a base name) is one of CatalogFiles
// or a temp file of a catalog being created (CatalogCreatingPrefix), which
// is infrastructure like them: never data to migrate.
func IsCatalogFile(name string) bool {
	for _, c := range CatalogFiles {
		if name == c {
			return true
		}
	}
	return strings.HasPrefix(name, CatalogCreatingPrefix)
}

func isAlwaysLocal(subdir string) bool {
	for _, d := range AlwaysLocalSubdirs {
		if d == subdir {
			return true
		}
	}
	return false
}

// Repo is a resolved swamp repo: the configuration swamp would use for it,
// as .swamp.yaml said when Load read it. It is never updated in place. The
// namespace operations (migrate.SetNamespace, migrate.UnsetNamespace, migrate.Migrate)
// read the configuration again from disk before they plan, so a Repo loaded
// before a namespace change stays usable for them; every other function
// uses the Repo as given: Load again after changing the namespace.
type Repo struct {
	Dir        string // absolute repo directory (holds .swamp.yaml)
	ConfigPath string // {Dir}/.swamp.yaml
	RepoID     string // repoId from .swamp.yaml; "" if absent

	// Type is the datastore type; always "filesystem" for a loaded Repo
	// (other types are refused with ErrUnsupportedDatastore).
	Type string
	// Base is the absolute, un-namespaced datastore base directory.
	Base string
	// Namespace is the configured slug; "" is solo mode.
	Namespace string
	// Directories is the effective datastore-tier list: the configured
	// `directories` (or DefaultSubdirs) minus AlwaysLocalSubdirs (swamp-format §1.3).
	Directories []string
	// Exclude is the configured exclude globs, as written.
	Exclude []string
	// EnvOverride is true when SWAMP_DATASTORE chose the datastore; the
	// YAML block (namespace included) was then ignored (swamp-format §9.14).
	EnvOverride bool

	// DataRoot is resolvePath("data"): {Base}[/{ns}]/data, or the local
	// {Dir}/.swamp/data when "data" is not a tier directory or is excluded
	// (swamp-format §1.4, §9.15). DataLocal says which.
	DataRoot  string
	DataLocal bool

	LocalDir    string // {Dir}/.swamp, the local tier root
	CatalogPath string // always {Dir}/.swamp/data/_catalog.db (swamp-format §9.5)
	JournalPath string // {Dir}/.swamp/_journal.db

	exclude *ExcludeMatcher
}

// Find returns the nearest directory at or above start that holds
// .swamp.yaml. start is made absolute first (symlinks are not resolved, as
// swamp does not resolve them either).
//
// A directory on the way that holds swampj's journal (.swamp/_journal.db)
// but no .swamp.yaml is a repo whose configuration file is lost — a crash
// while it was being replaced can leave that — and Find stops there with
// a *ConfigLostError naming it, rather than climbing on to an outer repo
// or calling it no repo at all.
func Find(fsys fsx.FS, start string) (string, error) {
	fsys = fsx.OrReal(fsys)
	abs, err := filepath.Abs(start)
	if err != nil {
		return "", fmt.Errorf("resolving %s: %w", start, err)
	}
	dir := abs
	for {
		fi, err := fsys.Stat(filepath.Join(dir, ConfigFileName))
		switch {
		case err == nil && !fi.IsDir():
			return dir, nil
		case err == nil, errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
			// not here; keep climbing, unless swampj's journal says this
			// is a repo
			if jfi, jerr := fsys.Lstat(JournalPathOf(dir)); jerr == nil && !jfi.IsDir() {
				return "", &ConfigLostError{Dir: dir, Journal: JournalPathOf(dir)}
			}
		default:
			return "", fmt.Errorf("looking for %s in %s: %w", ConfigFileName, dir, err)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("%w: no %s in %s or any parent directory",
				ErrNotARepo, ConfigFileName, abs)
		}
		dir = parent
	}
}

// At returns dir, made absolute, when dir itself is a repo root: the
// directory holding .swamp.yaml. Unlike Find it never climbs: a directory
// that was named on purpose (swamp's --repo-dir and SWAMP_REPO_DIR) is the
// repo or it is an error, so a mistyped subdirectory is refused rather than
// quietly resolved to the repo around it, as swamp refuses it.
//
// A missing directory, a path that is not a directory and a directory
// without .swamp.yaml are each a *NotARepoError (matching ErrNotARepo)
// that says which; a directory holding swampj's journal but no .swamp.yaml is a
// *ConfigLostError, as for Find.
func At(fsys fsx.FS, dir string) (string, error) {
	fsys = fsx.OrReal(fsys)
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("resolving %s: %w", dir, err)
	}
	fi, err := fsys.Stat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", &NotARepoError{Dir: abs, Reason: "does not exist"}
	case err != nil:
		return "", fmt.Errorf("looking at %s: %w", abs, err)
	case !fi.IsDir():
		return "", &NotARepoError{Dir: abs, Reason: "is not a directory"}
	}
	cfg, err := fsys.Stat(filepath.Join(abs, ConfigFileName))
	switch {
	case err == nil && !cfg.IsDir():
		return abs, nil
	case err == nil, errors.Is(err, fs.ErrNotExist):
		if jfi, jerr := fsys.Lstat(JournalPathOf(abs)); jerr == nil && !jfi.IsDir() {
			return "", &ConfigLostError{Dir: abs, Journal: JournalPathOf(abs)}
		}
		return "", &NotARepoError{Dir: abs, Reason: "holds no " + ConfigFileName}
	default:
		return "", fmt.Errorf("looking for %s in %s: %w", ConfigFileName, abs, err)
	}
}

// LocalPath is {Dir}/.swamp/segs… — the local tier, never namespaced (swamp-format §1.4).
func (r *Repo) LocalPath(segs ...string) string {
	return filepath.Join(append([]string{r.LocalDir}, segs...)...)
}

// DatastorePath is {Base}[/{Namespace}]/segs… — the datastore tier; the
// namespace is always the outermost segment under the base (swamp-format §1.4).
func (r *Repo) DatastorePath(segs ...string) string {
	parts := []string{r.Base}
	if r.Namespace != "" {
		parts = append(parts, r.Namespace)
	}
	return filepath.Join(append(parts, segs...)...)
}

// InTier reports whether subdir belongs to the datastore tier.
func (r *Repo) InTier(subdir string) bool {
	if isAlwaysLocal(subdir) {
		return false
	}
	for _, d := range r.Directories {
		if d == subdir {
			return true
		}
	}
	return false
}

// ResolvePath is swamp's resolvePath(subdir, ...rest) (swamp-format §1.4): local when
// subdir is always-local or not a tier directory, or when subdir/rest… (with
// "/" separators) matches the exclude globs; otherwise in the datastore tier.
func (r *Repo) ResolvePath(subdir string, rest ...string) string {
	segs := append([]string{subdir}, rest...)
	if !r.InTier(subdir) || r.exclude.Excluded(filepath.ToSlash(filepath.Join(segs...))) {
		return r.LocalPath(segs...)
	}
	return r.DatastorePath(segs...)
}

// IsExcluded reports whether a "/"-separated path relative to the datastore
// root matches the configured exclude globs.
func (r *Repo) IsExcluded(rel string) bool { return r.exclude.Excluded(rel) }

// finish fills the derived fields once Dir, Base, Namespace, Directories and
// Exclude are known.
func (r *Repo) finish() {
	r.ConfigPath = filepath.Join(r.Dir, ConfigFileName)
	r.LocalDir = filepath.Join(r.Dir, LocalDirName)
	r.CatalogPath = CatalogPathOf(r.Dir)
	r.JournalPath = JournalPathOf(r.Dir)
	// The data repository resolves its root once, from the bare "data"
	// (repository_factory.ts:383-384): only a glob matching "data" itself
	// moves the tree local; per-file globs under data/ do nothing (swamp-format §9.15).
	r.DataLocal = !r.InTier("data") || r.exclude.Excluded("data")
	r.DataRoot = r.ResolvePath("data")
}

// envOrOS returns the lookup to use: the caller's, or the process environment.
func envOrOS(env func(string) string) func(string) string {
	if env != nil {
		return env
	}
	return os.Getenv
}
