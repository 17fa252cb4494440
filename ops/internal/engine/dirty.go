package engine

// The dirty set: content and directories whose fsyncs a step deferred, flushed
// once each at a barrier or the end of the run; and the flush observer benchmarks
// count flushes with.

import (
	"slices"
	"time"

	"github.com/swampj/swampj/fsx"
)

// Dirty collects what steps changed and has not been fsynced yet:
// directories whose entries changed (flushed at barriers and at the end),
// and content that staging steps wrote without an fsync (files and their
// directories, flushed together before the first step that is not staging,
// because that step may publish them).
type Dirty struct {
	fs    fsx.FS
	order []string
	set   map[string]bool
	syncs int

	unsyncedFiles []fsx.File
	unsyncedDirs  []string
	// syncErr is the first failed SyncContent: content it covered is not
	// durable, so every later SyncContent reports it again (nothing may
	// be published after it).
	syncErr error
	// ahead holds steps prepared while earlier ones waited (prepareAhead).
	ahead map[int]*aheadWork
	// prepared holds temp files of upcoming write steps written (and, once
	// SyncContent returned, fsynced) ahead of their step; see prepareTemps.
	prepared map[string]bool

	// rec is the intent's journal commit while it may still be in flight
	// (DriveRecording); nil once it is known to be in the journal.
	rec *Recording
	// deferredWrites: prepared write steps were applied without their
	// directory fsync; the executor flushes before the next step of
	// another kind (so a batch's `latest` replaces share one flush).
	deferredWrites bool
}

// recorded reports whether the intent is known to be in the journal.
func (d *Dirty) recorded() bool {
	if d.rec == nil {
		return true
	}
	if d.rec.Recorded() {
		d.rec = nil
		return true
	}
	return false
}

// flushObserver, when set (benchmarks), is told of every journal commit,
// catalog commit and group of fsyncs issued together (SyncContent, Flush)
// that the executor runs, with how many flushes one after another it is
// and its timing, so the serial flush depth of a write can be measured.
var flushObserver func(kind string, flushes int, start, end time.Time)

func observeFlush(kind string, flushes int, start, end time.Time) {
	if f := flushObserver; f != nil {
		f(kind, flushes, start, end)
	}
}

// maxUnsynced bounds the files held open for a deferred fsync: a batch of
// ten thousand versions must not run out of file descriptors.
const maxUnsynced = 64

// DeferFile hands over a written, still open file whose fsync may wait
// until the next non-staging step (SyncContent closes it). When many are
// waiting it flushes them now, and reports that flush's error.
func (d *Dirty) DeferFile(f fsx.File) error {
	d.unsyncedFiles = append(d.unsyncedFiles, f)
	if len(d.unsyncedFiles) >= maxUnsynced {
		return d.SyncContent()
	}
	return nil
}

// DeferDir marks a directory whose entries must be durable before the next
// non-staging step.
func (d *Dirty) DeferDir(dirs ...string) {
	for _, dir := range dirs {
		if !slices.Contains(d.unsyncedDirs, dir) {
			d.unsyncedDirs = append(d.unsyncedDirs, dir)
		}
	}
}

func (d *Dirty) hasUnsynced() bool { return len(d.unsyncedFiles)+len(d.unsyncedDirs) > 0 }

// SyncContent fsyncs every deferred file and directory, concurrently on
// the real file system (fsx.SyncAll).
func (d *Dirty) SyncContent() error {
	if d.syncErr != nil || !d.hasUnsynced() {
		return d.syncErr
	}
	files, dirs := d.unsyncedFiles, d.unsyncedDirs
	d.unsyncedFiles, d.unsyncedDirs = nil, nil
	d.syncs += len(dirs)
	start := time.Now()
	d.syncErr = fsx.SyncAll(d.fs, files, dirs)
	observeFlush("content-fsyncs", 1, start, time.Now())
	return d.syncErr
}

// discard closes deferred files that were never synced (a run that
// stopped on an error) and rolls back work prepared ahead for steps that
// were never applied.
func (d *Dirty) discard() {
	for _, f := range d.unsyncedFiles {
		_ = f.Close()
	}
	for i, aw := range d.ahead {
		<-aw.done
		if aw.err == nil && aw.p != nil {
			aw.p.Rollback()
		}
		delete(d.ahead, i)
	}
	d.unsyncedFiles, d.unsyncedDirs, d.prepared = nil, nil, nil
}

// MarkWrittenAhead records that the temp file of an upcoming step was
// written ahead and handed to DeferFile (Kind.WriteAhead): once
// SyncContent returned it is durable, and the step only renames it in.
func (d *Dirty) MarkWrittenAhead(temp string) {
	if d.prepared == nil {
		d.prepared = map[string]bool{}
	}
	d.prepared[temp] = true
}

// TakeWrittenAhead reports whether temp was written ahead
// (MarkWrittenAhead), and forgets it: the step applying it takes it.
func (d *Dirty) TakeWrittenAhead(temp string) bool {
	if !d.prepared[temp] {
		return false
	}
	delete(d.prepared, temp)
	return true
}

// AddBatched marks directories dirty whose fsync a step applying a temp
// written ahead leaves to the executor: it flushes them before the next
// step that is not one of those, so the `latest` replaces of a batch
// share one flush.
func (d *Dirty) AddBatched(dirs ...string) {
	d.Add(dirs...)
	d.deferredWrites = true
}

// Add marks directories dirty.
func (d *Dirty) Add(dirs ...string) {
	if d.set == nil {
		d.set = map[string]bool{}
	}
	for _, dir := range dirs {
		if !d.set[dir] {
			d.set[dir] = true
			d.order = append(d.order, dir)
		}
	}
}

// Synced records that a step fsynced dir itself.
func (d *Dirty) Synced(dir string) {
	if d.set[dir] {
		delete(d.set, dir)
		for i, x := range d.order {
			if x == dir {
				d.order = append(d.order[:i], d.order[i+1:]...)
				break
			}
		}
	}
	d.syncs++
}

// Flush fsyncs every dirty directory once (together, on the real file
// system: fsx.SyncAll). A directory that no longer exists (it was renamed
// away) needs no fsync: its entries' fate is carried by the directory it
// moved into.
func (d *Dirty) Flush() error {
	d.deferredWrites = false
	var dirs []string
	for _, dir := range d.order {
		if ok, err := fsx.Exists(d.fs, dir); err != nil {
			return err
		} else if ok {
			dirs = append(dirs, dir)
		}
	}
	start := time.Now()
	if err := fsx.SyncAll(d.fs, nil, dirs); err != nil {
		return err
	}
	if len(dirs) > 0 {
		observeFlush("dir-fsyncs", 1, start, time.Now())
	}
	d.syncs += len(dirs)
	d.order, d.set = nil, nil
	return nil
}

// ObserveFlush reports a flush the caller ran outside the executor (a
// journal close) to the flush observer, if one is set.
func ObserveFlush(kind string, flushes int, start, end time.Time) {
	observeFlush(kind, flushes, start, end)
}

// SetFlushObserver installs the flush observer (benchmarks of the serial
// flush depth; nil in production) and returns a function removing it.
func SetFlushObserver(f func(kind string, flushes int, start, end time.Time)) func() {
	flushObserver = f
	return func() { flushObserver = nil }
}
