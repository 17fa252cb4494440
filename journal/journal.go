package journal

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"

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
	// Shared opens the journal for a writer of data that runs beside other
	// such writers: the repo lock is held shared, and the journal's turn
	// only for this holder's own transactions (hold.go). Without it the
	// holder runs alone: the repo lock exclusively, the turn until Close.
	Shared bool
}

// Journal is an open intent log. It holds the repo lock until Close.
type Journal struct {
	// db is the open bbolt file: nil for an empty journal opened
	// read-only, and for a shared holder between its turns (hold.go).
	db       *bolt.DB
	fsys     fsx.FS
	path     string
	opts     Options
	readOnly bool
	// pending are the lazy marks, committed with the next write; pmu
	// guards them (a long-lived holder finishes intents from several
	// goroutines).
	pending map[uint64]func(*Intent)
	pmu     sync.Mutex
	// group is the queue of Begin calls waiting for one shared commit
	// (groupcommit.go).
	group group

	shared   bool       // Options.Shared, where flock exists
	repo     *repoLock  // the repo lock, until Close (nil read-only)
	mu       sync.Mutex // a shared holder's turn: db, holds, closed
	holds    int
	closed   bool
	openHold func() // the turn a shared Open returned holding (Release)
	crashed  atomic.Bool
	begun    []uint64 // intents begun here (IntentLive), forgotten at Close
}

// forgetBegun: this holder works on none of its intents any more.
func (j *Journal) forgetBegun() {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, id := range j.begun {
		liveHere.Delete(liveKey(j.path, id))
	}
	j.begun = nil
}

// empty reports an empty journal opened read-only: there is nothing to read.
// A shared holder's db changes with its turns, under j.mu: it is never
// "empty" (and must not be read here without the turn).
func (j *Journal) empty() bool { return !j.shared && j.db == nil }

// keyUncleanEnd (bucket meta) is set when a holder was found to have
// ended without closing the journal, and cleared by CrashLeftoversChecked.
var keyUncleanEnd = []byte("unclean-end")

