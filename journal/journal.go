package journal

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/swampj/swampj/fsx"
)

var (
	bucketIntents = []byte("intents")
	// bucketOpen and bucketFinished index intent ids by status, so that
	// finding open intents and pruning old ones never decode every record.
	bucketOpen     = []byte("open")
	bucketFinished = []byte("finished")
	bucketMeta     = []byte("meta")
	keyFormat      = []byte("format")
	formatVersion  = []byte("swampj-journal/1")
)

// DefaultLockTimeout is how long Open waits for another swampj process.
const DefaultLockTimeout = 10 * time.Second

// KeepFinished is how many finished intents are kept for audit.
const KeepFinished = 1000

// Options for Open.
type Options struct {
	// LockTimeout bounds the wait for the repo lock (0: DefaultLockTimeout).
	LockTimeout time.Duration
	// Command is recorded in the holder record and in new intents.
	Command []string
	// Warn receives warnings (a journal moved aside). Never printed here.
	Warn func(msg string)
	// Now is the clock (tests).
	Now func() time.Time
}

// Journal is an open intent log. It holds the repo lock until Close.
type Journal struct {
	db       *bolt.DB // nil for an empty journal opened read-only
	fsys     fsx.FS
	path     string
	opts     Options
	readOnly bool
	pending  map[uint64]func(*Intent) // lazy marks, committed with the next write
}

// keyUncleanEnd (bucket meta) is set when a holder was found to have
// ended without closing the journal, and cleared by CrashLeftoversChecked.
var keyUncleanEnd = []byte("unclean-end")

// CrashLeftoversUnchecked reports whether a holder of the journal ended
// without closing it since the last CrashLeftoversChecked: work it did
// outside the journal's records — a write's staging directories created
// while its intent was still being committed — may be left over.
func (j *Journal) CrashLeftoversUnchecked() bool {
	if j.db == nil {
		return false
	}
	set := false
	_ = j.db.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucketMeta); b != nil {
			set = b.Get(keyUncleanEnd) != nil
		}
		return nil
	})
	return set
}

// CrashLeftoversChecked records (one synced commit) that what crashed
// holders left outside the journal has been looked for.
func (j *Journal) CrashLeftoversChecked() error {
	if err := j.refuseReadOnly("clearing the crash mark"); err != nil {
		return err
	}
	return j.setMeta(keyUncleanEnd, nil)
}

// setMeta sets (nil: deletes) a key of the meta bucket, with pending
// marks, in one synced commit.
func (j *Journal) setMeta(key, val []byte) error {
	if err := j.fsys.Failpoint("journal.flush"); err != nil {
		return err
	}
	return j.db.Update(func(tx *bolt.Tx) error {
		if err := j.flushPending(tx); err != nil {
			return err
		}
		b, err := tx.CreateBucketIfNotExists(bucketMeta)
		if err != nil {
			return err
		}
		if val == nil {
			return b.Delete(key)
		}
		return b.Put(key, val)
	})
}

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
				return nil, &MediaError{Path: path, Op: "clean up an interrupted creation of the journal", Err: err}
			}
			return nil, fmt.Errorf("journal: %w", err)
		}
		if err := create(fsys, path, opts); err != nil {
			if IsMediaErr(err) {
				return nil, &MediaError{Path: path, Op: "create the journal", Err: err}
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
				return nil, &MediaError{Path: path, Op: "move the empty journal (an interrupted creation) aside", Err: err}
			}
			return nil, err
		}
		opts.Warn(fmt.Sprintf("journal %s was empty (an interrupted creation); moved it to %s and created a new one", path, aside))
		if err := create(fsys, path, opts); err != nil {
			return nil, err
		}
	}
	db, err := openBolt(fsys, path, opts.LockTimeout, false)
	if err != nil {
		if errors.Is(err, bolterrors.ErrTimeout) {
			return nil, lockTimeout(fsys, path, opts.LockTimeout)
		}
		if IsMediaErr(err) {
			return nil, &MediaError{Path: path, Op: "open the journal for writing", Err: err}
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
	j := &Journal{db: db, fsys: fsys, path: path, opts: opts, pending: map[uint64]func(*Intent){}}
	// Close removes the holder record, so one found now was left by a
	// holder that never closed: a crash (or a power cut) ended it. That
	// is remembered in the journal until a recovery has looked for what
	// such a crash leaves outside the journal's records (one commit, only
	// after a crash): whichever command opens the journal first, the
	// evidence is not lost with the holder record it replaces.
	if _, err := fsys.Lstat(HolderPath(path)); err == nil {
		if err := j.setMeta(keyUncleanEnd, []byte("1")); err != nil {
			_ = db.Close()
			if IsMediaErr(err) {
				return nil, &MediaError{Path: path, Op: "record that the previous holder crashed", Err: err}
			}
			return nil, err
		}
	}
	host, _ := os.Hostname()
	h, _ := json.Marshal(Holder{PID: os.Getpid(), Host: host, StartedAt: opts.Now().UTC(), Command: opts.Command})
	// Advisory only: a lost holder record merely makes a timeout message vaguer.
	_ = writeHolder(fsys, HolderPath(path), h)
	return j, nil
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
			return nil, &MediaError{Path: path, Op: "open the journal for reading", Err: err}
		case errors.As(err, &ce):
			ce.ReadOnly = true
			return nil, ce
		}
		return nil, err
	}
	return &Journal{db: db, fsys: fsys, path: path, opts: opts, readOnly: true, pending: map[uint64]func(*Intent){}}, nil
}

