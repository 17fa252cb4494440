package repo

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/swampyaml"
)

// EnvDatastore is the environment variable that replaces the whole
// datastore block (swamp-format §1.2.2 step 1, swamp-format §9.14).
const EnvDatastore = "SWAMP_DATASTORE"

// Load reads {dir}/.swamp.yaml and resolves the datastore the way swamp's
// resolveDatastoreConfig does (swamp-format §1.2.2), first match wins:
//
//  1. SWAMP_DATASTORE=filesystem:/dir — base /dir, solo, default
//     directories, no exclude; the YAML block is ignored entirely (swamp-format §9.14).
//  2. The `datastore` block: `type: filesystem` with a required `path`
//     (`~`, `$VAR`, `${VAR}` expanded; relative paths resolved against the
//     repo dir), plus `namespace`, `directories`, `exclude`.
//  3. Default: {dir}/.swamp, solo.
//
// Extension datastores (including legacy `type: s3`) are refused with an
// *UnsupportedDatastoreError: their local cache directory is chosen by the
// extension's provider and cannot be known here. env looks variables up
// (nil: the process environment).
func Load(fsys fsx.FS, dir string, env func(string) string) (*Repo, error) {
	fsys = fsx.OrReal(fsys)
	env = envOrOS(env)
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("resolving %s: %w", dir, err)
	}
	cfgPath := filepath.Join(abs, ConfigFileName)
	data, err := fsys.ReadFile(cfgPath)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s has no %s", ErrNotARepo, abs, ConfigFileName)
		}
		return nil, fmt.Errorf("reading %s: %w", cfgPath, err)
	}
	m, err := parseMarker(cfgPath, data)
	if err != nil {
		return nil, err
	}

	r := &Repo{Dir: abs, RepoID: m.repoID, Type: "filesystem"}
	var configured []string // nil: the defaults
	switch {
	case env(EnvDatastore) != "":
		base, err := parseDatastoreEnv(env(EnvDatastore), abs, env)
		if err != nil {
			return nil, err
		}
		r.Base, r.EnvOverride = base, true
	case m.datastore != nil:
		ds := m.datastore
		if err := checkDatastoreType(cfgPath, ds.typ); err != nil {
			return nil, err
		}
		if ds.path == "" {
			return nil, &ConfigError{Path: cfgPath, Field: "datastore.path",
				Msg: "a filesystem datastore requires a 'path'; set it to the datastore directory"}
		}
		base, err := expandDatastorePath(cfgPath, "datastore.path", ds.path, abs, env)
		if err != nil {
			return nil, err
		}
		r.Base = base
		if ds.namespace != "" {
			if err := ValidateNamespace(ds.namespace); err != nil {
				return nil, &ConfigError{Path: cfgPath, Field: "datastore.namespace", Msg: "invalid namespace", Err: err}
			}
		}
		r.Namespace = ds.namespace
		configured = ds.directories
		r.Exclude = ds.exclude
	default:
		r.Base = filepath.Join(abs, LocalDirName)
	}

	r.Directories = effectiveDirectories(configured)
	r.exclude, err = CompileExclude(r.Exclude)
	if err != nil {
		return nil, &ConfigError{Path: cfgPath, Field: "datastore.exclude", Msg: err.Error()}
	}
	r.finish()
	return r, nil
}

// effectiveDirectories is getDatastoreDirectories (datastore_config.ts:193-199):
// the configured list (nil: the 15 defaults) minus the always-local five.
// An explicitly empty list stays empty: every subdirectory is then local.
func effectiveDirectories(configured []string) []string {
	src := configured
	if src == nil {
		src = DefaultSubdirs
	}
	out := []string{}
	for _, d := range src {
		if !isAlwaysLocal(d) {
			out = append(out, d)
		}
	}
	return out
}

// renamedDatastoreTypes is swamp's RENAMED_DATASTORE_TYPES.
var renamedDatastoreTypes = map[string]string{"s3": "@swamp/s3-datastore"}

func checkDatastoreType(source, typ string) error {
	switch typ {
	case "filesystem":
		return nil
	case "":
		return &ConfigError{Path: source, Field: "datastore.type",
			Msg: `missing; set "type: filesystem" (or remove the datastore block for the default {repo}/.swamp)`}
	}
	return &UnsupportedDatastoreError{Source: source, Type: typ, Resolved: renamedDatastoreTypes[typ]}
}