// CrashLeftoversUnchecked reports whether a holder of the journal ended
// without closing it since the last CrashLeftoversChecked: work it did
// outside the journal's records — a write's staging directories created
// while its intent was still being committed — may be left over.
func (j *Journal) CrashLeftoversUnchecked() bool {
	if j.empty() {
		return false
	}
	set := false
	_ = j.view(func(tx *bolt.Tx) error {
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
	release, err := j.Hold()
	if err != nil {
		return err
	}
	defer release()
	return j.setMetaIn(j.db, key, val)
}

// setMetaIn is setMeta in an open bbolt file (the turn held).
func (j *Journal) setMetaIn(db *bolt.DB, key, val []byte) error {
	if err := j.failpoint("journal.flush"); err != nil {
		return err
	}
	return db.Update(func(tx *bolt.Tx) error {
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

// ReadOnly reports whether the journal was opened with OpenReadOnly.
func (j *Journal) ReadOnly() bool { return j.readOnly }

func (j *Journal) refuseReadOnly(op string) error {
	if j.readOnly {
		return fmt.Errorf("journal %s was opened read-only (for inspection); %s needs journal.Open", j.path, op)
	}
	return nil
}

// Path of the journal file.
func (j *Journal) Path() string { return j.path }

// Begin journals a new open intent with one synced commit and returns its
// id. Lazy marks of earlier intents ride along in the same commit.
func (j *Journal) Begin(in *Intent) (uint64, error) {
	if err := j.refuseReadOnly("recording an intent"); err != nil {
		return 0, err
	}
	if err := j.failpoint("journal.begin"); err != nil {
		return 0, err
	}
	in.Status = StatusOpen
	in.CreatedAt = j.opts.Now().UTC()
	in.PID = os.Getpid()
	in.Host = hostname()
	in.Concurrent = j.shared
	if in.Command == nil {
		in.Command = j.opts.Command
	}
	if err := j.group.commit(j, in); err != nil {
		return 0, fmt.Errorf("journal: recording intent: %w", err)
	}
	j.mu.Lock()
	j.begun = append(j.begun, in.ID)
	j.mu.Unlock()
	liveHere.Store(liveKey(j.path, in.ID), true)
	return in.ID, nil
}

// beginAll is the one synced commit of a group of Begin calls: every
// intent of the group gets its id and its open index entry, and the
// pending marks ride along.
func (j *Journal) beginAll(ins []*Intent) error {
	return j.updateTx(func(tx *bolt.Tx) error {
		ix, err := indexes(tx)
		if err != nil {
			return err
		}
		if err := j.flushPending(tx); err != nil {
			return err
		}
		b := tx.Bucket(bucketIntents)
		for _, in := range ins {
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
		}
		return prune(b, ix.finished)
	})
}

// Decide durably records the direction an intent will be driven in, before
// the first step in that direction is taken.
func (j *Journal) Decide(id uint64, dir Direction) error {
	if err := j.refuseReadOnly("deciding a direction"); err != nil {
		return err
	}
	if err := j.failpoint("journal.decide"); err != nil {
		return err
	}
	return j.update(id, func(in *Intent) { in.Direction = dir })
}

// Finish marks an intent done or rolled back. The mark is lazy: it is
// committed with the next Begin, Decide or at Close. If it is lost, the
// next recovery observes every step and marks it again.
func (j *Journal) Finish(id uint64, st Status) {
	liveHere.Delete(liveKey(j.path, id))
	now := j.opts.Now().UTC()
	j.addMark(id, func(in *Intent) {
		in.Status = st
		in.FinishedAt = now
		in.LastError = ""
	})
}

// addMark chains fn onto the pending mark of intent id.
func (j *Journal) addMark(id uint64, fn func(*Intent)) {
	j.pmu.Lock()
	defer j.pmu.Unlock()
	j.pending[id] = chain(j.pending[id], fn)
}

// applyMark applies the pending mark of in, if any, to in.
func (j *Journal) applyMark(in *Intent) {
	j.pmu.Lock()
	fn := j.pending[in.ID]
	j.pmu.Unlock()
	if fn != nil {
		fn(in)
	}
}

// hasMarks reports whether any mark is pending.
func (j *Journal) hasMarks() bool {
	j.pmu.Lock()
	defer j.pmu.Unlock()
	return len(j.pending) > 0
}

// NoteError records (lazily) why an intent stopped; it stays open.
func (j *Journal) NoteError(id uint64, msg string) {
	j.addMark(id, func(in *Intent) { in.LastError = msg })
}

func chain(a, b func(*Intent)) func(*Intent) {
	if a == nil {
		return b
	}
	return func(in *Intent) { a(in); b(in) }
}

// Flush commits pending marks now (one synced commit), if there are any.
func (j *Journal) Flush() error {
	if !j.hasMarks() {
		return nil
	}
	if err := j.refuseReadOnly("committing marks"); err != nil {
		return err
	}
	if err := j.failpoint("journal.flush"); err != nil {
		return err
	}
	return j.updateTx(func(tx *bolt.Tx) error { return j.flushPending(tx) })
}

func (j *Journal) update(id uint64, fn func(*Intent)) error {
	if err := j.refuseReadOnly("updating an intent"); err != nil {
		return err
	}
	return j.updateTx(func(tx *bolt.Tx) error {
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
	j.pmu.Lock()
	pending := j.pending
	j.pending = map[uint64]func(*Intent){}
	j.pmu.Unlock()
	if len(pending) == 0 {
		return nil
	}
	ix, err := indexes(tx)
	if err != nil {
		return err
	}
	b := tx.Bucket(bucketIntents)
	for id, fn := range pending {
		in, err := getIntent(b, id)
		if nf := (*NotFoundError)(nil); errors.As(err, &nf) {
			continue // finished by another process and pruned since
		}
		if err != nil {
			return err
		}
		if !in.Open() {
			// Finished by another process meanwhile (a writer of the same
			// model recovered an intent whose mark was held back): its
			// record stands.
			continue
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
func (j *Journal) OpenIntents() ([]*Intent, error) { return j.OpenIntentsExcept(nil) }

// OpenIntentsExcept is OpenIntents without the intents skip names, which
// are not read at all (a write handle's own parked intents: decoding each
// on every write would cost more than the write saves).
func (j *Journal) OpenIntentsExcept(skip func(id uint64) bool) ([]*Intent, error) {
	if j.empty() {
		return nil, nil // an empty journal opened read-only
	}
	var open []*Intent
	err := j.view(func(tx *bolt.Tx) error {
		ob := tx.Bucket(bucketOpen)
		if ob == nil {
			return errNoIndex
		}
		b := tx.Bucket(bucketIntents)
		return ob.ForEach(func(k, _ []byte) error {
			id := binary.BigEndian.Uint64(k)
			if skip != nil && skip(id) {
				return nil
			}
			in, err := getIntent(b, id)
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
		j.applyMark(in)
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
	if j.empty() {
		return nil, nil // an empty journal opened read-only
	}
	var out []*Intent
	err := j.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketIntents).ForEach(func(k, v []byte) error {
			var in Intent
			if err := json.Unmarshal(v, &in); err != nil {
				return &CorruptError{Path: j.path, Reason: fmt.Sprintf("intent %d does not decode: %v", binary.BigEndian.Uint64(k), err)}
			}
			j.applyMark(&in)
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
	if j.empty() {
		return nil, &NotFoundError{ID: id} // an empty journal opened read-only
	}
	var in *Intent
	err := j.view(func(tx *bolt.Tx) error {
		var err error
		in, err = getIntent(tx.Bucket(bucketIntents), id)
		return err
	})
	if err == nil {
		j.applyMark(in)
	}
	return in, err
}

// Close commits pending marks and releases the repo lock.
func (j *Journal) Close() error {
	if j == nil {
		return nil
	}
	if j.readOnly {
		// Nothing to commit and no holder record of ours: release the
		// shared lock only.
		var err error
		if j.db != nil {
			err = j.db.Close()
			j.db = nil
		}
		return err
	}
	if j.closed {
		return nil
	}
	err := j.Flush()
	j.forgetBegun()
	j.openHold = nil
	j.mu.Lock()
	j.closed = true
	if j.db != nil {
		if !j.crashed.Load() {
			_ = j.fsys.Remove(HolderPath(j.path))
		}
		if cerr := j.db.Close(); err == nil {
			err = cerr
		}
		j.db = nil
	}
	j.mu.Unlock()
	j.repo.unlock()
	return err
}

// Abandon releases the locks without committing pending marks: what a
// crashed process leaves behind (tests use it after a simulated crash).
func (j *Journal) Abandon() {
	j.forgetBegun()
	j.mu.Lock()
	defer j.mu.Unlock()
	j.closed = true
	if j.db != nil {
		_ = j.db.Close()
		j.db = nil
	}
	j.repo.unlock()
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
