package session

// Who made a staging name. A versioned write creates its staging
// directories (and the temp file of each `latest` it replaces) while its
// intent is still being committed (exec.go, Recording), so a crash in that
// window leaves them with no journal record that names them. Their names
// therefore carry the writer's identity — {pid}-{host}-{random}, the
// "owner token" — and once that process is gone `recover` removes them,
// the next write of their item moves them into quarantine
// (SweepDeadStages), and `doctor` reports them. Nothing in them was ever
// acknowledged: a staging directory is hidden from every reader until its
// publish rename, which only happens after the intent is durable.

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/internal/engine"
	"github.com/swampj/swampj/ops/internal/protocol"
)

// StagePrefix starts every staging directory; swamp's readers skip it (no
// digits first, swamp-format §9.3) and so does store.Walk (".swampj-").
const StagePrefix = ".swampj-stage-"

// latestTempPrefix starts the temp file of a `latest` replace written
// ahead of its step; like StagePrefix, swamp's readers and store.Walk
// skip it (a leading dot, ".swampj-").
const latestTempPrefix = ".swampj-latest-"

// hostTag is a short, stable name of this host for owner tokens (a repo
// on shared storage can be written from several hosts; a pid means
// something only on its own).
var hostTag = sync.OnceValue(func() string {
	h, _ := os.Hostname()
	s := sha256.Sum256([]byte(h))
	return hex.EncodeToString(s[:4])
})

// liveTokens are the owner tokens of writes in progress in this process:
// a name carrying this process's pid is live only while its write runs
// (a write cut short by a simulated crash is as dead as a killed one).
var liveTokens sync.Map

// NewOwnerToken returns a fresh token for one write and registers it as
// live; release unregisters it when the write has returned.
func NewOwnerToken() (token string, release func()) {
	token = fmt.Sprintf("%d-%s-%s", os.Getpid(), hostTag(), randomHex(4))
	liveTokens.Store(token, true)
	return token, func() { liveTokens.Delete(token) }
}

// StageName is the staging directory of version n.
func StageName(n int64, token string) string {
	return StagePrefix + strconv.FormatInt(n, 10) + "-" + token
}

// LatestTempName is the temp file of a `latest` replace.
func LatestTempName(token string) string { return latestTempPrefix + token + ".tmp" }

// StageOwner parses the owner token out of a staging directory or latest
// temp name. ok=false: not such a name, or one made before names carried
// their owner (those were only ever created after their intent was
// durable, so the journal accounts for them).
func StageOwner(name string) (pid int, host string, ok bool) {
	var rest string
	switch {
	case strings.HasPrefix(name, StagePrefix):
		// {N}-{pid}-{host}-{random}
		parts := strings.Split(strings.TrimPrefix(name, StagePrefix), "-")
		if len(parts) != 4 {
			return 0, "", false
		}
		rest = strings.Join(parts[1:], "-")
	case strings.HasPrefix(name, latestTempPrefix) && strings.HasSuffix(name, ".tmp"):
		rest = strings.TrimSuffix(strings.TrimPrefix(name, latestTempPrefix), ".tmp")
	default:
		return 0, "", false
	}
	parts := strings.Split(rest, "-")
	if len(parts) != 3 {
		return 0, "", false
	}
	pid, err := strconv.Atoi(parts[0])
	if err != nil || pid <= 0 {
		return 0, "", false
	}
	return pid, parts[1], true
}

// StageOwnerGone reports whether name is an attributable staging name
// whose writer is certainly gone: made on this host by a process that no
// longer exists, or by this process for a write that has returned. A name
// from another host, or one without an owner, is never "gone" here.
func StageOwnerGone(name string) bool {
	pid, host, ok := StageOwner(name)
	if !ok || host != hostTag() {
		return false
	}
	if pid == os.Getpid() {
		_, live := liveTokens.Load(tokenOf(name))
		return !live
	}
	return !fsx.ProcessExists(pid)
}

// tokenOf is the owner token inside an attributable name.
func tokenOf(name string) string {
	if strings.HasPrefix(name, StagePrefix) {
		rest := strings.TrimPrefix(name, StagePrefix)
		if i := strings.IndexByte(rest, '-'); i >= 0 {
			return rest[i+1:]
		}
		return ""
	}
	return strings.TrimSuffix(strings.TrimPrefix(name, latestTempPrefix), ".tmp")
}

