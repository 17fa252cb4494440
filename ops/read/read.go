package read

// Reading data items (`swampj data get / versions / list`): a thin layer over
// package store that resolves versions the way swamp does — `latest` read as
// text, a legacy symlink, or the highest version directory; rename
// tombstones followed for latest-lookups (swamp-format §2.5, §2.7) — and, unlike swamp,
// says what is wrong with an unreadable version instead of answering
// "no data" or an empty record (#3955).

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/swampj/swampj"
	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/meta"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/ops/report"
	"github.com/swampj/swampj/ops/store"
)

// DataNotFoundError: the item, or the version asked for, does not exist.
type DataNotFoundError struct {
	Address string
	Version int64 // 0: the latest version was asked for
	Reason  string
}

func (e *DataNotFoundError) Error() string {
	if e.Version > 0 {
		return fmt.Sprintf("%s has no version %d: %s", e.Address, e.Version, e.Reason)
	}
	return fmt.Sprintf("no data at %s: %s", e.Address, e.Reason)
}
func (e *DataNotFoundError) Code() string        { return "not_found" }
func (e *DataNotFoundError) Class() swampj.Class { return swampj.ClassFailed }

// UnreadableDataError: the version exists but cannot be served — the files
// are missing, empty, invalid or do not match each other. Err lists every
// problem with its file.
type UnreadableDataError struct {
	Address string
	Version int64
	// OutOfRange is the text of a `latest` beyond store.MaxVersion (Version
	// is then 0).
	OutOfRange string
	// ViaLatest is true when the version is the one `latest` designates.
	ViaLatest bool
	// LastReadable is the highest readable version not above it (0: none),
	// what a reader can ask for instead.
	LastReadable int64
	Err          *store.UnreadableError
}

func (e *UnreadableDataError) Error() string {
	var b strings.Builder
	if e.OutOfRange != "" {
		fmt.Fprintf(&b, "%s version %s", e.Address, e.OutOfRange)
	} else {
		fmt.Fprintf(&b, "%s version %d", e.Address, e.Version)
	}
	if e.ViaLatest {
		b.WriteString(" (the version latest designates)")
	}
	b.WriteString(" is unreadable: ")
	for i, p := range e.Err.Problems {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s [%s]", p.Message, p.Path)
	}
	switch {
	case e.LastReadable > 0:
		fmt.Fprintf(&b, ". The last readable version is %d", e.LastReadable)
	default:
		b.WriteString(". No earlier version is readable")
	}
	return b.String()
}
func (e *UnreadableDataError) Unwrap() error       { return e.Err }
func (e *UnreadableDataError) Code() string        { return "unreadable_version" }
func (e *UnreadableDataError) Class() swampj.Class { return swampj.ClassFailed }

// DataContent is one readable version, open for reading.
type DataContent struct {
	Address repo.Address // after following renames
	Version int64
	// Rule says how the version was chosen: "file", "symlink" or "fallback"
	// (how `latest` was read), or "explicit" (a version was asked for).
	Rule         string
	Dir          string
	RawPath      string
	MetadataPath string
	Metadata     *meta.Metadata
	// RenamedFrom lists the data names whose rename tombstones were followed.
	RenamedFrom []string
	// Reader streams raw. When the metadata has a checksum, raw was hashed
	// and matched it before OpenData returned (a mismatch is an
	// *UnreadableDataError and no reader); should raw change after that,
	// the Read that reaches EOF reports it as *store.UnreadableError.
	// The caller closes it.
	Reader fsx.File
}

