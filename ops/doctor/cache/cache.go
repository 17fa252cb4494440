// Package cache is the doctor of an extension datastore's local cache (the
// S3 and the GCS extension: ops/remote says where the cache is and what
// swamp's next pull and push do with a file). The cache is that
// datastore's data root on this machine, so it is what the doctor checks
// there: each file against the index (the bucket's sizes and SHA-256),
// each version against its own metadata.yaml, each `latest` against the
// versions the cache or the bucket holds. The findings, statuses and
// report are ops/doctor's; what the cache adds is Finding.Next (what swamp
// does next with the file) and Report.Cache. ops.Doctor calls Run for a
// repo whose datastore is S3 or GCS.
//
// Reading order: cache.go (Run, the diagnosis, the judgement of each file
// and item), then repair.go (the journaled repair, under the bucket's
// lock).
package cache

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/doctor"
	"github.com/swampj/swampj/ops/meta"
	"github.com/swampj/swampj/ops/remote"
	"github.com/swampj/swampj/ops/report"
)

const alwaysHashBelow = 64 << 10

// cacheFile is one file found in the cache.
type cacheFile struct {
	rel  string // index key (namespace stripped)
	abs  string
	size int64
	mod  time.Time
}

// cacheFinding is a finding of the cache and whether the repair plan
// covers it.
type cacheFinding struct {
	doctor.Finding
	repairable bool
}

// Run is the doctor of c, the cache of an extension datastore (found by
// remote.Discover): it checks the cache against its index and each
// version's metadata and, with Repair and Confirm, repairs it under the
// bucket's lock (repair.go). It answers with the report a filesystem
// datastore's doctor.Run does. It never prints.
func Run(ctx context.Context, c *remote.Cache, o doctor.Options) (*doctor.Report, error) {
	if o.Confirm && !o.Repair {
		return nil, errors.New("doctor: Confirm requires Repair")
	}
	o = o.WithDefaults()
	fsys := o.Disk()
	mode := "check"
	if o.Repair {
		mode = "preview"
	}
	d, err := diagnoseCache(ctx, fsys, c, o)
	if err != nil {
		return nil, err
	}
	if !o.Repair || !o.Confirm || !d.plan.nonEmpty() {
		if o.Repair && o.Confirm {
			mode = "repair" // nothing the repair could change
		} else if o.Repair {
			d.plan.describe(d)
		}
		return d.report(mode, doctor.StatusFound, nil), nil
	}
	done, err := repairCache(ctx, fsys, c, o)
	if err == nil {
		return done.d.report("repair", doctor.StatusRepaired, done), nil
	}
	// Refused (the lock, the bucket), or failed and rolled back: the
	// findings stand as found, none was repaired, nothing moved.
	found := d
	if done != nil && done.d != nil {
		found = done.d
		found.moves, found.rewrites, found.quarantine = nil, nil, ""
	}
	rep := found.report("repair", doctor.StatusSkipped, done)
	for i := range rep.Findings {
		if rep.Findings[i].Status == doctor.StatusSkipped {
			rep.Findings[i].Reason = err.Error()
		}
	}
	return rep, err
}

// diagnoseCache walks the cache and judges every file and item.
func diagnoseCache(ctx context.Context, fsys fsx.FS, c *remote.Cache, o doctor.Options) (*cacheDiagnosis, error) {
	d := &cacheDiagnosis{c: c, fsys: fsys, o: o, files: map[string]*cacheFile{}}
	if _, err := fsys.Stat(c.Dir); errors.Is(err, fs.ErrNotExist) {
		// No cache yet: nothing pulled, nothing to push. Said, because a
		// clean report of nothing can also mean the wrong cache: swamp
		// keeps it under the home of the user who runs it.
		d.notes = append(d.notes, doctor.Note(fmt.Sprintf("there is no cache at %s: nothing of this datastore has been pulled there yet "+
			"(swamp keeps it under $SWAMP_HOME, else $HOME/.swamp, of the user who runs it; this check looked under %s)", c.Dir, swampHomeOf(c)), report.RemedyNone))
		return d, nil
	} else if err != nil {
		return nil, err
	}
	ix, err := remote.ReadIndex(fsys, c)
	if err != nil {
		d.warnings = append(d.warnings, err.Error())
	}
	st, err := remote.ReadSyncState(fsys, c)
	if err != nil {
		return nil, err
	}
	d.ix, d.st = ix, st
	d.fastPath = remote.FastPathArmed(st, ix)
	if ix != nil {
		d.indexEntries = len(ix.Entries)
	}
	files, err := walkCache(ctx, fsys, c)
	if err != nil {
		return nil, err
	}
	d.fileCount = len(files)
	for i := range files {
		d.files[files[i].rel] = &files[i]
	}
	if err := d.run(ctx); err != nil {
		return nil, err
	}
	sort.SliceStable(d.findings, func(i, j int) bool { return d.findings[i].Path < d.findings[j].Path })
	return d, nil
}