// RemoveOrphanStages removes, under dataRoot, the staging directories and
// `latest` temp files whose writer is gone (StageOwnerGone) and that no
// open intent names (owned: the paths of open intents' steps). They are
// what a write leaves when it dies before its intent is durable: hidden,
// never published, never acknowledged, so removing them loses nothing a
// user has (as a rollback's undo of a stage does). Names without an owner,
// or of a live writer, are left alone. It returns the paths removed.
//
// It walks the data root (item directories are listed; version
// directories are not entered), so callers run it only after a crash
// (journal.Journal.CrashLeftoversUnchecked).
func RemoveOrphanStages(ctx context.Context, fsys fsx.FS, dataRoot string, owned map[string]bool) ([]string, error) {
	fsys = fsx.OrReal(fsys)
	var removed []string
	var walk func(dir string) error
	walk = func(dir string) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		ents, err := fsys.ReadDir(dir)
		if err != nil {
			if fsx.IsCrash(err) {
				return err
			}
			return nil // unreadable or gone: doctor reports what it cannot list
		}
		item := false
		for _, e := range ents {
			if e.Name() == "latest" {
				item = true
			}
		}
		for _, e := range ents {
			name, p := e.Name(), filepath.Join(dir, e.Name())
			switch {
			case strings.HasPrefix(name, StagePrefix) || strings.HasPrefix(name, latestTempPrefix):
				if owned[p] || !StageOwnerGone(name) {
					continue
				}
				if err := fsx.RemoveAll(fsys, p); err != nil {
					return fmt.Errorf("removing %s, left by a write that died before its intent was journaled: %w", p, err)
				}
				removed = append(removed, p)
			case strings.HasPrefix(name, ".") || !e.IsDir():
			case item && allDigits(name):
				// a version directory: it holds files only
			default:
				if err := walk(p); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(dataRoot); err != nil {
		return removed, err
	}
	if len(removed) == 0 {
		return nil, nil
	}
	// Durable before the journal forgets the crash (the caller's next
	// commit): a removal a power cut undid would not be looked for again.
	dirs := map[string]bool{}
	var list []string
	for _, p := range removed {
		if d := filepath.Dir(p); !dirs[d] {
			dirs[d] = true
			list = append(list, d)
		}
	}
	return removed, fsx.SyncAll(fsys, nil, list)
}

func allDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

// RemoveCrashLeftovers removes what writes that died before their intent
// was durable left under dataRoot (RemoveOrphanStages), if the journal
// says a holder ended without closing it since the last look, and then
// clears that mark. Every caller that finishes a crashed process's open
// intents calls it after them: recover, and a write with its own journal.
func RemoveCrashLeftovers(ctx context.Context, fsys fsx.FS, j *journal.Journal, dataRoot string) ([]string, error) {
	if !j.CrashLeftoversUnchecked() {
		return nil, nil
	}
	fsys = fsx.OrReal(fsys)
	// A shared holder leaves open the intents of other models' writers
	// (engine.RecoverOpen): what they staged is theirs to finish or undo.
	var owned map[string]bool
	if j.Shared() {
		open, err := j.OpenIntents()
		if err != nil {
			return nil, err
		}
		owned = map[string]bool{}
		for _, in := range open {
			for _, st := range in.Steps {
				for _, p := range []string{st.Path, st.To, st.Temp} {
					if p != "" {
						owned[p] = true
					}
				}
			}
		}
	}
	removed, err := RemoveOrphanStages(ctx, fsys, dataRoot, owned)
	if err != nil {
		return removed, err
	}
	return removed, j.CrashLeftoversChecked()
}

// DeadStagesIn lists the staging directories and `latest` temp files in
// itemDir whose writer is gone (StageOwnerGone); a missing itemDir holds
// none.
func DeadStagesIn(fsys fsx.FS, itemDir string) ([]string, error) {
	ents, err := fsx.OrReal(fsys).ReadDir(itemDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var dead []string
	for _, e := range ents {
		name := e.Name()
		if (strings.HasPrefix(name, StagePrefix) || strings.HasPrefix(name, latestTempPrefix)) && StageOwnerGone(name) {
			dead = append(dead, filepath.Join(itemDir, name))
		}
	}
	return dead, nil
}

// IntentKindStageSweep is the journal kind of SweepDeadStages' intent.
const IntentKindStageSweep = "stage-sweep"

// StageSweep is what SweepDeadStages looks at, and where what it finds goes.
type StageSweep struct {
	// ItemDirs are the items a write writes, under their model locks.
	ItemDirs []string
	// DataRoot is the data root the items are in. Quarantine mirrors it,
	// on the same file system: a leftover at DataRoot/rel goes to
	// Quarantine/rel. It lies below Shelf, the quarantine directory every
	// run shares, in a directory no other run uses. Shelf is created if
	// need be, outside the intent (it is never removed); everything below
	// it is the intent's, so undoing it removes exactly what it made.
	DataRoot, Shelf, Quarantine string
	// Locks are the per-model locks the write holds (the intent's Locks:
	// whoever holds one of them may finish it), Repo and Command what its
	// intent records.
	Locks   []string
	Repo    string
	Command []string
}

// StageMove is one leftover moved into quarantine.
type StageMove struct{ From, To string }

// SweepDeadStages moves into quarantine the staging directories and
// `latest` temp files in sw.ItemDirs that a write which died before its
// intent was durable left there: named after a writer that is gone
// (StageOwnerGone), named by no open intent. It returns what it moved;
// with nothing to move it changes nothing and journals nothing.
//
// The caller holds the items' model locks and has finished their open
// intents (OpenForWrite, a write handle's catch-up). A writer staging in
// these items would hold one of those locks, so none is at work there, and
// the owner test only confirms it: a name whose writer may be alive (this
// host's pid still exists, another host's) is left as it is.
//
// RemoveCrashLeftovers sweeps the whole data root, but only once per
// crash of a journal holder, and it leaves the stage of a writer that
// still looks alive. A writer killed with SIGKILL releases its journal
// lock when it dies, yet its pid exists until its parent reaps it: a
// writer of another model that takes the journal in between sees the
// crash, finds the stage "alive", and clears the crash mark. The next
// write of the item is where such a stage is certain to be found (its
// writer is long gone by then), and it looks only at the items it writes.
//
// The moves are one journaled intent, as the doctor's repair of the
// same leftover is (staging_leftover): quarantine directories, a barrier,
// the renames, a barrier. A crash in between leaves the intent to the next
// holder of these locks or to recover; nothing is ever deleted.
func SweepDeadStages(ctx context.Context, env *engine.Env, j *journal.Journal, sw StageSweep) ([]StageMove, error) {
	fsys := fsx.OrReal(env.FS)
	var found []string
	for _, dir := range sw.ItemDirs {
		dead, err := DeadStagesIn(fsys, dir)
		if err != nil {
			return nil, err
		}
		found = append(found, dead...)
	}
	if len(found) == 0 {
		return nil, nil
	}
	open, err := j.OpenIntents()
	if err != nil {
		return nil, err
	}
	owned := map[string]bool{}
	for _, in := range open {
		for _, st := range in.Steps {
			for _, p := range []string{st.Path, st.To, st.Temp} {
				if p != "" {
					owned[filepath.Clean(p)] = true
				}
			}
		}
	}
	var left []string
	for _, p := range found {
		if !owned[p] {
			left = append(left, p)
		}
	}
	if len(left) == 0 {
		return nil, nil
	}
	if err := fsx.MkdirAllDurable(fsys, sw.Shelf, fsx.DirMode); err != nil {
		return nil, err
	}
	in := &journal.Intent{Kind: IntentKindStageSweep, Repo: sw.Repo, Command: sw.Command, Locks: sw.Locks}
	var moves []StageMove
	var renames []journal.Step
	planned := map[string]bool{}
	for _, p := range left {
		rel, err := filepath.Rel(sw.DataRoot, p)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return nil, fmt.Errorf("%s is not under the data root %s", p, sw.DataRoot)
		}
		to := filepath.Join(sw.Quarantine, rel)
		dirs, err := protocol.MissingDirs(fsys, filepath.Dir(to), planned)
		if err != nil {
			return nil, err
		}
		for _, d := range dirs {
			in.Steps = append(in.Steps, journal.Step{Kind: protocol.KindMkdir, Path: d, Note: "create a quarantine directory"})
		}
		renames = append(renames, journal.Step{Kind: protocol.KindRename, Path: p, To: to,
			Note: "move into quarantine: staged by a write that died before its intent was journaled"})
		moves = append(moves, StageMove{From: p, To: to})
	}
	if len(in.Steps) > 0 {
		in.Steps = append(in.Steps, journal.Step{Kind: engine.KindBarrier, Note: "make the quarantine directories durable"})
	}
	in.Steps = append(in.Steps, renames...)
	in.Steps = append(in.Steps, journal.Step{Kind: engine.KindBarrier, Note: "make the moves durable"})
	in.Summary = fmt.Sprintf("move %d leftover(s) of dead writers into quarantine", len(moves))
	if _, err := engine.Execute(ctx, env, j, in, nil); err != nil {
		return nil, err
	}
	return moves, nil
}

// randomHex is n random bytes in hex: the random part of an owner token.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
