package write

// What a version write inherits.
//
// swamp refuses a new version of an existing item unless its
// ownerDefinition has the ownerType and ownerRef of the item's current
// version (Data.isOwnedBy, checked in save/saveDeferred/allocateVersion of
// unified_data_repository.ts). A swampj write that stamped an owner of its
// own would make every later `swamp model method run` of that model fail
// with "Ownership validation failed". So a write carries, unless the
// caller gives them:
//
//   - ownerType and ownerRef of the item's current version — only those
//     two: the workflow fields (workflowId, jobName, …) describe who wrote
//     that one version, and definitionHash belongs to run outputs, so they
//     are the caller's (Workflow) and never copied;
//   - its modelName and specName tags (the catalog's model_name and
//     spec_name, what `swamp data query` filters on).
//
// "Current version" is what swamp's findByName returns for a latest-lookup:
// the version `latest` designates (a text file, a legacy symlink, else the
// highest version directory); a rename marker (lifecycle deleted with
// renamedTo) is followed to the new name, at most 5 times; a deletion
// marker is current like any version (it carries the owner). Where swamp
// would answer "no data" (no versions, a missing metadata.yaml, a marker
// chain too long or naming nothing) the item is new. Where swamp would fail
// on an unparsable current version (#3955), swampj uses the last readable
// version not above it — what a repair rolls `latest` back to.
//
// A new item gets what swamp's method runs of that model stamp: owner
// model-method with ownerRef the model id (the address's MODEL_ID);
// modelName the model's name, from its definition file
// (repo.FindModelDefinition), else from the modelName tag of the current
// version of another item of the model; specName the data name. swamp
// stamps the resource or file spec name there, which is the data name of
// every singleton output (result, log); for a factory instance it is not,
// and the caller says so with SpecName.
//
// The catalog's model_name is not consulted: it is derived from the same
// tags (and opening SQLite while planning, before the intent is journaled,
// could move a damaged catalog aside).
//
// All of it is observed under swamp's model lock, in planWrite, and the
// refusal of a different explicit owner comes before the intent is
// journaled. writeOverlapped, which plans before the lock, compares these
// defaults again once the lock is held (stillPlanned).

import (
	"errors"
	"fmt"
	"io/fs"
	"sort"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/meta"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/ops/store"
)

// OwnerModelMethod is the owner type swamp's method runs stamp.
const OwnerModelMethod = "model-method"

// writeDefaults is what one item's next version inherits. It is
// comparable: stillPlanned checks that nothing changed under the lock.
type writeDefaults struct {
	// Existing: the item has a current version; its owner is enforced.
	Existing bool
	// From names the version the defaults were read from ("" for a new
	// item), for messages.
	From                string
	OwnerType, OwnerRef string
	ModelName, SpecName string
}

// OwnerMismatchError is a write whose explicit owner is not the owner of
// the item's current version: swamp would refuse it, and after it swamp's
// own writers of the item would fail. It comes wrapped in an
// *InvalidWriteError; nothing was changed.
type OwnerMismatchError struct {
	DataName                    string
	ExistingType, ExistingRef   string
	RequestedType, RequestedRef string
	From                        string // the version the existing owner is read from
}

func (e *OwnerMismatchError) Error() string {
	return fmt.Sprintf("ownership validation failed for %q: existing owner %q (%s) does not match new owner %q, as swamp would refuse it; "+
		"give no owner to write as the existing one",
		e.DataName, e.ExistingType+":"+e.ExistingRef, e.From, e.RequestedType+":"+e.RequestedRef)
}

// currentVersion is swamp's findByName(type, model, name) for a
// latest-lookup (see the top of this file). md is nil when swamp finds no
// data.
func currentVersion(fsys fsx.FS, r *repo.Repo, a repo.Address, itemDir string) (md *meta.Metadata, from string, err error) {
	for depth := 0; ; depth++ {
		p, err := store.ReadLatest(fsys, itemDir)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, "", nil
		}
		if err != nil {
			return nil, "", err
		}
		if p.Rule == store.PointerNone || p.Version <= 0 {
			return nil, "", nil
		}
		v, err := store.ReadVersion(fsys, itemDir, p.Version, store.CheckOptions{})
		if err != nil {
			return nil, "", err
		}
		switch {
		case v.Metadata != nil:
			md = v.Metadata
		case hasCode(v.Problems, store.CodeMetadataMissing):
			return nil, "", nil // swamp: NotFound is "no data"
		default:
			// Unparsable: swamp would fail; take the last readable version.
			if md, from = lastReadableMeta(fsys, a, itemDir, p.Version); md == nil {
				return nil, "", nil
			}
		}
		if from == "" {
			from = fmt.Sprintf("%s version %d", a, v.Number)
		}
		if md.Lifecycle != "deleted" || md.RenamedTo == "" {
			return md, from, nil
		}
		// A rename marker: swamp looks up the new name, up to 5 times.
		if depth >= maxRenameDepth || meta.ValidateDataName(md.RenamedTo) != nil {
			return nil, "", nil
		}
		a.DataName = md.RenamedTo
		if itemDir, err = r.ItemDir(fsys, a); err != nil {
			return nil, "", nil
		}
		md, from = nil, ""
	}
}