// report is the doctor's report of d in mode: each finding the plan
// covers has status done (found: found or would-repair, by mode), the
// others are a person's (StatusManual); the notes are notices.
func (d *cacheDiagnosis) report(mode string, done doctor.Status, rr *cacheRepaired) *doctor.Report {
	c := d.c
	rep := &doctor.Report{Repo: c.Repo, DataRoot: c.Dir, Namespace: c.Namespace, Mode: mode, ChecksumsVerified: d.o.VerifyChecksum,
		Findings: []doctor.Finding{}, Moves: []doctor.Move{}, InFlight: []doctor.InFlight{}, SwampChecks: []doctor.SwampCheck{},
		Cache: &doctor.CacheReport{Cache: c, Files: d.fileCount, IndexEntries: d.indexEntries, FastPath: d.fastPath, Rewrites: d.rewrites}}
	if done == doctor.StatusFound && mode == "preview" {
		done = doctor.StatusWouldRepair
	}
	for _, f := range d.findings {
		f.Status = doctor.StatusManual
		if f.repairable {
			f.Status = done
		}
		if f.Remedy == "" {
			f.Remedy = codeRemedy(f.Code)
		}
		if f.Status != doctor.StatusRepaired {
			rep.Remaining++
		}
		rep.Findings = append(rep.Findings, f.Finding)
	}
	if len(d.moves) > 0 {
		rep.Moves = d.moves
	}
	rep.Quarantine = d.quarantine
	warnings := d.warnings
	if rr != nil {
		rep.IntentID, rep.Cache.Lock = rr.intentID, rr.lock
		warnings = append(warnings, rr.warnings...)
	}
	rep.SetNotices(d.notes, warnings)
	rep.Tally()
	return rep
}

// codeRemedy is the usual remedy of code (the codes table).
func codeRemedy(code doctor.Code) report.Remedy {
	for _, c := range doctor.Codes() {
		if c.Code == code {
			return c.Remedy
		}
	}
	return ""
}

// walkCache lists every file of the cache that may cross the sync
// boundary, as the push walk sees it.
func walkCache(ctx context.Context, fsys fsx.FS, c *remote.Cache) ([]cacheFile, error) {
	var out []cacheFile
	root := c.Dir
	if c.Namespace != "" {
		root = filepath.Join(c.Dir, c.Namespace)
	}
	var walk func(dir string) error
	walk = func(dir string) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		ents, err := fsys.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, e := range ents {
			p := filepath.Join(dir, e.Name())
			if e.IsDir() {
				if err := walk(p); err != nil {
					return err
				}
				continue
			}
			rel, _ := filepath.Rel(root, p)
			rel = filepath.ToSlash(rel)
			if remote.Internal(rel) {
				continue
			}
			fi, err := fsys.Lstat(p)
			if err != nil {
				continue // gone meanwhile
			}
			out = append(out, cacheFile{rel: rel, abs: p, size: fi.Size(), mod: fi.ModTime()})
		}
		return nil
	}
	return out, walk(root)
}

