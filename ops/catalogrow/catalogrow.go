// Package catalogrow maps swamp's metadata model onto catalog rows: the one
// place that knows both a metadata.yaml (package ops/meta) and a row of
// swamp's SQLite catalog (package catalog). The catalog itself knows SQL and
// rows only; every writer, rebuild and repair builds its rows here.
package catalogrow

import (
	"fmt"

	"github.com/swampj/swampj/catalog"
	"github.com/swampj/swampj/ops/meta"
)

// FromMeta builds the row of one version from its metadata.yaml, exactly
// as swamp's write-through and backfill do (swamp-format.md §3.4):
//
//   - ns is the writing repo's namespace, not the directory's (G18);
//   - typeNorm and modelID come from the version's directory path;
//   - data_name, id, version, content_type, lifetime are copied;
//   - model_name/spec_name/data_type are tags modelName/specName/type (empty if missing);
//   - owner_type, owner_ref and the workflow fields come from ownerDefinition;
//   - size is 0 when absent (rename tombstones, append);
//   - created_at is re-formatted to milliseconds and Z (toISOString);
//   - tags is JSON.stringify of the tags in their order.
//
// checksum, lifecycle, renamedTo and garbageCollection are not stored.
// Whether a version gets a row at all (renamed/deleted/unreadable versions do
// not, §3.7) is the caller's decision. The latest flags are left false: they
// depend on the other versions or on the write, and the catalog sets them.
// A row the catalog would refuse comes back as a *catalog.InvalidRowError.
func FromMeta(ns, typeNorm, modelID string, m *meta.Metadata) (catalog.Row, error) {
	if m == nil {
		return catalog.Row{}, &catalog.InvalidRowError{Op: "row from metadata", Row: catalog.ItemKey{Namespace: ns, TypeNormalized: typeNorm, ModelID: modelID}, Reason: "no metadata"}
	}
	createdAt, err := meta.CatalogTime(m.CreatedAt)
	if err != nil {
		return catalog.Row{}, &catalog.InvalidRowError{
			Op:     "row from metadata",
			Row:    catalog.ItemKey{Namespace: ns, TypeNormalized: typeNorm, ModelID: modelID, DataName: m.Name},
			Reason: fmt.Sprintf("version %d: createdAt %q: %v", m.Version, m.CreatedAt, err),
		}
	}
	modelName, _ := m.Tags.Get("modelName")
	specName, _ := m.Tags.Get("specName")
	dataType, _ := m.Tags.Get("type")
	var size int64
	if m.Size != nil {
		size = *m.Size
	}
	r := catalog.Row{
		Namespace:      ns,
		TypeNormalized: typeNorm,
		ModelID:        modelID,
		DataName:       m.Name,
		ID:             m.ID,
		Version:        m.Version,
		ModelName:      modelName,
		SpecName:       specName,
		DataType:       dataType,
		ContentType:    m.ContentType,
		Lifetime:       m.Lifetime,
		OwnerType:      m.Owner.OwnerType,
		Streaming:      m.Streaming,
		Size:           size,
		CreatedAt:      createdAt,
		Tags:           meta.TagsJSON(m.Tags),
		OwnerRef:       m.Owner.OwnerRef,
		WorkflowRunID:  m.Owner.WorkflowRunID,
		WorkflowName:   m.Owner.WorkflowName,
		JobName:        m.Owner.JobName,
		StepName:       m.Owner.StepName,
		Source:         m.Owner.Source,
	}
	return r, r.Validate("row from metadata")
}