// ReadOnly reports whether the journal was opened with OpenReadOnly.
func (j *Journal) ReadOnly() bool { return j.readOnly }

func (j *Journal) refuseReadOnly(op string) error {
	if j.readOnly {
		return fmt.Errorf("journal %s was opened read-only (for inspection); %s needs journal.Open", j.path, op)
	}
	return nil
}

// writeHolder replaces the holder record without fsync (it is advisory).
// Its temp name is fixed and sits beside the journal, so a crash leaves no
// stray file elsewhere in .swamp.
func writeHolder(fsys fsx.FS, path string, data []byte) error {
	tmp := path + ".tmp"
	_ = fsys.Remove(tmp)
	f, err := fsys.Create(tmp, 0o644)
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
	db, err = bolt.Open(path, 0o600, &bolt.Options{Timeout: timeout, ReadOnly: readOnly})
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
		return nil
	})
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
	if err := fsx.MkdirAllDurable(fsys, dir, 0o755); err != nil {
		return fmt.Errorf("journal: creating %s: %w", dir, err)
	}
	tmp := filepath.Join(dir, fmt.Sprintf("%s%d-%s", creatingPrefix(path), os.Getpid(), strings.TrimSuffix(filepath.Base(fsx.TempName(path)), ".tmp")[1:]))
	if err := fsys.Failpoint("journal.create"); err != nil {
		return err
	}
	creating.Store(tmp, true)
	defer creating.Delete(tmp)
	db, err := bolt.Open(tmp, 0o600, &bolt.Options{Timeout: opts.LockTimeout})
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

// Path of the journal file.
func (j *Journal) Path() string { return j.path }

// Begin journals a new open intent with one synced commit and returns its
// id. Lazy marks of earlier intents ride along in the same commit.
func (j *Journal) Begin(in *Intent) (uint64, error) {
	if err := j.refuseReadOnly("recording an intent"); err != nil {
		return 0, err
	}
	if err := j.fsys.Failpoint("journal.begin"); err != nil {
		return 0, err
	}
	host, _ := os.Hostname()
	in.Status = StatusOpen
	in.CreatedAt = j.opts.Now().UTC()
	in.PID = os.Getpid()
	in.Host = host
	if in.Command == nil {
		in.Command = j.opts.Command
	}
	err := j.db.Update(func(tx *bolt.Tx) error {
		ix, err := indexes(tx)
		if err != nil {
			return err
		}
		if err := j.flushPending(tx); err != nil {
			return err
		}
		b := tx.Bucket(bucketIntents)
		id, err := b.NextSequence()
		if err != nil {
			return err
		}
		in.ID = id
		if err := putIntent(b, in); err != nil {
			return err
		}
		if err := ix.open.Put(key(id), nil); err != nil {
			return err
		}
		return prune(b, ix.finished)
	})
	if err != nil {
		return 0, fmt.Errorf("journal: recording intent: %w", err)
	}
	return in.ID, nil
}

// Decide durably records the direction an intent will be driven in, before
// the first step in that direction is taken.
func (j *Journal) Decide(id uint64, dir Direction) error {
	if err := j.refuseReadOnly("deciding a direction"); err != nil {
		return err
	}
	if err := j.fsys.Failpoint("journal.decide"); err != nil {
		return err
	}
	return j.update(id, func(in *Intent) { in.Direction = dir })
}

