package repo

import (
	"errors"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"gopkg.in/yaml.v3"

	"github.com/swampj/swampj/fsx"
)

// ModelDefinition is what swampj needs of a model definition file: its id,
// name and type.
type ModelDefinition struct {
	ID   string `yaml:"id"`
	Name string `yaml:"name"`
	Type string `yaml:"type"`
	// Path is the file it was read from.
	Path string `yaml:"-"`
}

// maxDefinitionSize bounds a definition file read for its name.
const maxDefinitionSize = 4 << 20

// FindModelDefinition finds the definition of the model of type typ
// (normalized, "/"-separated) with id, where swamp's definition repository
// looks for it (yaml_definition_repository.ts findById):
//
//  1. {repo}/models/{type}/{id}.yaml (the legacy name);
//  2. any {repo}/models/{type}/*.yaml whose id is id (today's files are
//     named after the model: models/command/shell/m1.yaml);
//  3. the same two in the auto-definitions directory (datastore tier);
//
// and, last, the evaluated copy swamp's method runs write,
// definitions-evaluated/{type}/*.yaml (datastore tier), which outlives a
// deleted models/ file. Files that cannot be read or parsed are skipped, as
// swamp skips broken definition files. ok is false when none matches; err
// is only an I/O error listing a directory that exists.
func (r *Repo) FindModelDefinition(fsys fsx.FS, typ, id string) (def ModelDefinition, ok bool, err error) {
	fsys = fsx.OrReal(fsys)
	if id == "" || strings.ContainsAny(id, `/\`) || id == "." || id == ".." {
		return ModelDefinition{}, false, nil
	}
	typeDir := filepath.FromSlash(typ)
	dirs := []string{
		filepath.Join(r.Dir, "models", typeDir),
		filepath.Join(r.ResolvePath("auto-definitions"), typeDir),
		filepath.Join(r.ResolvePath("definitions-evaluated"), typeDir),
	}
	for _, dir := range dirs {
		if d, ok := readDefinition(fsys, filepath.Join(dir, id+".yaml")); ok && d.ID == id {
			return d, true, nil
		}
		entries, err := fsys.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			continue
		}
		if err != nil {
			return ModelDefinition{}, false, err
		}
		names := make([]string, 0, len(entries))
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".yaml") && (e.Type().IsRegular() || e.Type()&fs.ModeSymlink != 0) && e.Name() != id+".yaml" {
				names = append(names, e.Name())
			}
		}
		sort.Strings(names)
		for _, n := range names {
			if d, ok := readDefinition(fsys, filepath.Join(dir, n)); ok && d.ID == id {
				return d, true, nil
			}
		}
	}
	return ModelDefinition{}, false, nil
}

// readDefinition reads one definition file; ok is false for anything that
// is not a readable YAML mapping with an id and a name.
func readDefinition(fsys fsx.FS, path string) (ModelDefinition, bool) {
	fi, err := fsys.Stat(path)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxDefinitionSize {
		return ModelDefinition{}, false
	}
	data, err := fsys.ReadFile(path)
	if err != nil {
		return ModelDefinition{}, false
	}
	var d ModelDefinition
	if err := yaml.Unmarshal(data, &d); err != nil || d.ID == "" || d.Name == "" {
		return ModelDefinition{}, false
	}
	d.Path = path
	return d, true
}

// ModelDefinitions lists every definition file where swamp's name lookup
// looks (yaml_definition_repository.ts findByNameGlobal): every *.yaml at
// any depth under {repo}/models, then under the auto-definitions directory
// (datastore tier). Type is the file's type, else its directory path below
// the base, normalized either way. Unreadable or unparseable files are
// skipped, as swamp skips broken definition files; err is only an I/O error
// listing a directory that exists.
func (r *Repo) ModelDefinitions(fsys fsx.FS) ([]ModelDefinition, error) {
	fsys = fsx.OrReal(fsys)
	var out []ModelDefinition
	var walk func(dir string, segs []string) error
	walk = func(dir string, segs []string) error {
		entries, err := fsys.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return nil
		}
		if err != nil {
			return err
		}
		sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
		for _, e := range entries {
			p := filepath.Join(dir, e.Name())
			switch {
			case e.IsDir():
				if err := walk(p, append(append([]string{}, segs...), e.Name())); err != nil {
					return err
				}
			case strings.HasSuffix(e.Name(), ".yaml") && (e.Type().IsRegular() || e.Type()&fs.ModeSymlink != 0):
				d, ok := readDefinition(fsys, p)
				if !ok {
					continue
				}
				if d.Type == "" {
					d.Type = strings.Join(segs, "/")
				}
				d.Type = NormalizeType(d.Type)
				out = append(out, d)
			}
		}
		return nil
	}
	for _, base := range []string{filepath.Join(r.Dir, "models"), r.ResolvePath("auto-definitions")} {
		if err := walk(base, nil); err != nil {
			return out, err
		}
	}
	return out, nil
}