// cacheDiagnosis is what the doctor found in a cache, and the repair's
// plan.
type cacheDiagnosis struct {
	c            *remote.Cache
	fsys         fsx.FS
	o            doctor.Options
	ix           *remote.Index
	st           *remote.SyncState
	files        map[string]*cacheFile
	fileCount    int
	indexEntries int
	fastPath     bool
	findings     []cacheFinding
	// notes are states normal in a lazily pulled cache (files other
	// checkouts wrote that this cache has not fetched yet and that the
	// next pull fetches): reported, never counted as problems.
	notes    []doctor.Notice
	warnings []string
	plan     cachePlan
	// What the repair plans (preview) or did: moves into quarantine,
	// `latest` rewrites.
	moves      []doctor.Move
	rewrites   []string
	quarantine string
}

func (d *cacheDiagnosis) changed(f *cacheFile) bool {
	return d.o.ChangedSince.IsZero() || f == nil || !f.mod.Before(d.o.ChangedSince)
}

func (d *cacheDiagnosis) add(f doctor.Finding, repairable bool) {
	d.findings = append(d.findings, cacheFinding{Finding: f, repairable: repairable})
}

// note records f as a note: a state the next pull settles by itself.
func (d *cacheDiagnosis) note(f doctor.Finding) {
	d.notes = append(d.notes, doctor.Notice{Kind: doctor.NoticeNote, Code: f.Code, Path: f.Path, Next: f.Next,
		Message: f.Path + ": " + f.Message + "; " + f.NextSays, Remedy: report.RemedyNone})
}

// cacheItem is one data item (data/{type}/{id}/{name}) of the cache.
type cacheItem struct {
	dir      string // cache-relative
	versions map[int]map[string]*cacheFile
	latest   *cacheFile
	touched  bool
}

func (d *cacheDiagnosis) run(ctx context.Context) error {
	items := map[string]*cacheItem{}
	getItem := func(dir string) *cacheItem {
		it := items[dir]
		if it == nil {
			it = &cacheItem{dir: dir, versions: map[int]map[string]*cacheFile{}}
			items[dir] = it
		}
		return it
	}
	var others []*cacheFile
	for _, f := range d.files {
		dir, base := path.Split(f.rel)
		dir = strings.TrimSuffix(dir, "/")
		if strings.HasPrefix(f.rel, "data/") {
			if base == "latest" {
				it := getItem(dir)
				it.latest = f
				it.touched = it.touched || d.changed(f)
				continue
			}
			vdir, vname := path.Split(dir)
			if n, err := strconv.Atoi(vname); err == nil && n > 0 && (base == "raw" || base == "metadata.yaml") {
				it := getItem(strings.TrimSuffix(vdir, "/"))
				if it.versions[n] == nil {
					it.versions[n] = map[string]*cacheFile{}
				}
				it.versions[n][base] = f
				it.touched = it.touched || d.changed(f)
				continue
			}
		}
		others = append(others, f)
	}
	// Index entries of items the cache has no file of at all.
	if d.ix != nil {
		for rel := range d.ix.Entries {
			if _, ok := d.files[rel]; ok || remote.Internal(rel) {
				continue
			}
			d.missing(rel)
		}
	}
	for _, f := range others {
		if !d.changed(f) {
			continue
		}
		d.judgeFile(f, nil)
	}
	dirs := make([]string, 0, len(items))
	for k := range items {
		dirs = append(dirs, k)
	}
	sort.Strings(dirs)
	for _, k := range dirs {
		if err := ctx.Err(); err != nil {
			return err
		}
		if it := items[k]; it.touched {
			if err := d.judgeItem(it); err != nil {
				return err
			}
		}
	}
	return nil
}

// indexed is the index entry of rel, when the index has one.
func (d *cacheDiagnosis) indexed(rel string) (remote.IndexEntry, bool) {
	if d.ix == nil {
		return remote.IndexEntry{}, false
	}
	e, ok := d.ix.Entries[rel]
	return e, ok
}

