package migrate

// A migration's plan: the moves of each subdirectory (merging into what is already
// there), the manifest and configuration steps, the catalog restamp, and the
// quarantine of catalog copies.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/swampj/swampj/ops/internal/engine"
	"github.com/swampj/swampj/ops/internal/protocol"
	"github.com/swampj/swampj/ops/report"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/ops/store"
)

// migrationPlan is what planMigration found on disk and the steps that
// bring it to the other side.
type migrationPlan struct {
	ns, base string
	reverse  bool
	unset    bool
	moves    []DirectoryMove
	steps    []journal.Step
	// stepSubdir[i] is the subdirectory step i moves ("" for the shared
	// steps after the barrier), to name what succeeded when a step fails.
	stepSubdir []string
	warnings   []MigrateWarning
	restamps   bool
	// lockFiles are files named like a per-model lock (.lock) that the
	// plan's walk came across; sourceDataWalked says the walk listed the
	// whole source side of the data tree (or there is none).
	lockFiles        []string
	sourceDataWalked bool
}

func (p *migrationPlan) intentKind() string {
	switch {
	case p.unset:
		return "unset-migrate"
	case p.reverse:
		return "reverse"
	}
	return "migrate"
}

func (p *migrationPlan) summary() string {
	names := make([]string, len(p.moves))
	for i, m := range p.moves {
		names[i] = m.Subdir
	}
	what := strings.Join(names, ", ")
	if what == "" {
		what = "no directories"
	}
	switch {
	case p.unset:
		return fmt.Sprintf("unset namespace %q, moving back %s", p.ns, what)
	case p.reverse:
		return fmt.Sprintf("move %s out of namespace %q", what, p.ns)
	}
	return fmt.Sprintf("move %s into namespace %q", what, p.ns)
}

func (p *migrationPlan) totals() (files, bytes int64) {
	for _, m := range p.moves {
		files += m.FileCount
		bytes += m.TotalBytes
	}
	return files, bytes
}

func (p *migrationPlan) preview(confirm bool) *MigratePreview {
	files, bytes := p.totals()
	dirs := append([]DirectoryMove{}, p.moves...)
	return &MigratePreview{Namespace: p.ns, DatastorePath: p.base, Reverse: p.reverse, Confirm: confirm,
		Directories: dirs, TotalFiles: files, TotalBytes: bytes, Steps: len(p.steps), Fsyncs: predictDirFsyncs(p.steps),
		NothingToDo: len(p.steps) == 0, Warnings: p.warnings}
}

// failure turns a failed step into the partial report: which subdirectories
// are fully on the other side, which one failed.
func (p *migrationPlan) failure(id uint64, err error, opts MigrateOptions) error {
	failedAt := -1
	var se *engine.StepError
	var ce *engine.ConflictError
	switch {
	case errors.As(err, &se):
		failedAt = se.Index
	case errors.As(err, &ce):
		failedAt = ce.Index
	}
	fe := &MigrateFailedError{Namespace: p.ns, DatastorePath: p.base, Reverse: p.reverse, IntentID: id,
		Succeeded: []string{}, Err: err, Rerun: rerunRemedy(opts)}
	if failedAt < 0 {
		return fe
	}
	lastStep := map[string]int{}
	for i, sub := range p.stepSubdir {
		if sub != "" {
			lastStep[sub] = i
		}
	}
	fe.Failed = p.stepSubdir[failedAt]
	for _, m := range p.moves {
		if last, ok := lastStep[m.Subdir]; ok && last < failedAt && m.Subdir != fe.Failed {
			fe.Succeeded = append(fe.Succeeded, m.Subdir)
		}
	}
	return fe
}

// rerunRemedy is the run that finishes a failed migration: the same one.
func rerunRemedy(opts MigrateOptions) report.Remedy {
	switch {
	case opts.Unset:
		return report.RemedyUnsetMigrate
	case opts.Reverse:
		return report.RemedyMigrateReverse
	}
	return report.RemedyMigrate
}

