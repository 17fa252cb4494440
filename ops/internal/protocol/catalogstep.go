package protocol

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"

	"github.com/swampj/swampj/catalog"
	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/internal/engine"
	"github.com/swampj/swampj/ops/repo"
)

// CatalogOpener returns the repo's catalog, opening it on first use, and
// closes it at the end of the run.
type CatalogOpener interface {
	// Get opens the catalog, creating it if there is none (a step that
	// writes rows needs one).
	Get(ctx context.Context) (*catalog.Catalog, error)
	// Existing opens the catalog only if its file exists (ok=false: there
	// is none). Observing and undoing use it, so that looking — or rolling
	// back — never creates a catalog.
	Existing(ctx context.Context) (c *catalog.Catalog, ok bool, err error)
	Close() error
}

type repoCatalog struct {
	fsys fsx.FS
	path string
	// report: opened in catalog.ModeReport (a dry run observes steps and
	// never applies them, so nothing is created, converted or moved —
	// read-only media included).
	report bool
	// lazy: opened with catalog.Options.Lazy (LazyRepoCatalog).
	lazy bool
	mu   sync.Mutex
	cat  *catalog.Catalog
}

// ReportCatalog is RepoCatalog for a dry run: the catalog is opened in
// catalog.ModeReport, and a schema a read-write open would refuse is
// refused the same way.
func ReportCatalog(fsys fsx.FS, repoDir string) CatalogOpener {
	return &repoCatalog{fsys: fsx.OrReal(fsys), path: repo.CatalogPathOf(repoDir), report: true}
}

// RepoCatalog opens {repoDir}/.swamp/data/_catalog.db on first use, for
// the steps of an intent. It skips the whole-file integrity check
// (catalog.Options.NoIntegrityCheck), so a one-item write costs the same on
// any catalog: a step that meets damage fails with SQLITE_CORRUPT and the
// executor leaves the catalog stale (kind.Derived); doctor, verify and
// rebuild, which open the catalog on their own, check the whole file, and
// rebuild moves a damaged one aside.
func RepoCatalog(fsys fsx.FS, repoDir string) CatalogOpener {
	fsys = fsx.OrReal(fsys)
	return &repoCatalog{fsys: fsys, path: repo.CatalogPathOf(repoDir)}
}

// LazyRepoCatalog is RepoCatalog committing lazily (catalog.Options.Lazy),
// for a write handle: its rows are durable only after SyncCatalog, and
// the executor parks each intent's done mark until then
// (engine/catalogdurable.go).
func LazyRepoCatalog(fsys fsx.FS, repoDir string) CatalogOpener {
	fsys = fsx.OrReal(fsys)
	return &repoCatalog{fsys: fsys, path: repo.CatalogPathOf(repoDir), lazy: true}
}

// LazyCatalog reports whether the catalog commits lazily
// (engine.CatalogSyncer).
func (r *repoCatalog) LazyCatalog() bool { return r.lazy }

// SyncCatalog makes every commit to the catalog durable, whoever made it
// (engine.CatalogSyncer); nothing when there is no catalog file. On
// read-only media, or in a dry run, there is nothing of ours to sync.
func (r *repoCatalog) SyncCatalog(ctx context.Context) error {
	if r.report {
		return nil
	}
	c, ok, err := r.Existing(ctx)
	if err != nil || !ok {
		return err
	}
	return c.Sync()
}

func (r *repoCatalog) Get(ctx context.Context) (*catalog.Catalog, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cat != nil {
		return r.cat, nil
	}
	opts := catalog.Options{NoIntegrityCheck: true, Lazy: r.lazy}
	if r.report {
		opts = catalog.Options{Mode: catalog.ModeReport}
	}
	c, err := catalog.Open(ctx, r.fsys, r.path, opts)
	if err != nil {
		return nil, err
	}
	if f := c.Foreign(); f != nil && r.report {
		_ = c.Close()
		return nil, f // what a read-write open would refuse
	}
	r.cat = c
	return c, nil
}

func (r *repoCatalog) Existing(ctx context.Context) (*catalog.Catalog, bool, error) {
	r.mu.Lock()
	opened := r.cat != nil
	r.mu.Unlock()
	if !opened {
		if ok, err := fsx.Exists(r.fsys, r.path); err != nil || !ok {
			return nil, false, err
		}
	}
	c, err := r.Get(ctx)
	var missing *catalog.MissingError
	if r.report && errors.As(err, &missing) {
		return nil, false, nil // a file without the catalog table: no rows yet
	}
	return c, err == nil, err
}