func (d *cacheDiagnosis) missing(rel string) {
	if d.st != nil && d.st.LazyPullActive && strings.HasPrefix(rel, "data/") && strings.HasSuffix(rel, "/raw") {
		return // lazy hydration: raw files come on first read
	}
	if !d.o.ChangedSince.IsZero() {
		return // a wrapped command's doctor judges what it wrote
	}
	f := doctor.Finding{Code: doctor.CodeCacheMissingFile, Path: rel, Message: "the index lists it (the bucket holds it) but the cache has no such file"}
	if d.fastPath {
		f.Next, f.NextSays = doctor.NextServe, "reads find nothing, and the next pull takes the fast path and does not fetch it"
		f.Fix = "turn the sidecar's fast path off so the next pull fetches it"
		d.plan.disarm = true
	} else {
		// Normal in a team: another checkout wrote it, and this cache
		// pulls what a command needs when it runs.
		f.Message = "the index lists it (another checkout wrote it) and this cache has not fetched it yet"
		f.Next, f.NextSays = doctor.NextRepull, "the next pull fetches it (its fast path is off)"
		f.Fix = "none needed: the next pull fetches it"
		d.note(f)
		return
	}
	d.add(f, true)
}

// judgeFile compares one file with the index: torn (size), stale
// (checksum), unknown. torn/stale are quarantined; v, when set, is the
// version the file belongs to (its metadata judged it readable).
func (d *cacheDiagnosis) judgeFile(f *cacheFile, onTorn func()) {
	if isTemp(f.rel) {
		d.add(doctor.Finding{Code: doctor.CodeCacheTempLeftover, Path: f.rel, Message: fmt.Sprintf("a temp file of the extension's atomic write (%d bytes) left by a crash", f.size),
			Next: doctor.NextPush, NextSays: "the next push walk uploads it to the bucket", Fix: "move it into quarantine"}, true)
		d.plan.quarantine(f)
		return
	}
	dirty := d.st.Dirty(f.rel)
	if dirty && !isVersionFile(f.rel) {
		return // a local change the next push uploads on purpose
	}
	// A version file under a dirty path comes here only when its own
	// metadata refused it (judgeItem): a version's files never change
	// once the bucket holds them, so one that differs from the index is
	// damage, and the push would upload it over the bucket's copy.
	e, ok := d.indexed(f.rel)
	if !ok {
		if d.ix == nil || dirty {
			return // nothing pulled yet, or a new local file: judged by its metadata
		}
		d.add(doctor.Finding{Code: doctor.CodeCacheUnknownFile, Path: f.rel, Message: "the index does not know this file and the sync state does not list it as a local change",
			Next: doctor.NextPush, NextSays: "the next push that walks the cache uploads it as a new object",
			Fix: "check what wrote it; swampj leaves it in place"}, false)
		return
	}
	if e.Size != f.size {
		d.tornVsIndex(f, e)
		if onTorn != nil {
			onTorn()
		}
		return
	}
	if e.SHA256 == "" || (f.size > alwaysHashBelow && !d.o.VerifyChecksum) {
		return
	}
	data, err := d.fsys.ReadFile(f.abs)
	if err != nil {
		return
	}
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != e.SHA256 {
		fd := doctor.Finding{Code: doctor.CodeCacheStaleFile, Path: f.rel, Message: fmt.Sprintf("%d bytes, the index's size, but not the bytes the index's SHA-256 names", f.size),
			Fix: "move it into quarantine and turn the fast path off, so the next pull fetches the bucket's copy"}
		fd.Next, fd.NextSays = doctor.NextServe, "reads get these bytes; a pull compares sizes only and never fetches it again"
		if dirty {
			fd.Next, fd.NextSays = doctor.NextPush, "reads get these bytes, and the next push walks this path (the sync state marks it changed) "+
				"and uploads them over the bucket's copy: their SHA-256 is not the index's"
		}
		d.moveOut(f, &fd)
		d.add(fd, true)
		if onTorn != nil {
			onTorn()
		}
	}
}

