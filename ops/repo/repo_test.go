package repo

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/swampyaml"
)

// newRepo makes a temp repo with the given .swamp.yaml content and returns
// its (symlink-free) directory.
func newRepo(t *testing.T, yaml string) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ConfigFileName), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// envMap is an env lookup over a fixed map.
func envMap(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func load(t *testing.T, dir string, env map[string]string) *Repo {
	t.Helper()
	r, err := Load(fsx.Real(), dir, envMap(env))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return r
}

func loadErr(t *testing.T, dir string, env map[string]string) error {
	t.Helper()
	r, err := Load(fsx.Real(), dir, envMap(env))
	if err == nil {
		t.Fatalf("Load succeeded (%+v), want an error", r)
	}
	return err
}

const defaultMarker = `swampVersion: 20261022.021804.0-sha.983e2929
initializedAt: "2026-08-01T12:00:00.000Z"
repoId: 5b0c9e2a-7f4d-4e1b-9a3c-2d8e6f1a0b7c
tools:
  - claude
gitignoreManaged: true
`

var tierDefaults = []string{"auto-definitions", "definitions-evaluated", "workflows-evaluated", "data",
	"outputs", "workflow-runs", "audit", "telemetry", "logs", "files"}

func TestConstants(t *testing.T) {
	if len(DefaultSubdirs) != 15 || DefaultSubdirs[0] != "auto-definitions" || DefaultSubdirs[3] != "data" || DefaultSubdirs[14] != "files" {
		t.Errorf("DefaultSubdirs = %v", DefaultSubdirs)
	}
	for _, n := range []string{"_catalog.db", "_catalog.db-wal", "_catalog.db-shm", "_catalog.db-journal",
		"_catalog.db.compact", "_catalog.db.compact-wal", "_catalog.db.compact-shm"} {
		if !IsCatalogFile(n) {
			t.Errorf("IsCatalogFile(%q) = false", n)
		}
	}
	for _, n := range []string{"_catalog.dbx", "catalog.db", "_catalog.db-wal.bak", ""} {
		if IsCatalogFile(n) {
			t.Errorf("IsCatalogFile(%q) = true", n)
		}
	}
}

func TestLoadDefaults(t *testing.T) {
	dir := newRepo(t, defaultMarker)
	r := load(t, dir, nil)
	local := filepath.Join(dir, ".swamp")
	want := &Repo{
		Dir: dir, ConfigPath: filepath.Join(dir, ".swamp.yaml"), RepoID: "5b0c9e2a-7f4d-4e1b-9a3c-2d8e6f1a0b7c",
		Type: "filesystem", Base: local, Directories: tierDefaults,
		DataRoot: filepath.Join(local, "data"), LocalDir: local,
		CatalogPath: filepath.Join(local, "data", "_catalog.db"), JournalPath: filepath.Join(local, "_journal.db"),
	}
	r.exclude, want.exclude = nil, nil
	if !reflect.DeepEqual(r, want) {
		t.Errorf("Load =\n %+v\nwant\n %+v", r, want)
	}
	if got := r.ResolvePath("secrets", "k"); got != filepath.Join(local, "secrets", "k") {
		t.Errorf("ResolvePath(secrets) = %s", got)
	}
}

func TestLoadEmptyFile(t *testing.T) {
	dir := newRepo(t, "")
	r := load(t, dir, nil)
	if r.Base != filepath.Join(dir, ".swamp") || r.Namespace != "" || r.RepoID != "" {
		t.Errorf("empty marker: %+v", r)
	}
}

func TestLoadExternalBaseWithVarsAndTilde(t *testing.T) {
	for _, tc := range []struct{ path, want string }{
		{"$SHARED/swamp-data", "/srv/shared/swamp-data"},
		{"${SHARED}/x/../swamp-data", "/srv/shared/swamp-data"},
		{"~/swamp-data", "/home/alice/swamp-data"},
		{`"~"`, "/home/alice"},             // quoted: a bare ~ is YAML null
		{"/data/~/$1x/$", "/data/~/$1x/$"}, // ~ only at the start; "$" without a name is literal
		{"/a/${NOPE/b", "/a/${NOPE/b"},
	} {
		dir := newRepo(t, "datastore:\n  type: filesystem\n  path: "+tc.path+"\n  namespace: infra\n")
		r := load(t, dir, map[string]string{"SHARED": "/srv/shared", "HOME": "/home/alice"})
		if r.Base != tc.want {
			t.Errorf("path %q: Base = %s, want %s", tc.path, r.Base, tc.want)
		}
		if r.Namespace != "infra" || r.DataRoot != filepath.Join(tc.want, "infra", "data") {
			t.Errorf("path %q: ns %q DataRoot %s", tc.path, r.Namespace, r.DataRoot)
		}
		if r.CatalogPath != filepath.Join(dir, ".swamp", "data", "_catalog.db") {
			t.Errorf("CatalogPath moved: %s", r.CatalogPath)
		}
	}
}

func TestLoadUnsetVariable(t *testing.T) {
	dir := newRepo(t, "datastore:\n  type: filesystem\n  path: ${MISSING_DIR}/d\n")
	err := loadErr(t, dir, map[string]string{"MISSING_DIR": ""})
	if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), `"MISSING_DIR"`) {
		t.Errorf("err = %v", err)
	}
	dir = newRepo(t, "datastore:\n  type: filesystem\n  path: ~/d\n")
	if err := loadErr(t, dir, nil); !strings.Contains(err.Error(), "HOME") {
		t.Errorf("err = %v", err)
	}
}

