package repo

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/jsfmt"
)

// namespacePattern and NamespaceMaxLen are swamp's slug rule
// (src/domain/data/namespace.ts:22-23, swamp-format §1.5).
var namespacePattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`) })

// NamespaceMaxLen is the longest slug swamp accepts.
const NamespaceMaxLen = 64

// ManifestName is the namespace manifest file inside {base}/{ns} (swamp-format §1.5.1).
const ManifestName = ".namespace.json"

// ValidateNamespace reports whether slug is a namespace swamp accepts: at
// most 64 characters, lowercase ASCII letters, digits and hyphens, starting
// and ending with a letter or digit (swamp-format §1.5). Solo mode is the empty string,
// which is not a slug and is rejected here as swamp's createNamespace does.
// The messages carry swamp's wording; note that swamp's "must match" text
// understates the rule (it also forbids a trailing hyphen).
func ValidateNamespace(slug string) error {
	if slug == "" {
		return &NamespaceError{Slug: slug, Msg: "Namespace cannot be empty — leave datastore.namespace unset for solo mode"}
	}
	if n := jsfmt.Length(slug); n > NamespaceMaxLen {
		return &NamespaceError{Slug: slug, Msg: fmt.Sprintf("Namespace must be at most %d characters, got %d", NamespaceMaxLen, n)}
	}
	if !namespacePattern().MatchString(slug) {
		return &NamespaceError{Slug: slug, Msg: fmt.Sprintf(
			"Namespace must match [a-z0-9][a-z0-9-]*: %s (lowercase letters, digits and hyphens, starting and ending with a letter or digit)",
			jsfmt.Quote(slug))}
	}
	return nil
}

// IsReservedNamespace reports whether slug names a directory of the
// datastore layout (the 15 default subdirectories). swamp at the pinned
// commit accepts such a slug; newer swamp refuses to create one, because
// {base}/{slug}/ would share a directory with the solo layout. Callers that
// create namespaces should refuse them; callers that load a config must not.
func IsReservedNamespace(slug string) bool {
	for _, d := range DefaultSubdirs {
		if d == slug {
			return true
		}
	}
	return false
}

// Manifest is a namespace manifest, {base}/{ns}/.namespace.json (swamp-format §1.5.1).
type Manifest struct {
	Namespace    string `json:"namespace"`
	RepoID       string `json:"repoId"`
	RegisteredAt string `json:"registeredAt"`
	// Path is the file the manifest was read from (not part of the JSON).
	Path string `json:"-"`
}

// ManifestPath is {base}/{ns}/.namespace.json.
func ManifestPath(base, ns string) string {
	return filepath.Join(base, ns, ManifestName)
}

// WriteManifestBytes returns the manifest exactly as swamp writes it:
// JSON.stringify(obj, null, 2) with keys namespace, repoId, registeredAt
// and one trailing newline; registeredAt in toISOString form (swamp-format §1.5.1).
func WriteManifestBytes(ns, repoID string, now time.Time) []byte {
	var b bytes.Buffer
	b.WriteString("{\n")
	b.WriteString(`  "namespace": ` + jsfmt.Quote(ns) + ",\n")
	b.WriteString(`  "repoId": ` + jsfmt.Quote(repoID) + ",\n")
	b.WriteString(`  "registeredAt": ` + jsfmt.Quote(jsfmt.ISOString(now)) + "\n")
	b.WriteString("}\n")
	return b.Bytes()
}

// WriteManifest creates {base}/{ns} if needed and writes the manifest.
// swamp writes it in place (swamp-format §9.21); this replaces it atomically, so a reader
// never sees a truncated manifest, and fsyncs it.
func WriteManifest(fsys fsx.FS, base, ns, repoID string, now time.Time) error {
	fsys = fsx.OrReal(fsys)
	if err := ValidateNamespace(ns); err != nil {
		return err
	}
	dir := filepath.Join(base, ns)
	if err := fsx.MkdirAllDurable(fsys, dir, fsx.DirMode); err != nil {
		return fmt.Errorf("creating namespace directory %s: %w", dir, err)
	}
	p := ManifestPath(base, ns)
	if err := fsx.WriteFileAtomic(fsys, p, WriteManifestBytes(ns, repoID, now), fsx.FileMode); err != nil {
		return fmt.Errorf("writing namespace manifest %s: %w", p, err)
	}
	return nil
}

// ReadManifest reads {base}/{ns}/.namespace.json. A missing file is "no
// manifest" (found=false, nil error); any other failure, including invalid
// JSON, is a *ManifestError naming the file (swamp propagates those too,
// namespace_manifest.ts:56-68). As in swamp the content is not validated
// further and the namespace field is not compared with the directory name.
func ReadManifest(fsys fsx.FS, base, ns string) (Manifest, bool, error) {
	fsys = fsx.OrReal(fsys)
	p := ManifestPath(base, ns)
	data, err := fsys.ReadFile(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return Manifest{}, false, nil
		}
		return Manifest{}, false, &ManifestError{Path: p, Err: err}
	}
	m, err := parseManifest(data)
	if err != nil {
		return Manifest{}, false, &ManifestError{Path: p, Err: err}
	}
	m.Path = p
	return m, true, nil
}

func parseManifest(data []byte) (Manifest, error) {
	var m Manifest
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return m, errors.New("not a JSON object")
	}
	if err := json.Unmarshal(trimmed, &m); err != nil {
		return m, err
	}
	return m, nil
}

// ListNamespaces returns the manifests of every immediate child directory
// of base that does not start with "." and holds a manifest, sorted by the
// manifest's namespace field (swamp-format §1.5.1, namespace_manifest.ts:83-99).
// Directories without a manifest (data, outputs, … in the solo layout) are
// skipped; a missing base is an empty list. Symlinked directories are
// skipped, as Deno's readDir reports them as symlinks, not directories.
//
// swamp sorts with localeCompare; for valid slugs ([a-z0-9-]) that order is
// byte order, which is what this uses.
func ListNamespaces(fsys fsx.FS, base string) ([]Manifest, error) {
	fsys = fsx.OrReal(fsys)
	ents, err := fsys.ReadDir(base)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("listing namespaces in %s: %w", base, err)
	}
	var out []Manifest
	for _, e := range ents {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		m, ok, err := ReadManifest(fsys, base, e.Name())
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, m)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Namespace < out[j].Namespace })
	return out, nil
}