func (r *repoCatalog) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cat == nil {
		return nil
	}
	err := r.cat.Close()
	r.cat = nil
	return err
}

// OpenerOf is the catalog opener env carries for the catalog steps (nil:
// none, and catalog steps fail). The executor carries it as a plain
// io.Closer, because it knows nothing of the catalog.
func OpenerOf(env *engine.Env) CatalogOpener {
	o, _ := env.Catalog.(CatalogOpener)
	return o
}

// CatalogChange is the payload of a catalog step.
type CatalogChange struct {
	// Op is "upsert-versions" (write-through of new versions; undo removes
	// them and re-marks latest) or "restamp" (rows of From move to To, for a
	// namespace migration; undo restamps back).
	Op   string        `json:"op"`
	Rows []catalog.Row `json:"rows,omitempty"`
	From string        `json:"from,omitempty"`
	To   string        `json:"to,omitempty"`
	// Keys are the items a restamp moves (their Namespace is From). Undo
	// moves back exactly these; rows that carried To before are left alone.
	Keys []catalog.ItemKey `json:"keys,omitempty"`
	// FromRows, for Op "move-stamp", is how many rows were stamped From
	// when the step was planned (none were stamped To).
	//
	// "move-stamp" is the set-based restamp a migration plans when no row
	// carries the destination stamp: every row stamped From becomes To in
	// one statement (catalog.MoveStamp). Observed by counting rows per
	// stamp: none left under From (and some under To) is done. Applying it
	// is refused while any row is stamped To, and undoing it while the rows
	// stamped To are not exactly FromRows, so an undo can only move back
	// rows this step moved; a refusal leaves the catalog stale (Derived)
	// for the next rebuild to settle. A destination stamp that has rows
	// already (rare: data was migrated by hand or swamp wrote there) is
	// planned as a keyed "restamp" instead.
	FromRows int64 `json:"fromRows,omitempty"`
}

// MoveStampStep is the set-based restamp of a migration: the n rows stamped
// from become to (CatalogChange, Op "move-stamp").
func MoveStampStep(from, to string, n int64) journal.Step {
	return CatalogStep(fmt.Sprintf("restamp %d rows %q -> %q", n, from, to),
		CatalogChange{Op: "move-stamp", From: from, To: to, FromRows: n})
}

// CatalogStep builds a catalog step.
func CatalogStep(note string, ch CatalogChange) journal.Step {
	b, _ := json.Marshal(ch)
	return journal.Step{Kind: KindCatalog, Catalog: b, Note: note}
}

// DecodeChange is the payload of a catalog step.
func DecodeChange(s *journal.Step) (*CatalogChange, error) {
	var ch CatalogChange
	if err := json.Unmarshal(s.Catalog, &ch); err != nil {
		return nil, fmt.Errorf("catalog step does not decode: %w", err)
	}
	return &ch, nil
}

// CatalogOf opens the catalog a catalog step writes to.
func CatalogOf(ctx context.Context, env *engine.Env) (*catalog.Catalog, error) {
	o := OpenerOf(env)
	if o == nil {
		return nil, fmt.Errorf("no catalog available for a catalog step")
	}
	return o.Get(ctx)
}

// existingCatalog is the catalog to observe or undo against: nil when there
// is no catalog file, or when its schema is one swampj never writes to
// (then none of a step's rows can be in it).
func existingCatalog(ctx context.Context, env *engine.Env) (*catalog.Catalog, string, error) {
	o := OpenerOf(env)
	if o == nil {
		return nil, "", fmt.Errorf("no catalog available for a catalog step")
	}
	c, ok, err := o.Existing(ctx)
	var foreign *catalog.ForeignSchemaError
	switch {
	case errors.As(err, &foreign):
		return nil, "the catalog has a schema swampj does not write", nil
	case err != nil:
		return nil, "", err
	case !ok:
		return nil, "no catalog yet", nil
	}
	return c, "", nil
}