// parseDatastoreEnv parses SWAMP_DATASTORE = "type:value"
// (resolve_datastore.ts parseDatastoreEnvVar): split at the first colon;
// for filesystem the value is env-expanded and resolved against the repo.
func parseDatastoreEnv(v, repoDir string, env func(string) string) (string, error) {
	typ, value, ok := strings.Cut(v, ":")
	if !ok {
		return "", &ConfigError{Path: EnvDatastore, Msg: fmt.Sprintf(
			"invalid value %q: expected \"filesystem:/path/to/dir\"; fix or unset %s", v, EnvDatastore)}
	}
	if typ != "filesystem" {
		return "", &UnsupportedDatastoreError{Source: EnvDatastore, Type: typ, Resolved: renamedDatastoreTypes[typ]}
	}
	if value == "" {
		// swamp would resolve "" to the repo directory itself; that is
		// never what was meant.
		return "", &ConfigError{Path: EnvDatastore, Msg: `"filesystem:" needs a directory, e.g. filesystem:/srv/swamp`}
	}
	return expandDatastorePath(EnvDatastore, "", value, repoDir, env)
}

// expandDatastorePath expands ~, $VAR and ${VAR} (env_path.ts:28-64) and
// makes the result absolute against the repo directory.
func expandDatastorePath(source, field, p, repoDir string, env func(string) string) (string, error) {
	if strings.Contains(p, "${{") {
		return "", &ConfigError{Path: source, Field: field, Msg: fmt.Sprintf(
			"%q uses a ${{ … }} expression, which swampj does not evaluate; write the path with $VAR or an absolute path", p)}
	}
	expanded, err := ExpandEnvPath(p, env)
	if err != nil {
		return "", &ConfigError{Path: source, Field: field, Msg: err.Error()}
	}
	if !filepath.IsAbs(expanded) {
		expanded = filepath.Join(repoDir, expanded)
	}
	return filepath.Clean(expanded), nil
}

// ExpandEnvPath is swamp's expandEnvVars: a leading "~" (alone or before
// "/") becomes $HOME (or $USERPROFILE); ${NAME} and $NAME, NAME matching
// [A-Za-z_][A-Za-z0-9_]*, become the variable's value. Values are not
// expanded again. A referenced variable that is unset or empty is an error
// naming it; a "$" not followed by a name is kept literally.
func ExpandEnvPath(p string, env func(string) string) (string, error) {
	env = envOrOS(env)
	var b strings.Builder
	i := 0
	if strings.HasPrefix(p, "~") && (len(p) == 1 || p[1] == '/') {
		home := env("HOME")
		if home == "" {
			home = env("USERPROFILE")
		}
		if home == "" {
			return "", fmt.Errorf("cannot expand \"~\" in path %q: neither HOME nor USERPROFILE is set; set HOME or write an absolute path", p)
		}
		b.WriteString(home)
		i = 1
	}
	for i < len(p) {
		if p[i] != '$' {
			b.WriteByte(p[i])
			i++
			continue
		}
		name, width := envRef(p[i:])
		if name == "" {
			b.WriteByte('$')
			i++
			continue
		}
		val := env(name)
		if val == "" {
			return "", fmt.Errorf("environment variable %q is not set or empty (referenced in path %q); set it or change the path", name, p)
		}
		b.WriteString(val)
		i += width
	}
	return b.String(), nil
}

// envRef parses "${NAME}" or "$NAME" at the start of s (which starts with
// "$") and returns the name and the number of bytes consumed.
func envRef(s string) (string, int) {
	if len(s) > 1 && s[1] == '{' {
		if n := nameLen(s[2:]); n > 0 && 2+n < len(s) && s[2+n] == '}' {
			return s[2 : 2+n], n + 3
		}
		return "", 0 // "${" without a valid "NAME}" is literal, as in swamp
	}
	if n := nameLen(s[1:]); n > 0 {
		return s[1 : 1+n], n + 1
	}
	return "", 0
}

// nameLen is the length of the [A-Za-z_][A-Za-z0-9_]* prefix of s.
func nameLen(s string) int {
	for i := 0; i < len(s); i++ {
		c := s[i]
		letter := c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
		if !letter && !(i > 0 && c >= '0' && c <= '9') {
			return i
		}
	}
	return len(s)
}

// marker is what swampj needs from .swamp.yaml.
type marker struct {
	repoID    string
	datastore *datastoreBlock // nil: no block (or `datastore: null`)
}

type datastoreBlock struct {
	typ         string
	path        string
	namespace   string
	directories []string // nil: absent
	exclude     []string
}

