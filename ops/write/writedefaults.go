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
	"fmt"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/meta"
	"github.com/swampj/swampj/ops/read"
	"github.com/swampj/swampj/ops/repo"
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

// observeWriteDefaults reads what the next version of the item at a
// inherits (the top of this file).
func observeWriteDefaults(fsys fsx.FS, r *repo.Repo, a repo.Address, itemDir string) (writeDefaults, error) {
	md, from, err := read.CurrentVersion(fsys, r, a, itemDir)
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
	if d.ModelName, err = read.ModelName(fsys, r, a); err != nil {
		return writeDefaults{}, err
	}
	return d, nil
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