func observeCatalog(ctx context.Context, env *engine.Env, s *journal.Step) (engine.Observation, string, error) {
	ch, err := DecodeChange(s)
	if err != nil {
		return engine.Conflict, "", err
	}
	c, why, err := existingCatalog(ctx, env)
	if err != nil {
		return engine.Conflict, "", err
	}
	if c == nil {
		return engine.NotDone, why, nil
	}
	switch ch.Op {
	case "upsert-versions":
		present := 0
		for _, r := range ch.Rows {
			ok, err := hasOwnRow(ctx, c, r)
			if err != nil {
				return engine.Conflict, "", err
			}
			if ok {
				present++
			}
		}
		switch present {
		case 0:
			return engine.NotDone, "", nil
		case len(ch.Rows):
			return engine.Done, "", nil
		default:
			return engine.Partial, fmt.Sprintf("%d of %d rows present", present, len(ch.Rows)), nil
		}
	case "restamp":
		left, err := stampedKeys(ctx, c, ch.From, ch.Keys)
		if err != nil {
			return engine.Conflict, "", err
		}
		if len(left) == 0 {
			return engine.Done, "", nil
		}
		return engine.NotDone, fmt.Sprintf("%d items still stamped %q", len(left), ch.From), nil
	case "move-stamp":
		nFrom, err := c.CountStamped(ctx, ch.From)
		if err != nil {
			return engine.Conflict, "", err
		}
		nTo, err := c.CountStamped(ctx, ch.To)
		if err != nil {
			return engine.Conflict, "", err
		}
		switch {
		case nFrom > 0:
			return engine.NotDone, fmt.Sprintf("%d rows still stamped %q", nFrom, ch.From), nil
		case nTo > 0:
			return engine.Done, "", nil
		}
		// No row under either stamp: nothing to move either way (a
		// forward apply moves nothing, a rollback skips it).
		return engine.NotDone, fmt.Sprintf("no rows stamped %q or %q", ch.From, ch.To), nil
	}
	return engine.Conflict, "", fmt.Errorf("unknown catalog op %q", ch.Op)
}

func applyCatalog(ctx context.Context, env *engine.Env, s *journal.Step, _ *engine.Dirty) error {
	ch, err := DecodeChange(s)
	if err != nil {
		return err
	}
	c, err := CatalogOf(ctx, env)
	if err != nil {
		return err
	}
	switch ch.Op {
	case "upsert-versions":
		return c.UpsertVersions(ctx, ch.Rows)
	case "restamp":
		return restamp(ctx, c, ch.From, ch.To, ch.Keys)
	case "move-stamp":
		return c.MoveStamp(ctx, ch.From, ch.To, -1)
	}
	return fmt.Errorf("unknown catalog op %q", ch.Op)
}

func undoCatalog(ctx context.Context, env *engine.Env, s *journal.Step, _ *engine.Dirty) error {
	ch, err := DecodeChange(s)
	if err != nil {
		return err
	}
	c, _, err := existingCatalog(ctx, env)
	if err != nil || c == nil {
		return err // no catalog (or one swampj never wrote): nothing to undo
	}
	switch ch.Op {
	case "upsert-versions":
		for i := len(ch.Rows) - 1; i >= 0; i-- {
			r := ch.Rows[i]
			if ours, err := hasOwnRow(ctx, c, r); err != nil || !ours {
				if err != nil {
					return err
				}
				continue // a row of that number swamp wrote stays
			}
			if err := c.RemoveVersion(ctx, r.Key(), r.Version); err != nil {
				return err
			}
		}
		return nil
	case "restamp":
		return restamp(ctx, c, ch.To, ch.From, ch.Keys)
	case "move-stamp":
		// Only rows this step moved: the destination had none before it.
		return c.MoveStamp(ctx, ch.To, ch.From, ch.FromRows)
	}
	return fmt.Errorf("unknown catalog op %q", ch.Op)
}

// hasOwnRow reports whether the catalog holds the row this step wrote: the
// same version with the same id (a row journaled without an id matches
// any).
func hasOwnRow(ctx context.Context, c *catalog.Catalog, r catalog.Row) (bool, error) {
	id, ok, err := c.VersionID(ctx, r.Key(), r.Version)
	if err != nil || !ok {
		return false, err
	}
	return r.ID == "" || id == r.ID, nil
}

// restamp moves the rows of the given items (all items, for a step
// journaled without keys) from one namespace stamp to another.
func restamp(ctx context.Context, c *catalog.Catalog, from, to string, only []catalog.ItemKey) error {
	keys, err := stampedKeys(ctx, c, from, only)
	if err != nil || len(keys) == 0 {
		return err
	}
	return c.Restamp(ctx, from, to, keys)
}

// stampedKeys lists the items with rows stamped ns, limited to only (by
// type, model and data name) when only is not nil.
func stampedKeys(ctx context.Context, c *catalog.Catalog, ns string, only []catalog.ItemKey) ([]catalog.ItemKey, error) {
	keys, err := ItemKeys(ctx, c, ns)
	if err != nil || only == nil {
		return keys, err
	}
	want := map[catalog.ItemKey]bool{}
	for _, k := range only {
		k.Namespace = ns
		want[k] = true
	}
	var out []catalog.ItemKey
	for _, k := range keys {
		if want[k] {
			out = append(out, k)
		}
	}
	return out, nil
}

