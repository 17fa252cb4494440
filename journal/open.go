package journal

// Opening the journal: creation (built aside, synced, linked in whole), the
// bbolt file and its lock, the holder record, read-only opens, and what a
// crashed creation or a damaged file leaves.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/swampj/swampj/fsx"
)

// HolderPath is the advisory record naming the process that holds the lock.
func HolderPath(journalPath string) string { return journalPath + ".holder" }

// Holder is who holds the journal lock.
type Holder struct {
	PID       int       `json:"pid"`
	Host      string    `json:"host"`
	StartedAt time.Time `json:"startedAt"`
	Command   []string  `json:"command,omitempty"`
}

// Exists reports whether a journal file is present. Callers on the clean
// path (a startup hook) use it to do nothing at all when there is none.
func Exists(fsys fsx.FS, path string) (bool, error) { return fsx.Exists(fsx.OrReal(fsys), path) }

// Open opens the journal at path, creating it atomically when missing, and
// takes the repo lock (waiting at most opts.LockTimeout).
func Open(fsys fsx.FS, path string, opts Options) (*Journal, error) {
	fsys = fsx.OrReal(fsys)
	opts = opts.withDefaults()
	fi, err := fsys.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := CleanCreationLeftovers(fsys, path); err != nil {
			if IsMediaErr(err) {
				return nil, newMediaError(path, "clean up an interrupted creation of the journal", err)
			}
			return nil, fmt.Errorf("journal: %w", err)
		}
		if err := create(fsys, path, opts); err != nil {
			if IsMediaErr(err) {
				return nil, newMediaError(path, "create the journal", err)
			}
			return nil, err
		}
	case err != nil:
		return nil, fmt.Errorf("journal: %w", err)
	case !fi.Mode().IsRegular():
		return nil, &NotAFileError{Path: path, Mode: fi.Mode()}
	case fi.Size() == 0:
		// A zero-length file cannot hold an intent (bbolt writes its meta
		// pages before any bucket), so it is safe to set aside and start
		// over. bbolt itself would silently initialise it in place.
		aside, err := moveAside(fsys, path, opts.Now())
		if err != nil {
			if IsMediaErr(err) {
				return nil, newMediaError(path, "move the empty journal (an interrupted creation) aside", err)
			}
			return nil, err
		}
		opts.Warn(fmt.Sprintf("journal %s was empty (an interrupted creation); moved it to %s and created a new one", path, aside))
		if err := create(fsys, path, opts); err != nil {
			return nil, err
		}
	}
	j := &Journal{fsys: fsys, path: path, opts: opts, pending: map[uint64]func(*Intent){}, shared: opts.Shared && sharedHoldsSupported}
	if sharedHoldsSupported {
		rl, err := lockRepo(path, j.shared, opts.LockTimeout)
		if err != nil {
			if errors.Is(err, bolterrors.ErrTimeout) {
				return nil, lockTimeout(fsys, path, opts.LockTimeout)
			}
			if IsMediaErr(err) {
				return nil, newMediaError(path, "take the repo lock", err)
			}
			return nil, fmt.Errorf("journal: taking the repo lock %s: %w", RepoLockPath(path), err)
		}
		j.repo = rl
	}
	j.mu.Lock()
	err = j.takeTurn()
	j.mu.Unlock()
	if err != nil {
		j.repo.unlock()
		if errors.Is(err, bolterrors.ErrTimeout) {
			return nil, lockTimeout(fsys, path, opts.LockTimeout)
		}
		if IsMediaErr(err) {
			return nil, newMediaError(path, "open the journal for writing", err)
		}
		var ce *CorruptError
		if errors.As(err, &ce) {
			aside, merr := moveAside(fsys, path, opts.Now())
			if merr != nil {
				return nil, fmt.Errorf("%w (and moving it aside failed: %v)", err, merr)
			}
			ce.MovedTo = aside
			return nil, ce
		}
		return nil, err
	}
	// A creation whose publish rename left both names (ALICE's non-atomic
	// rename, or a creator that lost the race to another) leaves its temp
	// file beside the journal: it never held an intent, and with the lock
	// held no live creator of ours is using it. Best effort: a leftover
	// that cannot be removed costs a directory entry, never an intent.
	if err := CleanCreationLeftovers(fsys, path); err != nil {
		opts.Warn(fmt.Sprintf("left a journal creation leftover beside %s in place: %v", path, err))
	}
	if j.shared {
		// A shared holder returns holding its first turn: the caller's
		// recovery of open intents runs in it (Release lets it go).
		j.holds = 1
		j.openHold = j.releaser()
	}
	return j, nil
}