func TestLoadRelativePath(t *testing.T) {
	dir := newRepo(t, "datastore:\n  type: filesystem\n  path: ../shared/store\n")
	r := load(t, dir, nil)
	if want := filepath.Join(filepath.Dir(dir), "shared", "store"); r.Base != want {
		t.Errorf("Base = %s, want %s", r.Base, want)
	}
	// Load resolves a relative repo dir too.
	wd, _ := os.Getwd()
	rel, err := filepath.Rel(wd, dir)
	if err != nil {
		t.Skip(err)
	}
	r2 := load(t, rel, nil)
	if r2.Dir != dir {
		t.Errorf("Dir = %s, want %s", r2.Dir, dir)
	}
}

func TestLoadEnvOverride(t *testing.T) {
	dir := newRepo(t, "datastore:\n  type: filesystem\n  path: /elsewhere\n  namespace: infra\n  directories: [data]\n  exclude: [\"data\"]\n")
	r := load(t, dir, map[string]string{"SWAMP_DATASTORE": "filesystem:$ROOT/ds", "ROOT": "/mnt"})
	if !r.EnvOverride || r.Base != "/mnt/ds" || r.Namespace != "" || r.Exclude != nil ||
		!reflect.DeepEqual(r.Directories, tierDefaults) || r.DataRoot != "/mnt/ds/data" {
		t.Errorf("override: %+v", r)
	}
	r = load(t, dir, map[string]string{"SWAMP_DATASTORE": "filesystem:rel"})
	if r.Base != filepath.Join(dir, "rel") {
		t.Errorf("relative override Base = %s", r.Base)
	}
	// The override wins even over a datastore block swampj cannot use.
	dir2 := newRepo(t, "datastore:\n  type: \"@swamp/s3-datastore\"\n")
	if r := load(t, dir2, map[string]string{"SWAMP_DATASTORE": "filesystem:/x"}); r.Base != "/x" {
		t.Errorf("Base = %s", r.Base)
	}
	for _, v := range []string{"nocolon", "filesystem:"} {
		if err := loadErr(t, dir, map[string]string{"SWAMP_DATASTORE": v}); !errors.Is(err, ErrConfig) {
			t.Errorf("SWAMP_DATASTORE=%s: %v", v, err)
		}
	}
	err := loadErr(t, dir, map[string]string{"SWAMP_DATASTORE": "s3:bucket/prefix"})
	var u *UnsupportedDatastoreError
	if !errors.As(err, &u) || u.Resolved != "@swamp/s3-datastore" || !errors.Is(err, ErrUnsupportedDatastore) {
		t.Errorf("s3 override: %v", err)
	}
}

func TestLoadUnsupportedTypes(t *testing.T) {
	for _, typ := range []string{"s3", `"@swamp/s3-datastore"`, `"@acme/gcs"`} {
		dir := newRepo(t, "datastore:\n  type: "+typ+"\n  bucket: b\n")
		err := loadErr(t, dir, nil)
		var u *UnsupportedDatastoreError
		if !errors.As(err, &u) || !strings.Contains(err.Error(), "filesystem datastores") {
			t.Errorf("type %s: %v", typ, err)
		}
		if u != nil && u.Type != strings.Trim(typ, `"`) {
			t.Errorf("recorded type %q", u.Type)
		}
	}
}

