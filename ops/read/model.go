package read

// Model-name addressing: a model is named as swamp users name
// it — by its name (`m1`), or by its id — and resolved the way swamp's
// findDefinitionByIdOrName resolves it: the name through the definition
// files (models/{type}/{name}.yaml holds its id and type), then, for a
// model whose definition is gone, through the catalog's model_name; an id
// through the definitions, then the data tree. Unlike swamp, which takes the
// first match in directory order, a name two models share is an error
// listing both.

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/swampj/swampj"
	"github.com/swampj/swampj/catalog"
	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/ops/store"
)

// Model is one resolved model.
type Model struct {
	Type string `json:"modelType"`
	ID   string `json:"modelId"`
	Name string `json:"modelName"`
	// From says what resolved it: "definition" (Path is the file), "catalog"
	// (model_name) or "data" (a model id with data on disk), or "address"
	// (TYPE/MODEL_ID/DATA_NAME was given).
	From string `json:"resolvedFrom"`
	Path string `json:"definitionPath,omitempty"`
}

func (m Model) String() string {
	s := m.Type + "/" + m.ID
	if m.Name != "" {
		s = fmt.Sprintf("%s (%s)", m.Name, s)
	}
	if m.Path != "" {
		s += " [" + m.Path + "]"
	}
	return s
}

// ModelNotFoundError: no definition, catalog row or data names the model.
type ModelNotFoundError struct{ Query string }

func (e *ModelNotFoundError) Error() string {
	return fmt.Sprintf("Model not found: %s (no definition under models/ has this name or id, no catalog row has this model_name, "+
		"no data is stored under this model id)", e.Query)
}
func (e *ModelNotFoundError) Code() string        { return "not_found" }
func (e *ModelNotFoundError) Class() swampj.Class { return swampj.ClassFailed }

// AmbiguousModelError: more than one model answers to the name.
type AmbiguousModelError struct {
	Query      string
	Candidates []Model
}

func (e *AmbiguousModelError) Error() string {
	parts := make([]string, len(e.Candidates))
	for i, c := range e.Candidates {
		parts[i] = c.String()
	}
	return fmt.Sprintf("model name %q is ambiguous: %d models answer to it: %s; name one by its id, or as TYPE/MODEL_ID/DATA_NAME",
		e.Query, len(e.Candidates), strings.Join(parts, "; "))
}
func (e *AmbiguousModelError) Code() string        { return "ambiguous_model" }
func (e *AmbiguousModelError) Class() swampj.Class { return swampj.ClassFailed }

// ResolveModel resolves a model name or id.
func ResolveModel(ctx context.Context, r *repo.Repo, idOrName string, c host.Common) (Model, error) {
	fsys := c.Disk()
	if idOrName == "" || strings.ContainsAny(idOrName, "/\\\x00") {
		return Model{}, &ModelNotFoundError{Query: idOrName}
	}
	defs, err := r.ModelDefinitions(fsys)
	if err != nil {
		return Model{}, err
	}
	pick := func(ms []Model) (Model, bool, error) {
		ms = distinct(ms)
		switch len(ms) {
		case 0:
			return Model{}, false, nil
		case 1:
			return ms[0], true, nil
		}
		return Model{}, false, &AmbiguousModelError{Query: idOrName, Candidates: ms}
	}
	// 1. The name, through the definitions.
	var ms []Model
	for _, d := range defs {
		if d.Name == idOrName {
			ms = append(ms, Model{Type: d.Type, ID: d.ID, Name: d.Name, From: "definition", Path: d.Path})
		}
	}
	if m, ok, err := pick(ms); ok || err != nil {
		return m, err
	}
	// 2. The name, through the catalog (a model whose definition is gone).
	if ms, err = catalogModels(ctx, fsys, r, idOrName); err != nil {
		return Model{}, err
	}
	if m, ok, err := pick(ms); ok || err != nil {
		return m, err
	}
	// 3. The id, through the definitions, then the data tree.
	for _, d := range defs {
		if d.ID == idOrName {
			ms = append(ms, Model{Type: d.Type, ID: d.ID, Name: d.Name, From: "definition", Path: d.Path})
		}
	}
	if m, ok, err := pick(ms); ok || err != nil {
		return m, err
	}
	items, err := store.FindItems(ctx, fsys, r.DataRoot, "")
	if err != nil && len(items) == 0 && !errors.Is(err, context.Canceled) {
		// An unlistable data root finds no model; the error says why.
		return Model{}, fmt.Errorf("looking for model %q in %s: %w", idOrName, r.DataRoot, err)
	}
	for _, it := range items {
		if it.ModelID == idOrName {
			a := repo.Address{Type: it.Type, ModelID: it.ModelID, DataName: it.DataName}
			name, _ := ModelName(fsys, r, a)
			ms = append(ms, Model{Type: it.Type, ID: it.ModelID, Name: name, From: "data"})
		}
	}
	if m, ok, err := pick(ms); ok || err != nil {
		return m, err
	}
	return Model{}, &ModelNotFoundError{Query: idOrName}
}