func (d *cacheDiagnosis) tornVsIndex(f *cacheFile, e remote.IndexEntry) {
	fd := doctor.Finding{Code: doctor.CodeCacheTornFile, Path: f.rel,
		Message: fmt.Sprintf("%d bytes in the cache, %d in the index (what the bucket holds): cut by a killed pull or a power cut", f.size, e.Size),
		Fix:     "move it into quarantine (out of the push walk) and turn the fast path off, so the next pull fetches the bucket's copy"}
	if d.fastPath {
		fd.Next, fd.NextSays = doctor.NextPush, "reads get the torn bytes; the next pull skips it (fast path) and the next write command's push uploads it over the bucket's good copy"
	} else {
		fd.Next, fd.NextSays = doctor.NextRepull, "reads get the torn bytes until the next pull, which fetches it again (sizes differ)"
	}
	d.moveOut(f, &fd)
	d.add(fd, true)
}

// moveOut plans a torn or stale indexed file's move into quarantine. When
// the sync state's dirty tracking overflowed, a push deletes from the
// bucket every indexed object the cache lacks, so the file stays in place
// (the pull the fast path's removal forces replaces it: sizes or bytes
// differ) and only a copy of it goes to quarantine.
func (d *cacheDiagnosis) moveOut(f *cacheFile, fd *doctor.Finding) {
	d.plan.disarm = true
	if d.st != nil && d.st.DirtyPathsOverflowed && d.st.LocalDirty {
		fd.Fix = "copy it into quarantine and turn the fast path off, so the next pull replaces it with the bucket's copy " +
			"(it stays in place: the sync state's dirty tracking overflowed, and such a push deletes bucket objects the cache lacks)"
		d.plan.keep = append(d.plan.keep, f)
		return
	}
	d.plan.quarantine(f)
}

// judgeItem judges each version's files against the index and against the
// version's own metadata.yaml, then `latest`.
func (d *cacheDiagnosis) judgeItem(it *cacheItem) error {
	comes := map[int]bool{} // versions readable now, or whose good copy the next pull brings
	whole := map[int]bool{} // versions this cache holds whole now: `latest` may name them
	for n, files := range it.versions {
		vrel := fmt.Sprintf("%s/%d", it.dir, n)
		_, mIndexed := d.indexed(vrel + "/metadata.yaml")
		// Against the version's own metadata first (its size and the
		// SHA-256 of raw it records): a version under a dirty path that
		// its metadata vouches for is this checkout's own change (a new
		// version, or an append that rewrote raw and its metadata), which
		// the push uploads on purpose.
		why := d.versionUnreadable(files)
		dirty := d.st.Dirty(vrel+"/metadata.yaml") || d.st.Dirty(vrel+"/raw")
		if dirty && why == "" {
			comes[n] = true
			whole[n] = files["metadata.yaml"] != nil && files["raw"] != nil
			continue
		}
		// Then against the index (size, and SHA-256 where it has one),
		// dirty or not: a dirty path is walked by the next push, so a
		// damaged file under it is uploaded over the bucket's copy.
		torn := false
		for _, name := range []string{"metadata.yaml", "raw"} {
			if f := files[name]; f != nil {
				d.judgeFile(f, func() { torn = true })
			}
		}
		if torn {
			if mIndexed {
				comes[n] = true
			}
			continue
		}
		if why == "" {
			comes[n] = true
			whole[n] = files["metadata.yaml"] != nil && files["raw"] != nil
			continue
		}
		if mIndexed && dirty {
			// The files have the index's size (and bytes, where it has a
			// SHA-256), yet the metadata refuses them: the index cannot
			// tell which bytes are right, the metadata says these are not.
			// Quarantined, the pull fetches the bucket's copy.
			for _, name := range []string{"metadata.yaml", "raw"} {
				f := files[name]
				if f == nil {
					continue
				}
				if e, ok := d.indexed(f.rel); ok && e.SHA256 != "" {
					continue // the bytes the bucket holds
				}
				fd := doctor.Finding{Code: doctor.CodeCacheTornFile, Path: f.rel, Item: it.dir, Version: int64(n),
					Message:  fmt.Sprintf("%d bytes, the index's size, but its version's metadata refuses it: %s", f.size, why),
					Next:     doctor.NextPush,
					NextSays: "reads fail on it, and the next push (it is under a path the sync state marks changed) uploads it over the bucket's copy",
					Fix:      "move it into quarantine and turn the fast path off, so the next pull fetches the bucket's copy"}
				d.moveOut(f, &fd)
				d.add(fd, true)
			}
			comes[n] = true
			continue
		}
		if !mIndexed {
			for _, name := range []string{"metadata.yaml", "raw"} {
				if f := files[name]; f != nil {
					d.plan.quarantine(f)
				}
			}
			d.add(doctor.Finding{Code: doctor.CodeCacheTornFile, Path: vrel, Item: it.dir, Version: int64(n),
				Message:  "version " + strconv.Itoa(n) + " is not readable: " + why + " (the bucket has no good copy)",
				Next:     doctor.NextPush,
				NextSays: "reads fail on it, and the next push uploads it as it is",
				Fix:      "move its files into quarantine; `latest` is pointed at the last readable version"}, true)
		}
	}
	// Versions the bucket holds (the index lists their metadata.yaml)
	// that this cache has not fetched yet: the next pull brings them.
	if d.ix != nil {
		pre := it.dir + "/"
		for rel := range d.ix.Entries {
			if rest, ok := strings.CutPrefix(rel, pre); ok {
				if v, name, ok := strings.Cut(rest, "/"); ok && name == "metadata.yaml" {
					if n, err := strconv.Atoi(v); err == nil && it.versions[n] == nil {
						comes[n] = true
					}
				}
			}
		}
	}
	return d.judgeLatest(it, comes, whole)
}