// migrationPlanner walks the two sides and collects the plan.
type migrationPlanner struct {
	progress    report.Progress
	ctx         context.Context
	fsys        fsx.FS
	r           *repo.Repo
	plan        *migrationPlan
	liveCatalog string // the directory holding the repo's own catalog
	rows        stampRows

	subdir     string          // the subdirectory being planned
	collisions []string        // "subdir/rel" of every non-identical clash
	counted    []countedTree   // subtrees whose files change sides
	gone       map[string]bool // subdirectories whose source the plan removes
	nsMkdir    string          // {base}/{ns} to create before the first move, if missing
	newDirs    []string        // directories the plan creates, not yet followed by a barrier
	emptied    []emptiedDir    // merged sources to remove after the barrier, deepest first
	copies     []string        // catalog copies an older swamp carried into the namespace
	qdir       string          // quarantineDir, once chosen
}

// emptiedDir is a merge source the plan removes once emptied.
type emptiedDir struct{ subdir, path string }

// countedTree is a moved path whose files are counted into moves[move].
type countedTree struct {
	move int
	path string
}

// planMigration reads the disk and returns the plan. hasRows says whether
// the catalog has rows of a namespace (read-only for a preview; the run's
// own catalog handle for a confirmed run, which the restamp step reuses).
func planMigration(ctx context.Context, r *repo.Repo, opts MigrateOptions, rows stampRows) (*migrationPlan, error) {
	fsys := opts.fsys
	opts.Progress.Emit("planning", 0, 0, "files")
	p := &migrationPlanner{ctx: ctx, fsys: fsys, r: r, progress: opts.Progress, liveCatalog: filepath.Dir(r.CatalogPath), gone: map[string]bool{}, rows: rows,
		plan: &migrationPlan{ns: r.Namespace, base: r.Base, reverse: opts.Reverse, unset: opts.Unset}}
	nsDir := filepath.Join(r.Base, r.Namespace)
	nsExists, err := topLevelDir(fsys, r.Base, nsDir)
	if err != nil {
		return nil, err
	}

	if !opts.Reverse && !nsExists {
		p.nsMkdir = nsDir
	}
	if !opts.Reverse {
		if err := refuseForeignNamespaces(fsys, r); err != nil {
			return nil, err
		}
	}
	var subdirs []string
	if nsExists || !opts.Reverse {
		subdirs = migrationSubdirs(r, opts.Reverse)
	}
	for _, s := range subdirs {
		if err := p.planSubdir(s); err != nil {
			return nil, err
		}
	}
	if len(p.collisions) > 0 {
		sort.Strings(p.collisions)
		return nil, &CollisionError{Paths: p.collisions}
	}
	if err := p.count(); err != nil {
		return nil, err
	}
	if len(p.plan.steps) > 0 {
		p.add("", journal.Step{Kind: engine.KindBarrier, Note: "make every rename durable: one fsync per parent directory"})
	}
	for _, e := range p.emptied {
		p.add(e.subdir, journal.Step{Kind: protocol.KindMoveRmdir, Path: e.path, Note: e.subdir + " (emptied)"})
	}
	if err := p.planQuarantine(); err != nil {
		return nil, err
	}
	if !opts.Reverse {
		if err := p.planHiddenLocal(); err != nil {
			return nil, err
		}
	}
	if err := p.planTail(nsDir, opts); err != nil {
		return nil, err
	}
	return p.plan, nil
}

// migrateStepProgress reports the executor's steps as "moving", and the
// catalog steps (the restamp, whose commit is one long step) as
// "restamping catalog" before they run.
func migrateStepProgress(p report.Progress, steps []journal.Step) func(done, total int) {
	if p == nil {
		return nil
	}
	p.Emit("moving", 0, int64(len(steps)), "steps")
	return func(done, total int) {
		if done < len(steps) && steps[done].Kind == protocol.KindCatalog {
			p.Emit("restamping catalog", 0, 0, "")
			return
		}
		p.Emit("moving", int64(done), int64(total), "steps")
	}
}

// migrationSubdirs is what a run looks at. Reverse: all 15 default
// subdirectories, since an older swamp carried secrets and bundles into the
// namespace too. Forward: only the namespaced tier (repo.Directories) —
// never secrets or bundles, never a subdirectory the exclude globs keep
// local.
func migrationSubdirs(r *repo.Repo, reverse bool) []string {
	if reverse {
		return repo.DefaultSubdirs
	}
	var out []string
	for _, s := range r.Directories {
		if !r.IsExcluded(s) {
			out = append(out, s)
		}
	}
	return out
}