// Finish marks an intent done or rolled back. The mark is lazy: it is
// committed with the next Begin, Decide or at Close. If it is lost, the
// next recovery observes every step and marks it again.
func (j *Journal) Finish(id uint64, st Status) {
	now := j.opts.Now().UTC()
	j.pending[id] = chain(j.pending[id], func(in *Intent) {
		in.Status = st
		in.FinishedAt = now
		in.LastError = ""
	})
}

// NoteError records (lazily) why an intent stopped; it stays open.
func (j *Journal) NoteError(id uint64, msg string) {
	j.pending[id] = chain(j.pending[id], func(in *Intent) { in.LastError = msg })
}

func chain(a, b func(*Intent)) func(*Intent) {
	if a == nil {
		return b
	}
	return func(in *Intent) { a(in); b(in) }
}

// Flush commits pending marks now (one synced commit), if there are any.
func (j *Journal) Flush() error {
	if len(j.pending) == 0 {
		return nil
	}
	if err := j.refuseReadOnly("committing marks"); err != nil {
		return err
	}
	if err := j.fsys.Failpoint("journal.flush"); err != nil {
		return err
	}
	return j.db.Update(func(tx *bolt.Tx) error { return j.flushPending(tx) })
}

func (j *Journal) update(id uint64, fn func(*Intent)) error {
	if err := j.refuseReadOnly("updating an intent"); err != nil {
		return err
	}
	return j.db.Update(func(tx *bolt.Tx) error {
		if err := j.flushPending(tx); err != nil {
			return err
		}
		b := tx.Bucket(bucketIntents)
		in, err := getIntent(b, id)
		if err != nil {
			return err
		}
		fn(in)
		return putIntent(b, in)
	})
}

func (j *Journal) flushPending(tx *bolt.Tx) error {
	if len(j.pending) == 0 {
		return nil
	}
	ix, err := indexes(tx)
	if err != nil {
		return err
	}
	b := tx.Bucket(bucketIntents)
	for id, fn := range j.pending {
		in, err := getIntent(b, id)
		if err != nil {
			return err
		}
		fn(in)
		if err := putIntent(b, in); err != nil {
			return err
		}
		if !in.Open() {
			if err := ix.open.Delete(key(id)); err != nil {
				return err
			}
			if err := ix.finished.Put(key(id), nil); err != nil {
				return err
			}
		}
	}
	// bbolt runs the function once per Update; if the commit then fails,
	// the marks are lost, which only costs a re-observation at recovery.
	j.pending = map[uint64]func(*Intent){}
	return nil
}

type indexBuckets struct{ open, finished *bolt.Bucket }

// indexes returns the status indexes, creating them in a journal made
// before they existed (rebuilt from the records once).
func indexes(tx *bolt.Tx) (indexBuckets, error) {
	if o, f := tx.Bucket(bucketOpen), tx.Bucket(bucketFinished); o != nil && f != nil {
		return indexBuckets{o, f}, nil
	}
	o, err := tx.CreateBucketIfNotExists(bucketOpen)
	if err != nil {
		return indexBuckets{}, err
	}
	f, err := tx.CreateBucketIfNotExists(bucketFinished)
	if err != nil {
		return indexBuckets{}, err
	}
	err = tx.Bucket(bucketIntents).ForEach(func(k, v []byte) error {
		var head struct {
			Status Status `json:"status"`
		}
		if json.Unmarshal(v, &head) != nil || head.Status == StatusOpen {
			return o.Put(append([]byte(nil), k...), nil)
		}
		return f.Put(append([]byte(nil), k...), nil)
	})
	return indexBuckets{o, f}, err
}

// OpenIntents returns the intents recovery must look at, oldest first.
func (j *Journal) OpenIntents() ([]*Intent, error) {
	if j.db == nil {
		return nil, nil // an empty journal opened read-only
	}
	var open []*Intent
	err := j.db.View(func(tx *bolt.Tx) error {
		ob := tx.Bucket(bucketOpen)
		if ob == nil {
			return errNoIndex
		}
		b := tx.Bucket(bucketIntents)
		return ob.ForEach(func(k, _ []byte) error {
			in, err := getIntent(b, binary.BigEndian.Uint64(k))
			if err != nil {
				return err
			}
			open = append(open, in)
			return nil
		})
	})
	if errors.Is(err, errNoIndex) {
		return j.openIntentsByScan()
	}
	if err != nil {
		return nil, err
	}
	// Pending marks (not yet committed) may have finished some of them.
	kept := open[:0]
	for _, in := range open {
		if fn := j.pending[in.ID]; fn != nil {
			fn(in)
		}
		if in.Open() {
			kept = append(kept, in)
		}
	}
	return kept, nil
}