// OpenData opens version of the item at a (0: the version `latest`
// designates). A version that exists but is unreadable is an
// *UnreadableDataError naming each bad file; one that does not exist is a
// *DataNotFoundError. It never returns an empty reader for a damaged
// version, nor one of bytes that fail their checksum.
func OpenData(ctx context.Context, r *repo.Repo, a repo.Address, version int64, c host.Common) (*DataContent, error) {
	fsys := c.Disk()
	if err := repo.RefuseUnknownFormat(fsys, r.Base, false, nil); err != nil {
		return nil, err
	}
	itemDir, err := r.ItemDir(fsys, a)
	if err != nil {
		return nil, err
	}
	if version > 0 {
		return openVersion(ctx, fsys, a, itemDir, version, "explicit", false)
	}
	var renamed []string
	for depth := 0; ; depth++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		p, err := store.ReadLatest(fsys, itemDir)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, &DataNotFoundError{Address: a.String(), Reason: "the item does not exist"}
		}
		if err != nil {
			return nil, err
		}
		if p.Rule == store.PointerNone {
			return nil, &DataNotFoundError{Address: a.String(), Reason: "the item has no versions"}
		}
		if p.Version <= 0 {
			path := filepath.Join(itemDir, "latest")
			msg := fmt.Sprintf("latest designates version %d, which cannot exist", p.Version)
			if p.OutOfRange != "" {
				msg = fmt.Sprintf("latest holds %q, a version number beyond %d, which no version can have (swamp reads it inexactly and finds no data)",
					p.OutOfRange, store.MaxVersion)
			}
			return nil, &UnreadableDataError{Address: a.String(), Version: p.Version, OutOfRange: p.OutOfRange, ViaLatest: true,
				LastReadable: lastReadable(fsys, a, itemDir, 0),
				Err:          &store.UnreadableError{Path: itemDir, Problems: []store.Problem{{Code: store.CodeLatestInvalid, Path: path, Message: msg}}}}
		}
		c, err := openVersion(ctx, fsys, a, itemDir, p.Version, p.Rule.String(), true)
		if err != nil {
			return nil, err
		}
		c.RenamedFrom = renamed
		md := c.Metadata
		if md.Lifecycle != "deleted" || md.RenamedTo == "" {
			return c, nil
		}
		// A rename tombstone: swamp's latest-lookup continues at the new name.
		c.Reader.Close()
		if depth >= maxRenameDepth {
			return nil, &DataNotFoundError{Address: a.String(), Reason: fmt.Sprintf("more than %d renames to follow (%s)", maxRenameDepth, strings.Join(append(renamed, a.DataName), " -> "))}
		}
		if err := meta.ValidateDataName(md.RenamedTo); err != nil {
			return nil, &DataNotFoundError{Address: a.String(), Reason: fmt.Sprintf("renamed to %q, which is not a valid data name", md.RenamedTo)}
		}
		renamed = append(renamed, a.DataName)
		a.DataName = md.RenamedTo
		if itemDir, err = r.ItemDir(fsys, a); err != nil {
			return nil, err
		}
	}
}

func openVersion(ctx context.Context, fsys fsx.FS, a repo.Address, itemDir string, v int64, rule string, viaLatest bool) (*DataContent, error) {
	f, ver, err := store.ReadContentContext(ctx, fsys, itemDir, v)
	var ue *store.UnreadableError
	switch {
	case errors.As(err, &ue) && ue.Has(store.CodeVersionMissing) && !viaLatest:
		return nil, &DataNotFoundError{Address: a.String(), Version: v, Reason: "there is no directory " + filepath.Join(itemDir, strconv.FormatInt(v, 10))}
	case errors.As(err, &ue):
		return nil, &UnreadableDataError{Address: a.String(), Version: v, ViaLatest: viaLatest,
			LastReadable: lastReadable(fsys, a, itemDir, v), Err: ue}
	case err != nil:
		return nil, err
	}
	return &DataContent{Address: a, Version: v, Rule: rule, Dir: ver.Dir, RawPath: ver.RawPath,
		MetadataPath: ver.MetadataPath, Metadata: ver.Metadata, Reader: f}, nil
}

// lastReadable is the highest readable version below the given one (0: of all).
func lastReadable(fsys fsx.FS, a repo.Address, itemDir string, below int64) int64 {
	st, err := store.ScanItem(fsys, store.Item{Type: a.Type, ModelID: a.ModelID, DataName: a.DataName, Dir: itemDir}, store.CheckOptions{})
	if err != nil {
		return 0
	}
	var best int64
	for _, v := range st.Versions {
		if v.Readable() && (below <= 0 || v.Number < below) {
			best = v.Number
		}
	}
	return best
}

// DataVersion is one version of an item as `data versions` shows it. Every
// field is always present in JSON.
type DataVersion struct {
	Version int64 `json:"version"`
	// Latest: this is the version `latest` designates (swamp's isLatest).
	Latest bool `json:"isLatest"`
	// State is readable, incomplete (a write that stopped part-way, or a
	// streaming write in progress), damaged, or missing.
	State    string `json:"state"`
	Readable bool   `json:"readable"`
	Path     string `json:"path"`
	// From metadata.yaml, when it could be read.
	Size        *int64 `json:"size"`
	ContentType string `json:"contentType"`
	CreatedAt   string `json:"createdAt"`
	Checksum    string `json:"checksum"`
	Lifecycle   string `json:"lifecycle"`
	// RenamedTo is the new name a rename marker points at ("" otherwise).
	RenamedTo string `json:"renamedTo"`
	// RawSize is raw's size on disk (-1: no regular raw file).
	RawSize  int64            `json:"rawSize"`
	Problems []report.Problem `json:"problems"`
}