// refuseForeignNamespaces keeps swamp's guard (swamp-format §4.4 step 2): data of other
// namespaces under the base must not be absorbed into this one.
func refuseForeignNamespaces(fsys fsx.FS, r *repo.Repo) error {
	ms, err := repo.ListNamespaces(fsys, r.Base)
	if err != nil {
		return err
	}
	var others []string
	for _, m := range ms {
		if m.Namespace != r.Namespace {
			others = append(others, m.Namespace)
		}
	}
	if len(others) > 0 {
		return &ForeignNamespacesError{Namespaces: others}
	}
	return nil
}

// add appends a step. The first step of a forward run that moves
// something is preceded by the creation of {base}/{ns} when it is missing.
func (p *migrationPlanner) add(subdir string, s journal.Step) {
	if p.nsMkdir != "" && subdir != "" {
		mkdir := p.nsMkdir
		p.nsMkdir = ""
		p.add(subdir, journal.Step{Kind: protocol.KindMoveMkdir, Path: mkdir, Note: "namespace directory"})
	}
	// A move into a directory this plan created waits until that
	// directory's own entry is durable: otherwise a power cut may keep the
	// move and lose the mkdir, and everything moved into it with it
	// (ALICE's omission of one un-fsynced operation; found by
	// TestMigrateALICECrashStates).
	switch s.Kind {
	case protocol.KindMkdir, protocol.KindMoveMkdir:
		p.newDirs = append(p.newDirs, s.Path)
	case engine.KindBarrier:
		p.newDirs = nil
	case protocol.KindMove, protocol.KindRename:
		for _, d := range p.newDirs {
			if to := filepath.Dir(s.To); to == d || strings.HasPrefix(to, d+string(filepath.Separator)) {
				p.newDirs = nil
				p.plan.steps = append(p.plan.steps, journal.Step{Kind: engine.KindBarrier, Note: "make the new directories durable before moving into them"})
				p.plan.stepSubdir = append(p.plan.stepSubdir, subdir)
				break
			}
		}
	}
	p.plan.steps = append(p.plan.steps, s)
	p.plan.stepSubdir = append(p.plan.stepSubdir, subdir)
}

func (p *migrationPlanner) sides(subdir string) (src, dst string) {
	ns := filepath.Join(p.r.Base, p.r.Namespace, subdir)
	solo := filepath.Join(p.r.Base, subdir)
	if p.plan.reverse {
		return ns, solo
	}
	return solo, ns
}

