package read

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

// maxRenameDepth is how many rename tombstones a latest-lookup follows
// before giving up, as swamp's findByName does (swamp-format §2.6.6).
const maxRenameDepth = 5

// CurrentVersion is swamp's findByName(type, model, name) for a
// latest-lookup: the version `latest` designates (a text file, a legacy
// symlink, else the highest version directory); a rename marker (lifecycle
// deleted with renamedTo) is followed to the new name, at most
// maxRenameDepth times; a deletion marker is current like any version. md is
// nil where swamp finds no data (no versions, a missing metadata.yaml, a
// marker chain too long or naming nothing). Where swamp would fail on an
// unparsable current version, it is the last readable version not above it
// — what a repair rolls `latest` back to. from names the version read, for
// messages. A nil fsys is the real disk.
func CurrentVersion(fsys fsx.FS, r *repo.Repo, a repo.Address, itemDir string) (md *meta.Metadata, from string, err error) {
	fsys = fsx.OrReal(fsys)
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

// ModelName is the name of the model of a: from its definition file, else
// the modelName tag of another item's current version ("" if none says).
// A nil fsys is the real disk.
func ModelName(fsys fsx.FS, r *repo.Repo, a repo.Address) (string, error) {
	fsys = fsx.OrReal(fsys)
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
		md, _, err := CurrentVersion(fsys, r, other, dir)
		if err != nil || md == nil {
			continue
		}
		if name, ok := md.Tags.Get("modelName"); ok && name != "" {
			return name, nil
		}
	}
	return "", nil
}