// DataItem is one item as `data list` shows it: swamp's keys for the same
// facts (id, name, version, contentType, type, streaming, size, createdAt —
// of the version `latest` designates, empty when it is unreadable), the
// model's, and swampj's own. Every field is always present in JSON.
type DataItem struct {
	Address string `json:"address"`
	// ID and the fields down to CreatedAt are the latest version's metadata.
	ID          string `json:"id"`
	DataName    string `json:"name"`
	DataType    string `json:"type"` // tag type: resource, file, report…
	ContentType string `json:"contentType"`
	Streaming   bool   `json:"streaming"`
	Size        *int64 `json:"size"`
	CreatedAt   string `json:"createdAt"`
	Type        string `json:"modelType"`
	ModelID     string `json:"modelId"`
	// ModelName is from the model's definition, else the latest version's
	// modelName tag ("": neither says).
	ModelName string `json:"modelName"`
	Path      string `json:"path"`
	// Latest is the version `latest` designates (null: none, or a number
	// beyond store.MaxVersion, whose text is then LatestOutOfRange), and
	// LatestRule how it was read: file, symlink, fallback (no usable
	// `latest`: the highest version directory) or none.
	Latest           *int64 `json:"version"`
	LatestOutOfRange string `json:"latestOutOfRange,omitempty"`
	LatestRule       string `json:"latestRule"`
	LatestReadable   bool   `json:"latestReadable"`
	// LastReadable is the highest readable version not above Latest: what a
	// repair would roll `latest` back to (null: none).
	LastReadable *int64 `json:"lastReadable"`
	// Versions counts the version directories; Unreadable lists those that
	// cannot be read.
	Versions   int              `json:"versions"`
	Unreadable []int64          `json:"unreadableVersions"`
	Problems   []report.Problem `json:"problems"`
}

// DataVersions lists the versions of one item: every canonical version
// directory, checked, plus the one `latest` designates if it has no
// directory.
func DataVersions(ctx context.Context, r *repo.Repo, a repo.Address, c host.Common) (*DataItem, []DataVersion, error) {
	fsys := c.Disk()
	if err := repo.RefuseUnknownFormat(fsys, r.Base, false, nil); err != nil {
		return nil, nil, err
	}
	itemDir, err := r.ItemDir(fsys, a)
	if err != nil {
		return nil, nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	st, err := store.ScanItem(fsys, store.Item{Type: a.Type, ModelID: a.ModelID, DataName: a.DataName, Dir: itemDir}, store.CheckOptions{})
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, &DataNotFoundError{Address: a.String(), Reason: "the item does not exist"}
	}
	if err != nil {
		return nil, nil, err
	}
	item := itemOf(st)
	item.ModelName, _ = ModelName(fsys, r, a)
	vs := make([]DataVersion, 0, len(st.Versions)+1)
	listed := false
	for _, v := range st.Versions {
		vs = append(vs, versionOf(v, st))
		listed = listed || v == st.Latest
	}
	if st.Latest != nil && !listed {
		vs = append(vs, versionOf(st.Latest, st))
	}
	return &item, vs, nil
}

// ListData lists every item under the data root whose TYPE/MODEL/NAME
// starts with prefix (all for ""), in walk order, each checked. Items found
// are returned even when part of the tree could not be listed (the error
// then says which directories).
//
// An item swamp renamed away — its latest version is a rename marker
// (lifecycle deleted with renamedTo, swamp-format §2.6.6) — is left out, in text and in
// JSON alike, as swamp's `data list` leaves it out (findAllForModel follows
// the marker to the new name, which is listed under its own address).
// `data versions` and `data get --version N` still show its versions, and
// `data get` follows the marker, as swamp's do. A deletion marker without
// renamedTo is listed, as swamp lists it.
func ListData(ctx context.Context, r *repo.Repo, prefix string, c host.Common) ([]DataItem, error) {
	fsys := c.Disk()
	if err := repo.RefuseUnknownFormat(fsys, r.Base, false, nil); err != nil {
		return nil, err
	}
	items, walkErr := store.FindItems(ctx, fsys, r.DataRoot, prefix)
	out := make([]DataItem, 0, len(items))
	names := map[[2]string]string{}
	var errs []error
	for _, it := range items {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		st, err := store.ScanItem(fsys, it, store.CheckOptions{})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if renamedAway(st) {
			continue
		}
		d := itemOf(st)
		k := [2]string{it.Type, it.ModelID}
		name, ok := names[k]
		if !ok {
			name, _ = ModelName(fsys, r, repo.Address{Type: it.Type, ModelID: it.ModelID, DataName: it.DataName})
			names[k] = name
		}
		d.ModelName = name
		out = append(out, d)
	}
	return out, errors.Join(append([]error{walkErr}, errs...)...)
}