func TestLoadDirectoriesAndExclude(t *testing.T) {
	dir := newRepo(t, "datastore:\n  type: filesystem\n  path: /srv/swamp\n  directories: [data, outputs, secrets]\n  exclude: [\"telemetry/**\", \"data/**/*.tmp\"]\n")
	r := load(t, dir, nil)
	if !reflect.DeepEqual(r.Directories, []string{"data", "outputs"}) {
		t.Errorf("Directories = %v (always-local secrets must go)", r.Directories)
	}
	if r.DataRoot != "/srv/swamp/data" || r.DataLocal {
		t.Errorf("per-file globs under data/ must not move the data root (swamp-format §9.15): %s", r.DataRoot)
	}
	if got := r.ResolvePath("audit"); got != filepath.Join(dir, ".swamp", "audit") {
		t.Errorf("audit not in directories → local, got %s", got)
	}
	if got := r.ResolvePath("outputs", "x"); got != "/srv/swamp/outputs/x" {
		t.Errorf("outputs → %s", got)
	}

	// data narrowed away → local data root, even with a namespace.
	dir = newRepo(t, "datastore:\n  type: filesystem\n  path: /srv/swamp\n  namespace: infra\n  directories: [outputs]\n")
	r = load(t, dir, nil)
	if r.DataRoot != filepath.Join(dir, ".swamp", "data") || !r.DataLocal {
		t.Errorf("DataRoot = %s", r.DataRoot)
	}
	// An explicitly empty list means nothing is in the tier.
	dir = newRepo(t, "datastore:\n  type: filesystem\n  path: /srv/swamp\n  directories: []\n")
	if r = load(t, dir, nil); len(r.Directories) != 0 || !r.DataLocal {
		t.Errorf("empty directories: %v, local %v", r.Directories, r.DataLocal)
	}
	// A glob matching "data" itself moves the whole data tree local.
	for _, g := range []string{"data", "d?ta", "*", "**", "[d]ata"} {
		dir = newRepo(t, "datastore:\n  type: filesystem\n  path: /srv/swamp\n  exclude: [\""+g+"\"]\n")
		if r = load(t, dir, nil); r.DataRoot != filepath.Join(dir, ".swamp", "data") {
			t.Errorf("exclude %q: DataRoot = %s", g, r.DataRoot)
		}
	}
	// ... unless a later negation re-includes it.
	dir = newRepo(t, "datastore:\n  type: filesystem\n  path: /srv/swamp\n  exclude: [\"*\", \"!data\"]\n")
	if r = load(t, dir, nil); r.DataRoot != "/srv/swamp/data" {
		t.Errorf("negated: DataRoot = %s", r.DataRoot)
	}
}

func TestLoadBadConfigs(t *testing.T) {
	for _, tc := range []struct{ name, yaml, want string }{
		{"syntax", "datastore:\n  type: filesystem\n   path: [oops\n", "not valid YAML"},
		{"tabs", "datastore:\n\ttype: filesystem\n", "not valid YAML"},
		{"duplicate key", "repoId: a\nrepoId: b\n", "already defined"},
		{"two documents", "repoId: a\n---\nrepoId: b\n", "exactly one YAML document"},
		{"not a mapping", "- a\n- b\n", "mapping"},
		{"removed defaultDriver", "defaultDriver: x\n", "defaultDriver"},
		{"removed defaultDriverConfig", "defaultDriverConfig: {}\n", "defaultDriverConfig"},
		{"no type", "datastore:\n  path: /x\n", "datastore.type"},
		{"no path", "datastore:\n  type: filesystem\n", "requires a 'path'"},
		{"datastore scalar", "datastore: filesystem\n", "must be a mapping"},
		{"numeric namespace", "datastore:\n  type: filesystem\n  path: /x\n  namespace: 007\n", `quote it: "007"`},
		{"bad namespace", "datastore:\n  type: filesystem\n  path: /x\n  namespace: Infra\n", "Namespace must match"},
		{"directories scalar", "datastore:\n  type: filesystem\n  path: /x\n  directories: data\n", "list of strings"},
		{"bad glob", "datastore:\n  type: filesystem\n  path: /x\n  exclude: [\"[z-a]\"]\n", "not a valid glob"},
		{"expression", "datastore:\n  type: filesystem\n  path: \"${{ env.X }}\"\n", "expression"},
		{"sexagesimal path", "datastore:\n  type: filesystem\n  path: 1:30\n", `quote it: "1:30"`}, // swamp reads the number 90
		{"unknown tag anywhere", "telemetryEndpoint: !secret x\n", "not valid YAML"},               // swamp's parser refuses the file
		{"duplicate in the datastore block", "datastore:\n  type: filesystem\n  path: /x\n  path: /y\n", "already defined"},
	} {
		dir := newRepo(t, tc.yaml)
		err := loadErr(t, dir, nil)
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), ".swamp.yaml") {
			t.Errorf("%s: err = %v, want ErrConfig mentioning %q and the file", tc.name, err, tc.want)
		}
	}
	// The quoted numeric-looking slug is fine.
	dir := newRepo(t, "datastore:\n  type: filesystem\n  path: /x\n  namespace: \"007\"\n")
	if r := load(t, dir, nil); r.Namespace != "007" {
		t.Errorf("namespace = %q", r.Namespace)
	}
}

func TestLoadNotARepo(t *testing.T) {
	dir := t.TempDir()
	if _, err := Load(fsx.Real(), dir, nil); !errors.Is(err, ErrNotARepo) {
		t.Errorf("err = %v", err)
	}
}