// versionUnreadable is why swamp cannot read a version ("" when it can):
// metadata.yaml absent, empty or refused; raw absent or of another size
// than the metadata says.
func (d *cacheDiagnosis) versionUnreadable(files map[string]*cacheFile) string {
	mf := files["metadata.yaml"]
	if mf == nil {
		return "metadata.yaml is missing"
	}
	data, err := d.fsys.ReadFile(mf.abs)
	if err != nil {
		return err.Error()
	}
	m, err := meta.Decode(data)
	if err != nil {
		return "metadata.yaml: " + err.Error()
	}
	rf := files["raw"]
	if m.Size != nil {
		if rf == nil {
			if d.st != nil && d.st.LazyPullActive {
				return ""
			}
			return "raw is missing"
		}
		if rf.size != *m.Size {
			return fmt.Sprintf("raw has %d bytes, its metadata says %d", rf.size, *m.Size)
		}
	}
	if m.Checksum != "" && rf != nil && (rf.size <= alwaysHashBelow || d.o.VerifyChecksum) {
		raw, err := d.fsys.ReadFile(rf.abs)
		if err == nil {
			if sum := sha256.Sum256(raw); hex.EncodeToString(sum[:]) != m.Checksum {
				return "raw's SHA-256 is not its metadata's checksum"
			}
		}
	}
	return ""
}

