package repo

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/swampj/swampj/fsx"
)

// EnvDatastore is the environment variable that replaces the whole
// datastore block (§1.2.2 step 1, G14).
const EnvDatastore = "SWAMP_DATASTORE"

// Load reads {dir}/.swamp.yaml and resolves the datastore the way swamp's
// resolveDatastoreConfig does (§1.2.2), first match wins:
//
//  1. SWAMP_DATASTORE=filesystem:/dir — base /dir, solo, default
//     directories, no exclude; the YAML block is ignored entirely (G14).
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

// parseMarker decodes .swamp.yaml with yaml.v3. Like swamp's parser it
// refuses duplicate keys and more than one document; like swamp's
// RepoMarkerRepository it refuses the removed keys defaultDriver and
// defaultDriverConfig (repo_marker_repository.ts:90-98). Unknown keys are
// ignored. An empty file is a repo with no configuration.
func parseMarker(cfgPath string, data []byte) (marker, error) {
	var m marker
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return m, nil
		}
		return m, &ConfigError{Path: cfgPath, Msg: "is not valid YAML; fix the syntax (swamp cannot read it either)", Err: err}
	}
	var second yaml.Node
	if err := dec.Decode(&second); !errors.Is(err, io.EOF) {
		return m, &ConfigError{Path: cfgPath, Msg: "must hold exactly one YAML document; remove the extra \"---\" section", Err: err}
	}
	root := deref(&doc)
	if root.Kind == yaml.DocumentNode && len(root.Content) > 0 {
		root = deref(root.Content[0])
	}
	if isNull(root) {
		return m, nil
	}
	if root.Kind != yaml.MappingNode {
		return m, &ConfigError{Path: cfgPath, Msg: "must be a YAML mapping (key: value lines)"}
	}
	var top struct {
		RepoID              yaml.Node `yaml:"repoId"`
		Datastore           yaml.Node `yaml:"datastore"`
		DefaultDriver       yaml.Node `yaml:"defaultDriver"`
		DefaultDriverConfig yaml.Node `yaml:"defaultDriverConfig"`
	}
	if err := root.Decode(&top); err != nil {
		return m, &ConfigError{Path: cfgPath, Msg: "has a duplicate or malformed key; fix it (swamp rejects the file too)", Err: err}
	}
	for _, removed := range []struct {
		key  string
		node *yaml.Node
	}{{"defaultDriver", &top.DefaultDriver}, {"defaultDriverConfig", &top.DefaultDriverConfig}} {
		if removed.node.Kind != 0 {
			return m, &ConfigError{Path: cfgPath, Field: removed.key,
				Msg: "was removed from swamp; delete defaultDriver and defaultDriverConfig from .swamp.yaml and configure a datastore block instead"}
		}
	}
	var err error
	if m.repoID, _, err = scalarString(cfgPath, "repoId", &top.RepoID); err != nil {
		return m, err
	}
	ds := deref(&top.Datastore)
	if ds.Kind == 0 || isNull(ds) {
		return m, nil
	}
	if ds.Kind != yaml.MappingNode {
		return m, &ConfigError{Path: cfgPath, Field: "datastore", Msg: "must be a mapping with type, path, …"}
	}
	var blk struct {
		Type        yaml.Node `yaml:"type"`
		Path        yaml.Node `yaml:"path"`
		Namespace   yaml.Node `yaml:"namespace"`
		Directories yaml.Node `yaml:"directories"`
		Exclude     yaml.Node `yaml:"exclude"`
	}
	if err := ds.Decode(&blk); err != nil {
		return m, &ConfigError{Path: cfgPath, Field: "datastore", Msg: "has a duplicate or malformed key; fix it (swamp rejects the file too)", Err: err}
	}
	b := &datastoreBlock{}
	if b.typ, _, err = scalarString(cfgPath, "datastore.type", &blk.Type); err != nil {
		return m, err
	}
	if b.path, _, err = scalarString(cfgPath, "datastore.path", &blk.Path); err != nil {
		return m, err
	}
	if b.namespace, _, err = scalarString(cfgPath, "datastore.namespace", &blk.Namespace); err != nil {
		return m, err
	}
	if b.directories, err = stringList(cfgPath, "datastore.directories", &blk.Directories); err != nil {
		return m, err
	}
	if b.exclude, err = stringList(cfgPath, "datastore.exclude", &blk.Exclude); err != nil {
		return m, err
	}
	m.datastore = b
	return m, nil
}

func deref(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// scalarString reads a string-valued key. Absent or null is ("", false).
// A scalar that YAML resolves to something other than a string (namespace:
// 007 is the number 7 to swamp's parser; true, 12, a bare date) is refused
// with a hint to quote it, rather than guessing which text swamp would use.
func scalarString(cfgPath, field string, n *yaml.Node) (string, bool, error) {
	n = deref(n)
	if n.Kind == 0 || isNull(n) {
		return "", false, nil
	}
	if n.Kind != yaml.ScalarNode {
		return "", false, &ConfigError{Path: cfgPath, Field: field, Msg: "must be a string"}
	}
	if tag := n.ShortTag(); tag != "!!str" {
		return "", false, &ConfigError{Path: cfgPath, Field: field, Msg: fmt.Sprintf(
			"%s is read by YAML as %s, not a string; quote it: %q", n.Value, strings.TrimPrefix(tag, "!!"), n.Value)}
	}
	return n.Value, true, nil
}

// stringList reads a list of strings. Absent or null is nil; an empty list
// is a non-nil empty slice (it means "none", not "default").
func stringList(cfgPath, field string, n *yaml.Node) ([]string, error) {
	n = deref(n)
	if n.Kind == 0 || isNull(n) {
		return nil, nil
	}
	if n.Kind != yaml.SequenceNode {
		return nil, &ConfigError{Path: cfgPath, Field: field, Msg: "must be a list of strings"}
	}
	out := make([]string, 0, len(n.Content))
	for i, item := range n.Content {
		s, ok, err := scalarString(cfgPath, fmt.Sprintf("%s[%d]", field, i), item)
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