// distinct keeps the first Model of each type and id, sorted by type then id.
func distinct(ms []Model) []Model {
	seen := map[[2]string]bool{}
	var out []Model
	for _, m := range ms {
		k := [2]string{m.Type, m.ID}
		if !seen[k] {
			seen[k] = true
			out = append(out, m)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Type != out[j].Type {
			return out[i].Type < out[j].Type
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// catalogModels are the models of this namespace whose catalog rows carry
// model_name name. A catalog that is missing or cannot be read answers
// nothing: the catalog never blocks a read.
func catalogModels(ctx context.Context, fsys fsx.FS, r *repo.Repo, name string) ([]Model, error) {
	if _, err := fsys.Stat(r.CatalogPath); err != nil {
		return nil, nil // never create one to look a name up
	}
	c, err := catalog.Open(ctx, fsys, r.CatalogPath, catalog.Options{Mode: catalog.ModeReport})
	if err != nil {
		return nil, nil
	}
	defer c.Close()
	if c.Foreign() != nil {
		return nil, nil
	}
	rows, err := c.Rows(ctx, r.Namespace)
	if err != nil {
		return nil, nil
	}
	var ms []Model
	for _, row := range rows {
		if row.ModelName == name {
			ms = append(ms, Model{Type: row.TypeNormalized, ID: row.ModelID, Name: name, From: "catalog"})
		}
	}
	return ms, nil
}

// ResolveItem names one data item: model and name (model a name or id,
// resolved by ResolveModel), or — name empty and model holding "/" —
// model is TYPE/MODEL_ID/DATA_NAME. The Model says how it was found; its
// Name is the model's name when a definition or data says it.
func ResolveItem(ctx context.Context, r *repo.Repo, model, name string, c host.Common) (repo.Address, Model, error) {
	fsys := c.Disk()
	if err := repo.RefuseUnknownFormat(fsys, r.Base, false, nil); err != nil {
		return repo.Address{}, Model{}, err
	}
	if name == "" && strings.Contains(model, "/") {
		a, err := repo.ParseAddress(model)
		if err != nil {
			return repo.Address{}, Model{}, err
		}
		mn, _ := ModelName(fsys, r, a)
		return a, Model{Type: a.Type, ID: a.ModelID, Name: mn, From: "address"}, nil
	}
	if strings.ContainsAny(name, "/\\") {
		return repo.Address{}, Model{}, &repo.AddressError{Input: name, Msg: `a data name must not contain "/" or "\"`}
	}
	m, err := ResolveModel(ctx, r, model, host.Common{FS: fsys})
	if err != nil {
		return repo.Address{}, Model{}, err
	}
	a, err := repo.ParseAddress(m.Type + "/" + m.ID + "/" + name)
	if err != nil {
		return repo.Address{}, Model{}, err
	}
	return a, m, nil
}