// recordHolder runs as the turn is taken: a holder record found now was
// left by a holder that never let go of its turn — a crash (or a power
// cut) ended it — which is remembered in the journal until a recovery has
// looked for what such a crash leaves outside the journal's records (one
// commit, only after a crash): whichever command takes the turn first, the
// evidence is not lost with the holder record it replaces. Then it writes
// this holder's record.
func (j *Journal) recordHolder() error {
	if _, err := j.fsys.Lstat(HolderPath(j.path)); err == nil {
		if err := j.setMetaIn(j.db, keyUncleanEnd, []byte("1")); err != nil {
			if IsMediaErr(err) {
				return newMediaError(j.path, "record that the previous holder crashed", err)
			}
			return err
		}
	}
	host, _ := os.Hostname()
	h, _ := json.Marshal(Holder{PID: os.Getpid(), Host: host, StartedAt: j.opts.Now().UTC(), Command: j.opts.Command})
	// Advisory only: a lost holder record merely makes a timeout message vaguer.
	_ = writeHolder(j.fsys, HolderPath(j.path), h)
	return nil
}

func (o Options) withDefaults() Options {
	if o.LockTimeout <= 0 {
		o.LockTimeout = DefaultLockTimeout
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Warn == nil {
		o.Warn = func(string) {}
	}
	return o
}

// OpenReadOnly opens an existing journal for inspection, writing nothing: no
// file is created, moved or changed and no holder record is written, so it
// works on read-only media. A missing journal is an error matching
// fs.ErrNotExist (callers check Exists first); an empty file (an interrupted
// creation) is an empty journal.
//
// Consistency: bbolt takes a shared flock on the journal file (a writer's
// Open takes the exclusive one and holds it until Close), so OpenReadOnly
// waits at most opts.LockTimeout for a swampj that is changing the repo, and
// such a swampj waits until this journal is closed. Readers do not exclude
// each other. A damaged journal is reported (CorruptError with ReadOnly set)
// and left in place. The returned Journal refuses Begin, Decide and Flush.
func OpenReadOnly(fsys fsx.FS, path string, opts Options) (*Journal, error) {
	fsys = fsx.OrReal(fsys)
	opts = opts.withDefaults()
	fi, err := fsys.Lstat(path)
	switch {
	case err != nil:
		return nil, fmt.Errorf("journal: %w", err)
	case !fi.Mode().IsRegular():
		return nil, &NotAFileError{Path: path, Mode: fi.Mode()}
	case fi.Size() == 0:
		opts.Warn(fmt.Sprintf("journal %s is empty (an interrupted creation): it holds no intent; left as it is "+
			"(the next swampj command that changes data moves it aside and starts a fresh journal)", path))
		return &Journal{fsys: fsys, path: path, opts: opts, readOnly: true}, nil
	}
	db, err := openBolt(fsys, path, opts.LockTimeout, true)
	if err != nil {
		var ce *CorruptError
		switch {
		case errors.Is(err, bolterrors.ErrTimeout):
			return nil, lockTimeout(fsys, path, opts.LockTimeout)
		case IsMediaErr(err):
			return nil, newMediaError(path, opReading, err)
		case errors.As(err, &ce):
			ce.ReadOnly = true
			return nil, ce
		}
		return nil, err
	}
	return &Journal{db: db, fsys: fsys, path: path, opts: opts, readOnly: true, pending: map[uint64]func(*Intent){}}, nil
}

// writeHolder replaces the holder record without fsync (it is advisory).
// Its temp name is fixed and sits beside the journal, so a crash leaves no
// stray file elsewhere in .swamp.
func writeHolder(fsys fsx.FS, path string, data []byte) error {
	tmp := path + ".tmp"
	_ = fsys.Remove(tmp)
	f, err := fsys.Create(tmp, fsx.FileMode)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fsys.Rename(tmp, path)
	}
	return err
}

// openBolt opens an existing journal file, turning every way a damaged file
// can fail (including bbolt panics on garbage) into a CorruptError.
func openBolt(fsys fsx.FS, path string, timeout time.Duration, readOnly bool) (db *bolt.DB, err error) {
	// A file cut short makes bbolt read past the end of its mapping: a
	// SIGBUS, which SetPanicOnFault turns into a panic we can recover here
	// instead of a dead process.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			db, err = nil, &CorruptError{Path: path, Reason: fmt.Sprint(r)}
		}
	}()
	db, err = bolt.Open(path, fsx.FileMode, &bolt.Options{Timeout: timeout, ReadOnly: readOnly, OpenFile: boltOpenFile(timeout, !readOnly)})
	if err != nil {
		var pe *fs.PathError
		switch {
		case errors.Is(err, bolterrors.ErrTimeout):
			return nil, err
		case IsMediaErr(err):
			// EROFS or EACCES says nothing about the file's content.
			return nil, fmt.Errorf("journal %s: %w", path, err)
		case errors.As(err, &pe) && pe.Op == "open":
			// The OS refused to open the file (it was never read).
			return nil, fmt.Errorf("journal %s: %w", path, err)
		}
		return nil, &CorruptError{Path: path, Reason: err.Error()}
	}
	// With the lock held (no writer can be growing the file), refuse a file
	// shorter than its last commit says: reading its missing pages later
	// would fault.
	if fi, serr := fsys.Lstat(path); serr == nil {
		if cerr := checkBoltFile(fsys, path, fi.Size()); cerr != nil {
			_ = db.Close()
			return nil, cerr
		}
	}
	// A file bbolt accepts may still lack our buckets (a foreign bbolt file,
	// or garbage that happens to carry valid meta pages).
	verr := db.View(func(tx *bolt.Tx) error {
		m := tx.Bucket(bucketMeta)
		if m == nil || string(m.Get(keyFormat)) != string(formatVersion) || tx.Bucket(bucketIntents) == nil {
			return &CorruptError{Path: path, Reason: "not a swampj journal (format marker missing)"}
		}
		if made := foreignRepo(tx, m, path); made != "" && !readOnly {
			return &CorruptError{Path: path, Reason: foreignReason(made)}
		}
		return nil
	})
	if verr == nil && !readOnly {
		verr = restampRepo(db, path)
	}
	if verr != nil {
		_ = db.Close()
		return nil, verr
	}
	return db, nil
}

