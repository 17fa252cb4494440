package journal

// Wrapped-run records. `swampj run -- COMMAND` protects a command that
// may run for days (swamp serve): while it runs, every rename, delete and
// fsync the command makes under the datastore waits for a barrier
// (package ops/wrapped). The run is recorded here before the command
// starts and closed only after the final barrier and the doctor of what it
// changed; a record still open when its wrapper is gone (power cut,
// SIGKILL, OOM) is a run that died without its barrier, and the next
// command that needs a settled repo settles it.
//
// What the command changed is not in bbolt: a commit per change would cost
// two flushes for every rename swamp makes. It is appended to the run's
// change log (Run.Log), a plain file beside the journal that the barrier
// makes durable together with the data it names. The wrapper holds a flock
// on that file for its whole life, so the kernel says whether a record's
// wrapper is alive (RunLive).

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/swampj/swampj/fsx"
)

var bucketRuns = []byte("runs")

// runLogInfix names every wrapped run's change log, beside the journal:
// {journal}.run-{unix nanos}-{pid}.
const runLogInfix = ".run-"

// Run is one wrapped command.
type Run struct {
	ID uint64 `json:"id"`
	// Command is what was run; PID the wrapper's process id.
	Command []string  `json:"command"`
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
	// Roots are the directories whose changes the barrier orders (the
	// repo's .swamp, the datastore, a remote datastore's cache).
	Roots []string `json:"roots"`
	// Log is the change log: one changed path per line.
	Log string `json:"log"`
	// Guarded is false when the run went on without the barrier
	// (the operator allowed it): its changes are not in the log.
	Guarded bool `json:"guarded"`
	// Ended is set when the record was closed; Outcome says how (the
	// command's exit, or what settling a dead run found and did).
	Ended   *time.Time `json:"ended,omitempty"`
	Outcome string     `json:"outcome,omitempty"`
}

// Open reports whether the run has not been closed.
func (r *Run) Open() bool { return r.Ended == nil }

// RunLogPath is a new change-log path for a run wrapped by process pid.
func RunLogPath(journalPath string, now time.Time, pid int) string {
	return fmt.Sprintf("%s%s%d-%d", journalPath, runLogInfix, now.UnixNano(), pid)
}

// RunLogs lists the change logs beside the journal (one per run not yet
// settled): a directory listing, so a command with no run to settle pays
// one readdir of .swamp.
func RunLogs(fsys fsx.FS, journalPath string) ([]string, error) {
	dir, base := filepath.Split(journalPath)
	ents, err := fsx.OrReal(fsys).ReadDir(filepath.Clean(dir))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), base+runLogInfix) && !strings.HasSuffix(e.Name(), ".tmp") {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out, nil
}

// RunLive reports whether the wrapper of the run whose change log is log
// is alive: it holds a flock on the log for its whole life, and the kernel
// drops it when the process dies. A log that cannot be opened has no live
// wrapper.
func RunLive(log string) bool {
	f, err := fsx.OpenPlain(log, os.O_RDONLY, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	locked, err := tryFlockShared(f)
	if err != nil {
		return true // cannot tell: never settle what may be alive
	}
	return !locked
}

// BeginRun records a wrapped run (one synced commit) and returns its id.
func (j *Journal) BeginRun(r *Run) (uint64, error) {
	if err := j.failpoint("journal.run.begin"); err != nil {
		return 0, err
	}
	err := j.updateTx(func(tx *bolt.Tx) error {
		if err := j.flushPending(tx); err != nil {
			return err
		}
		b, err := tx.CreateBucketIfNotExists(bucketRuns)
		if err != nil {
			return err
		}
		id, err := b.NextSequence()
		if err != nil {
			return err
		}
		r.ID = id
		return putRun(b, r)
	})
	if err != nil {
		return 0, fmt.Errorf("journal: recording the wrapped run: %w", err)
	}
	return r.ID, nil
}

// CloseRun closes run id with its outcome (one synced commit). Closing a
// closed run changes nothing; an unknown id is not an error (the record of
// a run whose change log outlived it).
func (j *Journal) CloseRun(id uint64, outcome string) error {
	if err := j.failpoint("journal.run.close"); err != nil {
		return err
	}
	now := j.opts.Now().UTC()
	err := j.updateTx(func(tx *bolt.Tx) error {
		if err := j.flushPending(tx); err != nil {
			return err
		}
		b := tx.Bucket(bucketRuns)
		if b == nil {
			return nil
		}
		v := b.Get(runKey(id))
		if v == nil {
			return nil
		}
		var r Run
		if err := json.Unmarshal(v, &r); err != nil {
			return err
		}
		if !r.Open() {
			return nil
		}
		r.Ended, r.Outcome = &now, outcome
		if err := putRun(b, &r); err != nil {
			return err
		}
		return pruneRuns(b)
	})
	if err != nil {
		return fmt.Errorf("journal: closing wrapped run %d: %w", id, err)
	}
	return nil
}

// Runs lists wrapped runs, oldest first: the open ones, and with all the
// closed ones kept too.
func (j *Journal) Runs(all bool) ([]*Run, error) {
	var out []*Run
	if j == nil || j.empty() {
		return nil, nil
	}
	err := j.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketRuns)
		if b == nil {
			return nil
		}
		return b.ForEach(func(_, v []byte) error {
			r := &Run{}
			if err := json.Unmarshal(v, r); err != nil {
				return err
			}
			if all || r.Open() {
				out = append(out, r)
			}
			return nil
		})
	})
	return out, err
}

// RunByLog finds the run whose change log is log (nil: none).
func (j *Journal) RunByLog(log string) (*Run, error) {
	runs, err := j.Runs(false)
	if err != nil {
		return nil, err
	}
	for _, r := range runs {
		if r.Log == log {
			return r, nil
		}
	}
	return nil, nil
}

// keepClosedRuns is how many closed run records are kept for audit.
const keepClosedRuns = 100

func pruneRuns(b *bolt.Bucket) error {
	var closed [][]byte
	err := b.ForEach(func(k, v []byte) error {
		var r Run
		if json.Unmarshal(v, &r) == nil && !r.Open() {
			closed = append(closed, append([]byte(nil), k...))
		}
		return nil
	})
	if err != nil {
		return err
	}
	for len(closed) > keepClosedRuns {
		if err := b.Delete(closed[0]); err != nil {
			return err
		}
		closed = closed[1:]
	}
	return nil
}

func runKey(id uint64) []byte {
	k := make([]byte, 8)
	binary.BigEndian.PutUint64(k, id)
	return k
}

func putRun(b *bolt.Bucket, r *Run) error {
	v, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return b.Put(runKey(r.ID), v)
}