// ItemKeys lists the distinct items that have rows stamped ns.
func ItemKeys(ctx context.Context, c *catalog.Catalog, ns string) ([]catalog.ItemKey, error) {
	rows, err := c.Rows(ctx, ns)
	if err != nil {
		return nil, err
	}
	seen := map[catalog.ItemKey]bool{}
	var keys []catalog.ItemKey
	for _, r := range rows {
		k := r.Key()
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(a, b int) bool { return fmt.Sprint(keys[a]) < fmt.Sprint(keys[b]) })
	return keys, nil
}

// RestampAhead is a migration's set-based restamp prepared while the plan
// walks the tree: the UPDATE runs in a catalog transaction of its own that
// nobody sees, and the step, once the renames before it are done and
// observed, only commits it. Nothing about it is journaled: a crash leaves
// an uncommitted transaction SQLite discards, and recovery applies the
// step as journaled. It is used only when what it did is what the step
// says (same stamps, FromRows rows moved); otherwise it is rolled back and
// the step applies itself. While it is open it holds the catalog's write
// lock: the migration lets go of it (Abandon) before it waits for any
// writer, and in every way out of the run.
type RestampAhead struct {
	from, to string
	done     chan struct{}
	p        *catalog.Pending
	err      error
	once     sync.Once
}

// StartRestampAhead starts preparing the move of the rows stamped from to
// to, on the real disk only (under a test file system every operation
// keeps its place in line), and only when opening the catalog early
// changes no file even if the run is then refused: a catalog closed
// cleanly (no -wal, -shm or -journal beside it) already in WAL mode.
// Otherwise the step applies itself, after the renames.
func StartRestampAhead(ctx context.Context, env *engine.Env, repoDir, from, to string) *RestampAhead {
	ra := &RestampAhead{from: from, to: to, done: make(chan struct{})}
	o := OpenerOf(env)
	if o == nil || !fsx.Concurrent(env.FS) || from == to || !cleanWALCatalog(env.FS, repo.CatalogPathOf(repoDir)) {
		close(ra.done)
		ra.err = errors.New("not prepared")
		return ra
	}
	go func() {
		defer close(ra.done)
		c, ok, err := o.Existing(ctx)
		if err == nil && !ok {
			err = errors.New("no catalog")
		}
		if err != nil {
			ra.err = err
			return
		}
		ra.p, ra.err = c.PrepareMoveStamp(ctx, from, to, -1)
	}()
	return ra
}

// Abandon rolls back what was prepared and not committed (idempotent).
func (ra *RestampAhead) Abandon() {
	ra.once.Do(func() {
		<-ra.done
		if ra.err == nil && ra.p != nil {
			ra.p.Rollback()
		}
	})
}

// LiveApply returns the apply of the plan's move-stamp step: commit what
// was prepared if it is that step's work, else roll it back and apply the
// step as journaled. Without such a step, what was prepared is abandoned.
func (ra *RestampAhead) LiveApply(steps []journal.Step) engine.LiveApply {
	for i := range steps {
		if steps[i].Kind != KindCatalog {
			continue
		}
		ch, err := DecodeChange(&steps[i])
		if err != nil || ch.Op != "move-stamp" || ch.From != ra.from || ch.To != ra.to {
			continue
		}
		return engine.LiveApply{i: func(ctx context.Context, env *engine.Env, s *journal.Step, d *engine.Dirty) error {
			committed := false
			var err error
			ra.once.Do(func() {
				<-ra.done
				if ra.err != nil || ra.p == nil {
					return
				}
				if ra.p.Moved != ch.FromRows {
					ra.p.Rollback()
					return
				}
				committed, err = true, ra.p.Commit()
			})
			if committed {
				return err
			}
			return applyCatalog(ctx, env, s, d)
		}}
	}
	ra.Abandon()
	return nil
}

// cleanWALCatalog reports whether path is an SQLite file in WAL mode (file
// format bytes 18 and 19 are 2) with no sidecar beside it.
func cleanWALCatalog(fsys fsx.FS, path string) bool {
	for _, suf := range []string{"-wal", "-shm", "-journal"} {
		if ok, err := fsx.Exists(fsys, path+suf); err != nil || ok {
			return false
		}
	}
	f, err := fsys.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var hdr [20]byte
	if _, err := io.ReadFull(f, hdr[:]); err != nil {
		return false
	}
	return string(hdr[:16]) == "SQLite format 3\x00" && hdr[18] == 2 && hdr[19] == 2
}