var errNoIndex = errors.New("journal: no status index")

func (j *Journal) openIntentsByScan() ([]*Intent, error) {
	all, err := j.List(true)
	if err != nil {
		return nil, err
	}
	var open []*Intent
	for _, in := range all {
		if in.Open() {
			open = append(open, in)
		}
	}
	return open, nil
}

// List returns intents oldest first, with pending marks applied. Without
// all, only open intents and the last 20 finished ones.
func (j *Journal) List(all bool) ([]*Intent, error) {
	if j.db == nil {
		return nil, nil // an empty journal opened read-only
	}
	var out []*Intent
	err := j.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketIntents).ForEach(func(k, v []byte) error {
			var in Intent
			if err := json.Unmarshal(v, &in); err != nil {
				return &CorruptError{Path: j.path, Reason: fmt.Sprintf("intent %d does not decode: %v", binary.BigEndian.Uint64(k), err)}
			}
			if fn := j.pending[in.ID]; fn != nil {
				fn(&in)
			}
			out = append(out, &in)
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	if !all {
		finished := 0
		var keep []*Intent
		for i := len(out) - 1; i >= 0; i-- {
			if out[i].Open() || finished < 20 {
				if !out[i].Open() {
					finished++
				}
				keep = append(keep, out[i])
			}
		}
		sort.Slice(keep, func(a, b int) bool { return keep[a].ID < keep[b].ID })
		out = keep
	}
	return out, nil
}

// Get returns one intent.
func (j *Journal) Get(id uint64) (*Intent, error) {
	if j.db == nil {
		return nil, &NotFoundError{ID: id} // an empty journal opened read-only
	}
	var in *Intent
	err := j.db.View(func(tx *bolt.Tx) error {
		var err error
		in, err = getIntent(tx.Bucket(bucketIntents), id)
		return err
	})
	if err == nil {
		if fn := j.pending[id]; fn != nil {
			fn(in)
		}
	}
	return in, err
}

// Close commits pending marks and releases the repo lock.
func (j *Journal) Close() error {
	if j == nil || j.db == nil {
		return nil
	}
	if j.readOnly {
		// Nothing to commit and no holder record of ours: release the
		// shared lock only.
		err := j.db.Close()
		j.db = nil
		return err
	}
	err := j.Flush()
	_ = j.fsys.Remove(HolderPath(j.path))
	if cerr := j.db.Close(); err == nil {
		err = cerr
	}
	j.db = nil
	return err
}

// Abandon releases the lock without committing pending marks: what a
// crashed process leaves behind (tests use it after a simulated crash).
func (j *Journal) Abandon() {
	if j.db != nil {
		_ = j.db.Close()
		j.db = nil
	}
}

func key(id uint64) []byte {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], id)
	return k[:]
}

func getIntent(b *bolt.Bucket, id uint64) (*Intent, error) {
	v := b.Get(key(id))
	if v == nil {
		return nil, &NotFoundError{ID: id}
	}
	var in Intent
	if err := json.Unmarshal(v, &in); err != nil {
		return nil, fmt.Errorf("journal: intent %d does not decode: %w", id, err)
	}
	return &in, nil
}

func putIntent(b *bolt.Bucket, in *Intent) error {
	v, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return b.Put(key(in.ID), v)
}

// prune keeps the newest KeepFinished finished intents; open ones are never
// pruned. It walks only the finished index (8-byte keys, no values), so a
// Begin costs the same with 1 or 1000 intents kept.
func prune(b, finished *bolt.Bucket) error {
	n := 0
	c := finished.Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		n++
	}
	for excess := n - KeepFinished; excess > 0; excess-- {
		k, _ := c.First()
		if k == nil {
			break
		}
		id := append([]byte(nil), k...)
		if err := b.Delete(id); err != nil {
			return err
		}
		if err := finished.Delete(id); err != nil {
			return err
		}
	}
	return nil
}
