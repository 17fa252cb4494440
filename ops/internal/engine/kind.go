package engine

import (
	"context"
	"fmt"

	"github.com/swampj/swampj/journal"
)

// KindBarrier is the executor's own step kind: fsync every directory
// dirtied so far. It changes nothing of its own, so it is the one kind
// the loop understands without a protocol.
const KindBarrier = "barrier"

// Kind is the behaviour of a step kind. The kinds themselves live in
// ops/internal/protocol, which hands its closed table to the executor
// (Install); the executor calls them only through these fields.
type Kind struct {
	Observe func(ctx context.Context, env *Env, s *journal.Step) (Observation, string, error)
	Apply   func(ctx context.Context, env *Env, s *journal.Step, d *Dirty) error
	Undo    func(ctx context.Context, env *Env, s *journal.Step, d *Dirty) error
	// Describe renders a step of this kind for humans (nil: the kind and
	// its path).
	Describe func(s *journal.Step) string
	// Stages: Apply only writes content nothing points at yet (a hidden
	// staging directory), so it may leave its fsyncs to the Dirty set;
	// the executor flushes them before the next step of another kind.
	// Undo removes that content; a rollback runs it for every staged
	// step before it journals its direction (decideBackward), and a
	// recording that failed runs it before anything else was touched.
	Stages bool
	// Temp: the step replaces Path through the temp file s.Temp. Record
	// names it (so recovery knows every file the run may create), and a
	// recording that failed removes it.
	Temp bool
	// WriteAhead, if set, writes the step's temp file ahead of the step,
	// without an fsync (d.DeferFile, d.MarkWrittenAhead), so it becomes
	// durable together with the staged content; see prepareTemps. Its
	// error is only a failed flush of earlier content (d.DeferFile's):
	// any trouble of its own is left for the step itself to meet.
	WriteAhead func(env *Env, s *journal.Step, d *Dirty) error
	// ApplyBelow, if set, applies a Derived step of an intent a later
	// write has superseded (recovery finishing a write after the next one
	// was published on top of it): the catalog rows go in below the later
	// version, which keeps the latest flags. It fails when it cannot know
	// the later version's row will be there (Env.Later). Without it, or
	// when it fails, the step is skipped and the catalog marked stale.
	ApplyBelow func(ctx context.Context, env *Env, s *journal.Step, d *Dirty) error
	// Supersedable: a later writer may build on the step's after-state
	// (a `latest` pointer moved past the intent's version). A rollback
	// observes these steps first and refuses before undoing anything.
	Supersedable bool
	// Prepare, if set, does the step's work short of making it visible (a
	// catalog transaction up to its COMMIT), so the executor can run it
	// while earlier steps wait on fsyncs; the step then only commits.
	// ok=false: this step cannot be prepared; Apply does it all.
	Prepare func(ctx context.Context, env *Env, s *journal.Step) (p Prepared, ok bool, err error)
	// Derived: the step changes only derived state (the catalog). When it
	// cannot be observed, applied or undone for any reason but a crash,
	// the executor records the catalog as stale in the journal and goes
	// on, in either direction: a catalog problem never blocks data or
	// recovery, and the next catalog rebuild makes it agree again.
	Derived bool
}

// Prepared is a step's work done ahead and not yet visible.
type Prepared interface {
	Commit() error
	Rollback()
}

// Protocols is what the executor runs without knowing it: every step
// kind a journal may hold, by the name it stores, and what the swamp
// protocol says around them. ops/internal/protocol builds the one value of
// it and installs it when it is initialized.
type Protocols struct {
	// Kinds is the closed table of step kinds. A journal step whose kind
	// is not in it is refused (KindOf), never guessed at.
	Kinds map[string]Kind
	// CatalogPath is where the derived catalog of the repo at dir lives:
	// a run that skipped a Derived step marks it stale in the journal.
	CatalogPath func(repoDir string) string
	// LockIntent takes the swamp locks an intent names before recovery
	// drives it (RecoverOpen), and returns the context to drive it in
	// (cancelled if a lock is lost) and the function that lets them go.
	// With try, a lock held by someone else is not waited for: the error
	// then matches ErrLockBusy.
	LockIntent func(ctx context.Context, env *Env, in *journal.Intent, try bool) (context.Context, func(), error)
}

// protocols is the installed table (nil until ops/internal/protocol is
// initialized).
var protocols *Protocols

// Install hands the executor the protocols' kinds. It is called once, by
// ops/internal/protocol at init; a second call panics, because two tables
// would make what a journal may hold depend on import order.
func Install(p *Protocols) {
	if protocols != nil {
		panic("engine: step kinds installed twice")
	}
	protocols = p
}

// KindOf is the behaviour of s's kind, or an error for a kind this build
// does not know.
func KindOf(s *journal.Step) (Kind, error) {
	if protocols == nil {
		return Kind{}, fmt.Errorf("step kind %q: no step kinds are installed (import ops/internal/protocol)", s.Kind)
	}
	k, ok := protocols.Kinds[s.Kind]
	if !ok {
		return Kind{}, fmt.Errorf("unknown step kind %q (journal written by a newer swampj?)", s.Kind)
	}
	return k, nil
}

// Describe renders a step for humans.
func Describe(s *journal.Step) string {
	if k, err := KindOf(s); err == nil && k.Describe != nil {
		return k.Describe(s)
	}
	if s.Path != "" {
		return s.Kind + " " + s.Path
	}
	return s.Kind
}

// Barrier is the behaviour of KindBarrier, for the table of kinds.
var Barrier = Kind{
	Observe:  observeBarrier,
	Apply:    flushDirty,
	Undo:     flushDirty,
	Describe: func(*journal.Step) string { return "fsync dirtied directories" },
}

// observeBarrier: a barrier is never done in advance; running it again
// only costs the fsyncs of directories that are dirty by then.
func observeBarrier(context.Context, *Env, *journal.Step) (Observation, string, error) {
	return NotDone, "", nil
}

// flushDirty fsyncs every directory dirtied so far (a barrier, either way).
func flushDirty(_ context.Context, _ *Env, _ *journal.Step, d *Dirty) error { return d.Flush() }

// CloseCatalog closes the catalog if a step opened it.
func (env *Env) CloseCatalog() {
	if env.Catalog != nil {
		_ = env.Catalog.Close()
	}
}