func hasCode(ps []store.Problem, c store.Code) bool {
	for _, p := range ps {
		if p.Code == c {
			return true
		}
	}
	return false
}

// lastReadableMeta is the metadata of the highest readable version below n.
func lastReadableMeta(fsys fsx.FS, a repo.Address, itemDir string, n int64) (*meta.Metadata, string) {
	nums, err := store.ListVersions(fsys, itemDir)
	if err != nil {
		return nil, ""
	}
	for i := len(nums) - 1; i >= 0; i-- {
		if nums[i] >= n {
			continue
		}
		if v, err := store.ReadVersion(fsys, itemDir, nums[i], store.CheckOptions{}); err == nil && v.Readable() {
			return v.Metadata, fmt.Sprintf("%s version %d (the last readable one)", a, v.Number)
		}
	}
	return nil, ""
}

// observeWriteDefaults reads what the next version of the item at a
// inherits (the top of this file).
func observeWriteDefaults(fsys fsx.FS, r *repo.Repo, a repo.Address, itemDir string) (writeDefaults, error) {
	md, from, err := currentVersion(fsys, r, a, itemDir)
	if err != nil {
		return writeDefaults{}, err
	}
	if md != nil {
		d := writeDefaults{Existing: true, From: from, OwnerType: md.Owner.OwnerType, OwnerRef: md.Owner.OwnerRef}
		d.ModelName, _ = md.Tags.Get("modelName")
		d.SpecName, _ = md.Tags.Get("specName")
		return d, nil
	}
	d := writeDefaults{OwnerType: OwnerModelMethod, OwnerRef: a.ModelID, SpecName: a.DataName}
	if d.ModelName, err = modelNameOf(fsys, r, a); err != nil {
		return writeDefaults{}, err
	}
	return d, nil
}

// modelNameOf is the name of the model of a: from its definition file, else
// the modelName tag of another item's current version ("" if none says).
func modelNameOf(fsys fsx.FS, r *repo.Repo, a repo.Address) (string, error) {
	def, ok, err := r.FindModelDefinition(fsys, a.Type, a.ModelID)
	if err != nil {
		return "", err
	}
	if ok {
		return def.Name, nil
	}
	modelDir := r.ModelDir(a)
	entries, err := fsys.ReadDir(modelDir)
	if err != nil {
		return "", nil // no model directory yet, or not listable: nobody says
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		if e.IsDir() && e.Name() != a.DataName && meta.ValidateDataName(e.Name()) == nil {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	for _, n := range names {
		other := a
		other.DataName = n
		dir, err := r.ItemDir(fsys, other)
		if err != nil {
			continue
		}
		md, _, err := currentVersion(fsys, r, other, dir)
		if err != nil || md == nil {
			continue
		}
		if name, ok := md.Tags.Get("modelName"); ok && name != "" {
			return name, nil
		}
	}
	return "", nil
}

// applyDefaults fills the metadata template of p from what the caller gave
// and what the item inherits, refusing an explicit owner that differs from
// the current version's. It sets every field it depends on, so planning
// again (writeOverlapped) starts afresh.
func (p *pendingVersion) applyDefaults(d writeDefaults) error {
	w := p.w
	ownerType, ownerRef := w.OwnerType, w.OwnerRef
	if d.Existing {
		if (ownerType != "" && ownerType != d.OwnerType) || (ownerRef != "" && ownerRef != d.OwnerRef) {
			return &OwnerMismatchError{DataName: w.Address.DataName, ExistingType: d.OwnerType, ExistingRef: d.OwnerRef,
				RequestedType: orDefault(ownerType, d.OwnerType), RequestedRef: orDefault(ownerRef, d.OwnerRef), From: d.From}
		}
		ownerType, ownerRef = d.OwnerType, d.OwnerRef
	} else {
		ownerType, ownerRef = newItemOwner(w)
	}
	p.md.Owner.OwnerType, p.md.Owner.OwnerRef = ownerType, ownerRef
	p.md.Tags = writeTags(w, orDefault(w.ModelName, d.ModelName), orDefault(w.SpecName, d.SpecName))
	if err := meta.Validate(p.md); err != nil {
		return err
	}
	return nil
}

// newItemOwner is the owner of the first version of an item: the caller's,
// completed as swamp's method runs would (model-method, ownerRef the model
// id); any other owner type without a ref gets "swampj".
func newItemOwner(w VersionWrite) (string, string) {
	ownerType := orDefault(w.OwnerType, OwnerModelMethod)
	ref := w.OwnerRef
	if ref == "" {
		ref = DefaultOwnerRef
		if ownerType == OwnerModelMethod {
			ref = w.Address.ModelID
		}
	}
	return ownerType, ref
}