func TestFind(t *testing.T) {
	dir := newRepo(t, defaultMarker)
	deep := filepath.Join(dir, "a", "b", "c")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	// A .swamp.yaml directory is not a marker.
	if err := os.Mkdir(filepath.Join(dir, "a", ".swamp.yaml"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, start := range []string{dir, deep, filepath.Join(dir, "a")} {
		got, err := Find(fsx.Real(), start)
		if err != nil || got != dir {
			t.Errorf("Find(%s) = %s, %v", start, got, err)
		}
	}
	// A nested repo wins over its parent.
	inner := filepath.Join(dir, "a", "b")
	if err := os.WriteFile(filepath.Join(inner, ".swamp.yaml"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, _ := Find(fsx.Real(), deep); got != inner {
		t.Errorf("nested: %s", got)
	}

	outside := t.TempDir()
	_, err := Find(fsx.Real(), outside)
	if !errors.Is(err, ErrNotARepo) || !strings.Contains(err.Error(), outside) || strings.Contains(err.Error(), "--repo") {
		t.Errorf("outside: %v", err)
	}
}

func TestExpandEnvPath(t *testing.T) {
	env := envMap(map[string]string{"A": "x", "A_B": "y", "HOME": "/h", "D": "$A"})
	for in, want := range map[string]string{
		"$A/$A_B":  "x/y", // names are greedy
		"${A}_B":   "x_B",
		"$A$A":     "xx",
		"$D":       "$A", // values are not expanded again
		"~/~":      "/h/~",
		"~x":       "~x", // only "~" alone or before "/"
		"a/$/b":    "a/$/b",
		"a/${}/b":  "a/${}/b",
		"a/${1}/b": "a/${1}/b",
	} {
		got, err := ExpandEnvPath(in, env)
		if err != nil || got != want {
			t.Errorf("ExpandEnvPath(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ExpandEnvPath("${NOPE}", env); err == nil || !strings.Contains(err.Error(), `"NOPE"`) {
		t.Errorf("unset: %v", err)
	}
}

// swamp writes a slug such as 09 or 0o17 unquoted (@std/yaml's stringify
// only quotes what its parser would not read back as a string, swamp-format §2.4.1), and
// its parser reads it back as that string. The .swamp.yaml below is
// byte-exact as `swamp datastore namespace set 09` (swamp 20260206) wrote it;
// swampj once read it with a second YAML parser, which took 09 for a float
// and refused the repo.
func TestLoadReadsSlugsSwampWritesUnquoted(t *testing.T) {
	for _, slug := range []string{"09", "0o17", "0X1F"} {
		dir := newRepo(t, "swampVersion: 20260206.200442.0\n"+
			"initializedAt: \"2026-12-01T13:32:44.272Z\"\n"+
			"repoId: 375462ea-e4ac-4b2e-9ba6-1c765c25fdcd\n"+
			"tools:\n  - claude\ngitignoreManaged: true\n"+
			"datastore:\n  type: filesystem\n  path: /srv/r/.swamp\n  namespace: "+slug+"\n")
		if slug == "0X1F" {
			// Not a slug (upper case); the value must still be read as the
			// string swamp reads, so the refusal is the slug rule's.
			if err := loadErr(t, dir, nil); !strings.Contains(err.Error(), "Namespace must match") {
				t.Errorf("namespace %s: %v", slug, err)
			}
			continue
		}
		if r := load(t, dir, nil); r.Namespace != slug || r.DataRoot != filepath.Join("/srv/r/.swamp", slug, "data") {
			t.Errorf("namespace %s: read %q, data root %s", slug, r.Namespace, r.DataRoot)
		}
	}
}

// What swampj's own editor writes (swampyaml.EditNamespace, the bytes of
// `swamp datastore namespace set`), its reader reads back unchanged, for
// slugs that look like numbers, dates or booleans to YAML.
func TestLoadReadsWhatEditNamespaceWrites(t *testing.T) {
	for _, slug := range []string{"infra", "09", "0o17", "007", "0x1f", "1e3", "1-2", "0", "2026-01-01", "true", "null", "12345678901234567890", "y"} {
		if err := ValidateNamespace(slug); err != nil {
			t.Fatalf("%s is not a slug: %v", slug, err)
		}
		dir := newRepo(t, defaultMarker)
		edited, err := swampyaml.EditNamespace([]byte(defaultMarker), dir, slug)
		if err != nil {
			t.Fatalf("EditNamespace(%s): %v", slug, err)
		}
		if err := os.WriteFile(filepath.Join(dir, ConfigFileName), edited, 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := Load(fsx.Real(), dir, envMap(nil))
		if err != nil || r.Namespace != slug {
			t.Errorf("namespace set %s wrote\n%s\nread back %+v, %v", slug, edited, r, err)
		}
	}
}