// planSubdir plans one subdirectory: a whole rename when the destination is
// free and the source holds no catalog, entry by entry around the catalog,
// or a merge when both sides hold the directory.
func (p *migrationPlanner) planSubdir(subdir string) error {
	p.subdir = subdir
	src, dst := p.sides(subdir)
	srcKind, err := positionKind(p.fsys, p.r.Base, src)
	if err != nil || srcKind != posDir {
		p.plan.sourceDataWalked = p.plan.sourceDataWalked || (err == nil && subdir == "data")
		return err // nothing to move (swamp skips a source that is not a directory)
	}
	if subdir == "data" {
		// Every entry below is either renamed (and its subtree counted),
		// merged (listed), or a catalog file: the walk sees it all.
		p.plan.sourceDataWalked = true
	}
	dstKind, err := positionKind(p.fsys, p.r.Base, dst)
	if err != nil {
		return err
	}
	if err := p.checkSameDevice(src, dst); err != nil {
		return err
	}
	ents, err := p.fsys.ReadDir(src)
	if err != nil {
		return err
	}
	var catalogFiles []string
	var movable []fs.DirEntry
	for _, e := range ents {
		if repo.IsCatalogFile(e.Name()) {
			catalogFiles = append(catalogFiles, e.Name())
		} else {
			movable = append(movable, e)
		}
	}
	if len(catalogFiles) > 0 && src != p.liveCatalog {
		p.warnCatalogCopies(src, catalogFiles)
		if len(movable) == 0 {
			return nil // only catalog copies: nothing to move
		}
	}
	// A destination that is a directory is merged into entry by entry, in
	// both directions (#3316 case C): after ordinary use of a
	// namespaced repo swamp has written files at the un-namespaced path
	// (the .log of every method run lands in {base}/outputs), and a reverse
	// run that refused whenever the solo path held a data file could never
	// be run. Identical files are dropped from the source, files only at the
	// source are moved in, and only a real clash (same path, different
	// bytes, or a file facing a directory) refuses the whole run up front,
	// naming every such path (CollisionError) — nothing is overwritten.
	if dstKind == posDir {
		if catalogs, err := catalogNames(p.fsys, dst); err != nil {
			return err
		} else if len(catalogs) > 0 && dst != p.liveCatalog {
			p.warnCatalogCopies(dst, catalogs)
		}
	}

	move := len(p.plan.moves)
	p.plan.moves = append(p.plan.moves, DirectoryMove{Subdir: subdir, Source: src, Destination: dst})
	if dstKind == posOther {
		p.plan.moves[move].Blocked = protocol.FileWhereDirectoryText(dst)
	}
	before := len(p.plan.steps)
	switch {
	case dstKind == posDir:
		if err := p.merge(move, src, dst, "", 0); err != nil {
			return err
		}
	case len(catalogFiles) == 0:
		// A destination that is a file is not merged into: the rename is
		// planned and fails at run time, leaving the intent open for a
		// re-run once the obstacle is gone.
		p.add(subdir, journal.Step{Kind: protocol.KindMove, Path: src, To: dst, Note: subdir})
		p.counted = append(p.counted, countedTree{move, src})
		p.gone[subdir] = true
	case len(movable) > 0:
		p.add(subdir, journal.Step{Kind: protocol.KindMoveMkdir, Path: dst, Note: subdir + " (the catalog stays in " + src + ")"})
		for _, e := range movable {
			from := filepath.Join(src, e.Name())
			p.add(subdir, journal.Step{Kind: protocol.KindMove, Path: from, To: filepath.Join(dst, e.Name()), Note: subdir})
			p.counted = append(p.counted, countedTree{move, from})
		}
	}
	if len(p.plan.steps) == before {
		p.plan.moves = p.plan.moves[:move] // only catalog files: nothing to move
	}
	return nil
}

// merge plans src into dst, both directories: entries missing at dst are
// renamed whole, directories on both sides are merged recursively, files on
// both sides must be byte-identical (the source copy is dropped). The
// source directory is removed once empty — unless it keeps the catalog.
func (p *migrationPlanner) merge(move int, src, dst, rel string, depth int) error {
	if err := p.ctx.Err(); err != nil {
		return err
	}
	ents, err := p.fsys.ReadDir(src)
	if err != nil {
		return err
	}
	keepsCatalog := false
	for _, e := range ents {
		name := e.Name()
		if depth == 0 && repo.IsCatalogFile(name) {
			keepsCatalog = true
			continue
		}
		from, to, relPath := filepath.Join(src, name), filepath.Join(dst, name), pathJoin(rel, name)
		if name == modelLockName {
			p.plan.lockFiles = append(p.plan.lockFiles, from)
		}
		toInfo, err := p.fsys.Lstat(to)
		if errors.Is(err, fs.ErrNotExist) {
			p.add(p.subdir, journal.Step{Kind: protocol.KindMove, Path: from, To: to, Note: p.subdir})
			p.counted = append(p.counted, countedTree{move, from})
			continue
		}
		if err != nil {
			return err
		}
		fromInfo, err := p.fsys.Lstat(from)
		if err != nil {
			return err
		}
		switch {
		case fromInfo.IsDir() && toInfo.IsDir():
			if err := p.merge(move, from, to, relPath, depth+1); err != nil {
				return err
			}
		case fromInfo.Mode().IsRegular() && toInfo.Mode().IsRegular() && fromInfo.Size() == toInfo.Size():
			same, sum, err := sameContent(p.fsys, from, to)
			if err != nil {
				return err
			}
			if !same {
				p.collisions = append(p.collisions, p.subdir+"/"+relPath)
				continue
			}
			p.add(p.subdir, journal.Step{Kind: protocol.KindDropDup, Path: from, To: to, Note: p.subdir,
				Files: []journal.FileExpect{{Name: name, Size: fromInfo.Size(), SHA256: sum}}})
			p.plan.moves[move].FileCount++
			p.plan.moves[move].TotalBytes += fromInfo.Size()
		default:
			p.collisions = append(p.collisions, p.subdir+"/"+relPath)
		}
	}
	if !keepsCatalog {
		// Removed only after the barrier: the renames out of src must be
		// durable before its removal is, or a power cut could keep the
		// rmdir (src's parent fsynced) and lose a rename into a
		// destination directory not fsynced yet — the entry would be in
		// neither place.
		p.emptied = append(p.emptied, emptiedDir{p.subdir, src})
		if depth == 0 {
			p.gone[p.subdir] = true
		}
	}
	return nil
}