// judgeLatest: the pointer should name the version the index's `latest`
// names (when this cache has not changed it itself), and never a version
// that neither the cache nor the bucket holds.
func (d *cacheDiagnosis) judgeLatest(it *cacheItem, comes, whole map[int]bool) error {
	lf := it.latest
	if lf == nil {
		return nil
	}
	rel := it.dir + "/latest"
	cur, err := d.fsys.ReadFile(lf.abs)
	if err != nil {
		return err
	}
	named, perr := strconv.Atoi(string(bytes.TrimSpace(cur)))
	highest := 0
	for n := range comes {
		if n > highest {
			highest = n
		}
	}
	var want int
	var why string
	e, indexed := d.indexed(rel)
	switch {
	case d.st.Dirty(rel) && perr == nil && comes[named]:
		return nil // this checkout's own write, pushed next
	case indexed && e.SHA256 != "" && sha(cur) != e.SHA256:
		// The index names the bytes the bucket holds; find the version they say.
		for n := range comes {
			if sha([]byte(strconv.Itoa(n))) == e.SHA256 {
				want = n
			}
		}
		if want == 0 {
			return nil // judged by judgeFile (stale/torn), re-pulled
		}
		why = fmt.Sprintf("the index (the bucket) says version %d; a pull compares sizes only, so it never fetched the new pointer", want)
	case perr != nil || !comes[named]:
		if highest == 0 {
			return nil
		}
		want = highest
		why = fmt.Sprintf("version %q is neither readable in the cache nor in the bucket", string(bytes.TrimSpace(cur)))
	default:
		return nil
	}
	if want == named {
		return nil
	}
	// A latest judged torn or stale by judgeFile is rewritten (or left)
	// instead of quarantined: reads need a pointer now, not after the
	// next pull.
	d.plan.unquarantine(rel)
	d.dropFinding(rel)
	if !whole[want] {
		// Pointing `latest` at a version this cache does not hold would
		// turn a stale read into "Data not found": it is left as it is
		// until the pull has brought the version.
		f := doctor.Finding{Code: doctor.CodeCacheStaleLatest, Path: rel, Item: it.dir, Version: int64(want),
			Message: fmt.Sprintf("`latest` says %q: %s; version %d is not in this cache yet, so `latest` is left as it is",
				string(bytes.TrimSpace(cur)), why, want),
			Next: doctor.NextRepull,
			NextSays: fmt.Sprintf("'swamp data get' returns version %q; the next pull fetches version %d but, comparing sizes only, may leave this pointer",
				string(bytes.TrimSpace(cur)), want),
			Fix: fmt.Sprintf("after the pull that fetches version %d (a sync of the datastore, or the item's next write), "+
				"a confirmed repair points `latest` at it", want)}
		if d.fastPath {
			// The fast path would keep the version from ever arriving.
			f.Next, f.NextSays = doctor.NextServe, fmt.Sprintf("'swamp data get' returns version %q, and the next pull takes the fast path and does not fetch version %d",
				string(bytes.TrimSpace(cur)), want)
			f.Fix = fmt.Sprintf("turn the sidecar's fast path off so the next pull fetches version %d; then rerun the repair to point `latest` at it", want)
			d.plan.disarm = true
			d.add(f, true)
			return nil
		}
		d.note(f)
		return nil
	}
	d.add(doctor.Finding{Code: doctor.CodeCacheStaleLatest, Path: rel, Item: it.dir, Version: int64(want),
		Message:  fmt.Sprintf("`latest` says %q: %s", string(bytes.TrimSpace(cur)), why),
		Next:     doctor.NextServe,
		NextSays: fmt.Sprintf("'swamp data get' returns version %q until this checkout writes the item itself", string(bytes.TrimSpace(cur))),
		Fix:      fmt.Sprintf("rewrite `latest` to %d through the journal (its old bytes kept in quarantine)", want)}, true)
	d.plan.latest = append(d.plan.latest, latestFix{file: lf, rel: rel, old: cur, want: want})
	return nil
}

func (d *cacheDiagnosis) dropFinding(rel string) {
	out := d.findings[:0]
	for _, f := range d.findings {
		if f.Path != rel {
			out = append(out, f)
		}
	}
	d.findings = out
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// isVersionFile: rel is a version's raw or metadata.yaml
// (data/{type}/{id}/{name}/{n}/raw), files no writer changes once the
// bucket holds them but an append.
func isVersionFile(rel string) bool {
	dir, base := path.Split(rel)
	if base != "raw" && base != "metadata.yaml" || !strings.HasPrefix(rel, "data/") {
		return false
	}
	n, err := strconv.Atoi(path.Base(strings.TrimSuffix(dir, "/")))
	return err == nil && n > 0
}

// isTemp: atomic_write.ts names its temps .{uuid}.tmp beside the target.
func isTemp(rel string) bool {
	base := path.Base(rel)
	return strings.HasPrefix(base, ".") && strings.HasSuffix(base, ".tmp") && len(base) == len(".")+36+len(".tmp")
}

// swampHomeOf is the swamp home the cache path c.Dir was derived from
// ({home}/repos/{repoId}).
func swampHomeOf(c *remote.Cache) string {
	return filepath.Dir(filepath.Dir(c.Dir))
}
