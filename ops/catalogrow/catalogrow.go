// Package catalogrow maps swamp's metadata model onto catalog rows: the one
// place that knows both a metadata.yaml (package ops/meta) and a row of
// swamp's SQLite catalog (package catalog). The catalog itself knows SQL and
// rows only; every writer, rebuild and repair builds its rows here.
package catalogrow

import (
	"fmt"
	"slices"
	"strings"

	"github.com/swampj/swampj/catalog"
	"github.com/swampj/swampj/ops/meta"
)

// FromMeta builds the row of one version from its metadata.yaml, exactly
// as swamp's write-through and backfill do (swamp-format §3.4):
//
//   - ns is the writing repo's namespace, not the directory's (swamp-format §9.18);
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
// not, swamp-format §3.7) is the caller's decision. The latest flags are left false: they
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

// MarkLatestBelow sets the latest flags of rows in place: catalog.MarkLatest
// over the versions at or below top (the item's committed latest); versions
// above it get none, as swamp's deferred writes leave them (swamp-format §9.8). The
// doctor's comparison and the catalog the disk implies (catalogsync's
// Expected) both mark an item's rows with it.
func MarkLatestBelow(rows []catalog.Row, top int64, step bool) {
	if len(rows) == 0 || slices.IndexFunc(rows, func(r catalog.Row) bool { return r.Version > top }) < 0 {
		catalog.MarkLatest(rows, step) // all at or below top: no copy needed
		return
	}
	var idx []int
	var buf []catalog.Row
	for i := range rows {
		rows[i].IsLatest, rows[i].IsStepLatest = false, false
		if rows[i].Version <= top {
			idx = append(idx, i)
			buf = append(buf, rows[i])
		}
	}
	catalog.MarkLatest(buf, step)
	for k, i := range idx {
		rows[i].IsLatest, rows[i].IsStepLatest = buf[k].IsLatest, buf[k].IsStepLatest
	}
}

// HasVersion says whether rows hold version v.
func HasVersion(rows []catalog.Row, v int64) bool { return RowIndex(rows, v) >= 0 }

// RowIndex is the index of version v in rows, or -1.
func RowIndex(rows []catalog.Row, v int64) int {
	for i, r := range rows {
		if r.Version == v {
			return i
		}
	}
	return -1
}

// SameFlags says whether a and b carry the same latest flags (is_step_latest
// only where the catalog has the column: step).
func SameFlags(a, b catalog.Row, step bool) bool {
	return a.IsLatest == b.IsLatest && (!step || a.IsStepLatest == b.IsStepLatest)
}

// FlagText renders r's latest flags, "is_latest=1, is_step_latest=0".
func FlagText(r catalog.Row, step bool) string {
	s := fmt.Sprintf("is_latest=%d", flagBit(r.IsLatest))
	if step {
		s += fmt.Sprintf(", is_step_latest=%d", flagBit(r.IsStepLatest))
	}
	return s
}

// Flagged names the rows carrying a flag: "version 5 (is_latest,
// is_step_latest), version 4 (is_step_latest)", or "no version".
func Flagged(rows []catalog.Row, step bool) string {
	var parts []string
	for _, r := range rows {
		var flags []string
		if r.IsLatest {
			flags = append(flags, "is_latest")
		}
		if step && r.IsStepLatest {
			flags = append(flags, "is_step_latest")
		}
		if len(flags) > 0 {
			parts = append(parts, fmt.Sprintf("version %d (%s)", r.Version, strings.Join(flags, ", ")))
		}
	}
	if len(parts) == 0 {
		return "no version"
	}
	return strings.Join(parts, ", ")
}

func flagBit(b bool) int {
	if b {
		return 1
	}
	return 0
}