// create builds a new journal in a temp file (bbolt init, first commit,
// fsync), then renames it into place without replacing and fsyncs the
// directory. A crash leaves either no journal or a complete one — never the
// half-initialised file of etcd #16596.
func create(fsys fsx.FS, path string, opts Options) error {
	dir := filepath.Dir(path)
	if err := fsx.MkdirAllDurable(fsys, dir, fsx.DirMode); err != nil {
		return fmt.Errorf("journal: creating %s: %w", dir, err)
	}
	tmp := filepath.Join(dir, fmt.Sprintf("%s%d-%s", creatingPrefix(path), os.Getpid(), strings.TrimSuffix(filepath.Base(fsx.TempName(path)), ".tmp")[1:]))
	if err := fsys.Failpoint("journal.create"); err != nil {
		return err
	}
	creating.Store(tmp, true)
	defer creating.Delete(tmp)
	db, err := bolt.Open(tmp, fsx.FileMode, &bolt.Options{Timeout: opts.LockTimeout})
	if err != nil {
		return fmt.Errorf("journal: creating %s: %w", tmp, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		m, err := tx.CreateBucketIfNotExists(bucketMeta)
		if err != nil {
			return err
		}
		if err := m.Put(keyFormat, formatVersion); err != nil {
			return err
		}
		if err := m.Put(keyRepo, []byte(repoIdentity(path))); err != nil {
			return err
		}
		for _, name := range [][]byte{bucketIntents, bucketOpen, bucketFinished} {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return err
			}
		}
		return nil
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = fsys.Remove(tmp)
		return fmt.Errorf("journal: initialising %s: %w", tmp, err)
	}
	// bbolt created it as this process: run as root on someone else's
	// repo, it is the owner's journal all the same.
	fsx.GiveToDirOwner(tmp)
	if err := fsys.RenameNoReplace(tmp, path); err != nil {
		_ = fsys.Remove(tmp)
		if errors.Is(err, fs.ErrExist) {
			return nil // another process created it first; use theirs
		}
		return fmt.Errorf("journal: publishing %s: %w", path, err)
	}
	return fsys.SyncDir(dir)
}

// creating holds the temp paths this process is building right now.
var creating sync.Map

func creatingPrefix(path string) string { return "." + filepath.Base(path) + ".creating-" }

// CleanCreationLeftovers removes journal temp files left by a creation that
// crashed before its rename: they never held an intent. A temp file whose
// creator is still alive is left alone.
func CleanCreationLeftovers(fsys fsx.FS, path string) error {
	return fsx.RemoveDeadCreations(fsys, filepath.Dir(path), creatingPrefix(path), func(owner string) bool {
		_, busy := creating.Load(owner)
		return busy
	})
}

func moveAside(fsys fsx.FS, path string, now time.Time) (string, error) {
	aside := path + ".corrupt-" + now.UTC().Format("20060102T150405Z")
	for i := 1; ; i++ {
		ok, err := fsx.Exists(fsys, aside)
		if err != nil {
			return "", err
		}
		if !ok {
			break
		}
		aside = fmt.Sprintf("%s.corrupt-%s-%d", path, now.UTC().Format("20060102T150405Z"), i)
	}
	if err := fsx.RenameNoReplaceDurable(fsys, path, aside); err != nil {
		return "", fmt.Errorf("journal: moving damaged journal aside: %w", err)
	}
	return aside, nil
}

func lockTimeout(fsys fsx.FS, path string, waited time.Duration) error {
	e := &LockTimeoutError{Path: path, Waited: waited}
	if b, err := fsys.ReadFile(HolderPath(path)); err == nil {
		var h Holder
		if json.Unmarshal(b, &h) == nil {
			e.Holder = &h
		}
	}
	return e
}