// renamedAway reports whether the version `latest` designates is a rename
// marker (swamp's Data.isRenamed).
func renamedAway(st *store.ItemState) bool {
	md := st.Pointer.Version > 0 && st.Latest != nil && st.Latest.Metadata != nil
	return md && st.Latest.Metadata.Lifecycle == "deleted" && st.Latest.Metadata.RenamedTo != ""
}

func itemOf(st *store.ItemState) DataItem {
	it := st.Item
	d := DataItem{
		Address: it.Key(), Type: it.Type, ModelID: it.ModelID, DataName: it.DataName, Path: it.Dir,
		LatestRule: st.Pointer.Rule.String(), LatestReadable: st.LatestReadable != nil,
		Unreadable: []int64{}, Problems: report.ProblemsOf(st.Problems),
	}
	switch {
	case st.Pointer.OutOfRange != "":
		d.LatestOutOfRange = st.Pointer.OutOfRange
	case st.Pointer.Rule != store.PointerNone:
		v := st.Pointer.Version
		d.Latest = &v
	}
	if st.LastGood != nil {
		v := st.LastGood.Number
		d.LastReadable = &v
	}
	if st.LatestReadable != nil && st.LatestReadable.Metadata != nil {
		m := st.LatestReadable.Metadata
		d.ID, d.ContentType, d.Streaming, d.Size, d.CreatedAt = m.ID, m.ContentType, m.Streaming, m.Size, m.CreatedAt
		d.DataType, _ = m.Tags.Get("type")
	}
	for _, v := range st.Versions {
		d.Versions++
		if !v.Readable() {
			d.Unreadable = append(d.Unreadable, v.Number)
		}
	}
	return d
}

func versionOf(v *store.Version, st *store.ItemState) DataVersion {
	d := DataVersion{
		Version: v.Number, Latest: v == st.Latest, State: v.State.String(), Readable: v.Readable(),
		Path: v.Dir, RawSize: v.RawSize, Problems: report.ProblemsOf(v.Problems),
	}
	if m := v.Metadata; m != nil {
		d.Size, d.ContentType, d.CreatedAt, d.Checksum, d.Lifecycle, d.RenamedTo = m.Size, m.ContentType, m.CreatedAt, m.Checksum, m.Lifecycle, m.RenamedTo
	}
	return d
}

// ModelData is one model's items as swamp's `data list MODEL --json` groups
// them: by their type tag, swamp's standard types first (log, file,
// resource, data), then the others sorted; items by name in each group.
type ModelData struct {
	ModelID   string      `json:"modelId"`
	ModelName string      `json:"modelName"`
	ModelType string      `json:"modelType"`
	Namespace string      `json:"namespace,omitempty"`
	Groups    []DataGroup `json:"groups"`
	Total     int         `json:"total"`
}

// DataGroup is the items of one type tag.
type DataGroup struct {
	Type  string     `json:"type"`
	Items []DataItem `json:"items"`
}

// standardTypes is swamp's group order (data/list.ts STANDARD_TYPES).
var standardTypes = []string{"log", "file", "resource", "data"}

// GroupByModel groups items by model (in the order the models first
// appear), each as ModelData. An item whose type tag cannot be read (its
// latest version is unreadable) is grouped under "unreadable".
func GroupByModel(items []DataItem, namespace string) []ModelData {
	var out []ModelData
	index := map[[2]string]int{}
	byType := []map[string][]DataItem{}
	for _, it := range items {
		k := [2]string{it.Type, it.ModelID}
		i, ok := index[k]
		if !ok {
			i = len(out)
			index[k] = i
			out = append(out, ModelData{ModelID: it.ModelID, ModelName: it.ModelName, ModelType: it.Type, Namespace: namespace})
			byType = append(byType, map[string][]DataItem{})
		}
		t := it.DataType
		if t == "" {
			t = "unreadable"
		}
		byType[i][t] = append(byType[i][t], it)
		out[i].Total++
	}
	for i := range out {
		out[i].Groups = groupsOf(byType[i])
	}
	return out
}

func groupsOf(m map[string][]DataItem) []DataGroup {
	groups := []DataGroup{}
	add := func(t string) {
		items := m[t]
		sort.SliceStable(items, func(a, b int) bool { return items[a].DataName < items[b].DataName })
		groups = append(groups, DataGroup{Type: t, Items: items})
		delete(m, t)
	}
	for _, t := range standardTypes {
		if _, ok := m[t]; ok {
			add(t)
		}
	}
	rest := make([]string, 0, len(m))
	for t := range m {
		rest = append(rest, t)
	}
	sort.Strings(rest)
	for _, t := range rest {
		add(t)
	}
	return groups
}