// parseMarker reads .swamp.yaml with the parser that also edits it
// (swampyaml.Parse, swamp's @std/yaml rules), so swampj reads every value
// as swamp does: `namespace: 09` and `namespace: 0o17`, which swamp itself
// writes unquoted, are the strings "09" and "0o17". Like swamp's parser it
// refuses duplicate keys, more than one document and tags it does not know,
// anywhere in the file; like swamp's RepoMarkerRepository it refuses the
// removed keys defaultDriver and defaultDriverConfig
// (repo_marker_repository.ts:90-98). Unknown keys are ignored. An empty file
// is a repo with no configuration.
func parseMarker(cfgPath string, data []byte) (marker, error) {
	var m marker
	root, err := swampyaml.Parse(data)
	if err != nil {
		if errors.Is(err, swampyaml.ErrMultipleDocuments) {
			return m, &ConfigError{Path: cfgPath, Msg: "must hold exactly one YAML document; remove the extra \"---\" section", Err: err}
		}
		return m, &ConfigError{Path: cfgPath, Msg: "is not valid YAML; fix the syntax (swamp cannot read it either)", Err: err}
	}
	if root.Kind == swampyaml.NullKind {
		return m, nil
	}
	if root.Kind != swampyaml.MapKind {
		return m, &ConfigError{Path: cfgPath, Msg: "must be a YAML mapping (key: value lines)"}
	}
	for _, removed := range []string{"defaultDriver", "defaultDriverConfig"} {
		if _, ok := root.Get(removed); ok {
			return m, &ConfigError{Path: cfgPath, Field: removed,
				Msg: "was removed from swamp; delete defaultDriver and defaultDriverConfig from .swamp.yaml and configure a datastore block instead"}
		}
	}
	if m.repoID, _, err = scalarString(cfgPath, "repoId", root); err != nil {
		return m, err
	}
	ds, _ := root.Get("datastore")
	if ds == nil || ds.Kind == swampyaml.NullKind {
		return m, nil
	}
	if ds.Kind != swampyaml.MapKind {
		return m, &ConfigError{Path: cfgPath, Field: "datastore", Msg: "must be a mapping with type, path, …"}
	}
	b := &datastoreBlock{}
	if b.typ, _, err = scalarString(cfgPath, "datastore.type", ds); err != nil {
		return m, err
	}
	if b.path, _, err = scalarString(cfgPath, "datastore.path", ds); err != nil {
		return m, err
	}
	if b.namespace, _, err = scalarString(cfgPath, "datastore.namespace", ds); err != nil {
		return m, err
	}
	if b.directories, err = stringList(cfgPath, "datastore.directories", ds); err != nil {
		return m, err
	}
	if b.exclude, err = stringList(cfgPath, "datastore.exclude", ds); err != nil {
		return m, err
	}
	m.datastore = b
	return m, nil
}

// lastKey is the key of a dotted field name ("datastore.namespace" →
// "namespace").
func lastKey(field string) string {
	return field[strings.LastIndexByte(field, '.')+1:]
}

// scalarString reads the string-valued key named by field's last part from
// the mapping parent. Absent or null is ("", false).
func scalarString(cfgPath, field string, parent *swampyaml.Node) (string, bool, error) {
	n, _ := parent.Get(lastKey(field))
	return stringValue(cfgPath, field, n)
}

// stringValue reads a string-valued node. A scalar that YAML resolves to
// something other than a string (namespace: 007 is the number 7 to swamp's
// parser; true, 12, a bare date) is refused with a hint to quote it, rather
// than guessing which text swamp would use.
func stringValue(cfgPath, field string, n *swampyaml.Node) (string, bool, error) {
	switch {
	case n == nil || n.Kind == swampyaml.NullKind:
		return "", false, nil
	case n.Kind == swampyaml.StringKind:
		return n.Str, true, nil
	case n.Kind == swampyaml.MapKind || n.Kind == swampyaml.SeqKind:
		return "", false, &ConfigError{Path: cfgPath, Field: field, Msg: "must be a string"}
	}
	return "", false, &ConfigError{Path: cfgPath, Field: field, Msg: fmt.Sprintf(
		"%s is read by YAML as a %s, not a string; quote it: %q", n.Raw, n.Kind, n.Raw)}
}

// stringList reads the list-of-strings key named by field's last part.
// Absent or null is nil; an empty list is a non-nil empty slice (it means
// "none", not "default").
func stringList(cfgPath, field string, parent *swampyaml.Node) ([]string, error) {
	n, _ := parent.Get(lastKey(field))
	if n == nil || n.Kind == swampyaml.NullKind {
		return nil, nil
	}
	if n.Kind != swampyaml.SeqKind {
		return nil, &ConfigError{Path: cfgPath, Field: field, Msg: "must be a list of strings"}
	}
	out := make([]string, 0, len(n.Items))
	for i, item := range n.Items {
		s, ok, err := stringValue(cfgPath, fmt.Sprintf("%s[%d]", field, i), item)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, &ConfigError{Path: cfgPath, Field: fmt.Sprintf("%s[%d]", field, i), Msg: "is empty; remove it"}
		}
		out = append(out, s)
	}
	return out, nil
}