// planTail adds the steps after the barrier: for unset --migrate the
// .swamp.yaml edit, the manifest removal and the now empty namespace
// directory; for every run that moves something, the catalog restamp.
func (p *migrationPlanner) planTail(nsDir string, opts MigrateOptions) error {
	moved := len(p.plan.steps) > 0
	var tail []journal.Step
	removesManifest := false
	if opts.Unset {
		yamlStep, err := configEditStep(p.fsys, p.r, "")
		if err != nil {
			return err
		}
		tail = append(tail, yamlStep)
		manifest := repo.ManifestPath(p.r.Base, p.r.Namespace)
		if old, ok, err := readIfExists(p.fsys, manifest); err != nil {
			return err
		} else if ok {
			tail = append(tail, protocol.RemoveFileStep(manifest, old, "namespace manifest"))
			removesManifest = true
		}
	}
	if moved || opts.Unset {
		from, to := migrationStamps(p.r, opts)
		// One set-based step, "rows stamped from become to", when no row
		// carries the new stamp yet: its undo then moves back exactly the
		// rows it moved (CatalogChange.FromRows). Otherwise (rare) the step
		// names the items it restamps, as the catalog holds them now, so an
		// undo moves back exactly those and never rows that carried the new
		// stamp before the run.
		if n := p.rows.count(from); n > 0 {
			if p.rows.count(to) == 0 {
				tail = append(tail, protocol.MoveStampStep(from, to, n))
				p.plan.restamps = true
			} else if keys := p.rows.keys(from); len(keys) > 0 {
				tail = append(tail, protocol.CatalogStep(fmt.Sprintf("restamp %d items %q -> %q", len(keys), from, to),
					protocol.CatalogChange{Op: "restamp", From: from, To: to, Keys: keys}))
				p.plan.restamps = true
			}
		}
	}
	if opts.Unset {
		empty, err := p.emptyAfterPlan(nsDir, removesManifest)
		if err != nil {
			return err
		}
		if empty {
			tail = append(tail, journal.Step{Kind: protocol.KindMoveRmdir, Path: nsDir, Note: "namespace directory (emptied)"})
		}
	}
	for _, s := range tail {
		p.add("", s)
	}
	return nil
}

// emptyAfterPlan reports whether nsDir holds nothing once the plan has run.
func (p *migrationPlanner) emptyAfterPlan(nsDir string, removesManifest bool) (bool, error) {
	ents, err := p.fsys.ReadDir(nsDir)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	for _, e := range ents {
		if (e.Name() == repo.ManifestName && removesManifest) || p.gone[e.Name()] {
			continue
		}
		return false, nil
	}
	return true, nil
}

func (p *migrationPlanner) warnCatalogCopies(dir string, names []string) {
	if !p.plan.reverse && dir == filepath.Join(p.r.Base, p.r.Namespace, "data") {
		// Forward into the namespace: the copies swamp's own migrate
		// carried there go to quarantine in this run (planQuarantine).
		for _, n := range names {
			p.copies = append(p.copies, filepath.Join(dir, n))
		}
		p.plan.warnings = append(p.plan.warnings, MigrateWarning{Subdir: p.subdir, Path: dir, Files: names,
			Message: fmt.Sprintf("%s holds catalog files (%s) that swamp's own migrate carried there with the data; nothing reads them "+
				"(the live catalog is %s). This run moves them, together, to %s (nothing is deleted)",
				dir, strings.Join(names, ", "), p.r.CatalogPath, p.quarantineDir())})
		return
	}
	p.plan.warnings = append(p.plan.warnings, MigrateWarning{Subdir: p.subdir, Path: dir, Files: names,
		Message: fmt.Sprintf("%s holds catalog files (%s) that an older swamp moved with the data. "+
			"They are not data and are left where they are; the live catalog is %s. "+
			"The doctor's repair moves them to quarantine",
			dir, strings.Join(names, ", "), p.r.CatalogPath), Remedy: report.RemedyRepair})
}

// quarantineDir is where a forward run puts the catalog copies it finds in
// {base}/{ns}/data, beside the doctor's quarantine: one stamped directory
// per run, chosen when the plan is made and journaled with it.
func (p *migrationPlanner) quarantineDir() string {
	if p.qdir == "" {
		top := filepath.Join(p.r.Base, store.QuarantineDirName)
		stamp := time.Now().UTC().Format("20060102T150405Z") + "-migrate"
		name := stamp
		for i := 2; ; i++ {
			if ok, err := fsx.Exists(p.fsys, filepath.Join(top, name)); err != nil || !ok {
				break
			}
			name = fmt.Sprintf("%s-%d", stamp, i)
		}
		p.qdir = filepath.Join(top, name, p.r.Namespace, "data")
	}
	return p.qdir
}

// planQuarantine moves the catalog copies found in {base}/{ns}/data into
// quarantine, as one unit (a catalog and its sidecars are never separated).
// Without it the state swamp's own migrate leaves stays a doctor finding
// after swampj has finished the migration (#3316).
func (p *migrationPlanner) planQuarantine() error {
	if len(p.copies) == 0 {
		return nil
	}
	q := p.quarantineDir()
	dirs, err := protocol.MissingDirs(p.fsys, q, nil)
	if err != nil {
		return err
	}
	for _, d := range dirs {
		p.add("data", journal.Step{Kind: protocol.KindMoveMkdir, Path: d, Note: "quarantine for swamp's catalog copies"})
	}
	for _, c := range p.copies {
		p.add("data", journal.Step{Kind: protocol.KindMove, Path: c, To: filepath.Join(q, filepath.Base(c)), Note: "catalog copy to quarantine"})
	}
	p.add("", journal.Step{Kind: engine.KindBarrier, Note: "make the quarantine moves durable"})
	return nil
}

// planHiddenLocal finishes what swamp's own migrate left (swamp-format §13.9): the
// always-local directories it carried into a namespace (secrets, bundles,
// …), where swamp never reads them, go back to {repo}/.swamp/, merged
// entry by entry as the doctor's repair does (repo.HiddenLocalDir.Return):
// a file the home lacks is renamed there, one it holds with the same bytes
// goes to this run's quarantine, the emptied directories are removed.
// Nothing is replaced or deleted; a real conflict refuses the run, listing
// every such path.
func (p *migrationPlanner) planHiddenLocal() error {
	dirs, err := repo.HiddenLocalDirs(p.fsys, p.r)
	if err != nil {
		return err
	}
	var conflicts []string
	for _, h := range dirs {
		for _, c := range h.Conflicts {
			conflicts = append(conflicts, filepath.Join(h.Path, filepath.FromSlash(c)))
		}
	}
	if len(conflicts) > 0 {
		return &CollisionError{Paths: conflicts}
	}
	planned := map[string]bool{}
	q := filepath.Join(filepath.Dir(filepath.Dir(p.quarantineDir())), "local")
	n := 0
	for _, h := range dirs {
		moves, rmdirs := h.Return(q)
		for _, m := range moves {
			missing, err := protocol.MissingDirs(p.fsys, filepath.Dir(m.To), planned)
			if err != nil {
				return err
			}
			for _, d := range missing {
				p.add(h.Subdir, journal.Step{Kind: protocol.KindMkdir, Path: d, Note: "directory an always-local file returns into"})
			}
			p.add(h.Subdir, journal.Step{Kind: protocol.KindRename, Path: m.From, To: m.To, Note: "always-local file back where swamp reads it"})
			n++
		}
		if len(moves) > 0 {
			p.add("", journal.Step{Kind: engine.KindBarrier, Note: "make the always-local moves durable"})
		}
		for _, d := range rmdirs {
			p.add(h.Subdir, journal.Step{Kind: protocol.KindRmdir, Path: d, Note: "always-local directory (emptied)"})
		}
	}
	if n > 0 {
		p.add("", journal.Step{Kind: engine.KindBarrier, Note: "make the removals durable"})
	}
	return nil
}
