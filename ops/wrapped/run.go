package wrapped

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/swampj/swampj"
	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/internal/session"
	"github.com/swampj/swampj/ops/repo"
)

// DefaultSyncInterval bounds how long a file written in place (a log held
// open for appending, `latest` after its re-creation) stays only in the
// page cache while nothing else forces a barrier.
const DefaultSyncInterval = time.Second

// Options configure a wrapped run.
type Options struct {
	// Common is the file system, the journal lock's timeout (the turn for
	// the record's two commits), the command recorded in the run record
	// (what `journal list` shows) and the logger.
	host.Common
	// ExtraRoots are covered besides the repo's .swamp and its datastore
	// (a remote datastore's cache directory).
	ExtraRoots []string
	// SyncInterval is the periodic sync (0: DefaultSyncInterval; negative:
	// none).
	SyncInterval time.Duration
	// Unguarded runs the command without the barrier (the caller has told
	// the operator why): the run is still recorded, and a dead one is
	// settled by a doctor of the whole datastore.
	Unguarded bool
	// Admit, when set, is asked under the journal, just before the run is
	// recorded: an error refuses the run (nothing started, no record).
	// A namespace change holds the journal alone, so what Admit reads of
	// the configuration cannot change before the command starts.
	Admit func() error
}

// UnsupportedError: the barrier cannot run here; nothing was started.
type UnsupportedError struct{ Err error }

func (e *UnsupportedError) Error() string {
	return "the write barrier cannot run here: " + e.Err.Error()
}
func (e *UnsupportedError) Unwrap() error { return e.Err }

// Code is the stable error code.
// Code is the code of what failed below when that has one, else "barrier_unsupported".
func (e *UnsupportedError) Code() string {
	return swampj.CodeOr(swampj.CauseOf(e.Err), "barrier_unsupported")
}

// Class is the class of what failed below when that has one, else ClassFailed.
func (e *UnsupportedError) Class() swampj.Class {
	return swampj.ClassOr(swampj.CauseOf(e.Err), swampj.ClassFailed)
}

// Supported says why the barrier cannot run on this machine (nil: it can).
func Supported() error {
	if err := supported(); err != nil {
		return &UnsupportedError{err}
	}
	return nil
}

// Run is a wrapped command between Start and Finish.
type Run struct {
	r       *repo.Repo
	opts    Options
	fsys    fsx.FS
	id      uint64
	logPath string
	log     *os.File // held open, flocked, for the run's life
	roots   []string
	syncFDs []*os.File
	sup     *supervisor

	mu      sync.Mutex
	changed map[string]bool
	syncErr error
	syncs   int
}

// Start records the run in the journal, prepares the barrier and starts
// cmd (whose Path, Args, Dir and streams the caller has set). On error
// nothing was started and the record, if made, is closed.
func Start(ctx context.Context, r *repo.Repo, cmd *exec.Cmd, opts Options) (*Run, error) {
	if opts.SyncInterval == 0 {
		opts.SyncInterval = DefaultSyncInterval
	}
	w := &Run{r: r, opts: opts, fsys: fsx.OrReal(opts.FS), changed: map[string]bool{}}
	w.roots = coveredRoots(r, opts.ExtraRoots)
	if !opts.Unguarded {
		if err := Supported(); err != nil {
			return nil, err
		}
	}
	jpath := r.JournalPath
	w.logPath = journal.RunLogPath(jpath, time.Now(), os.Getpid())
	if err := w.createLog(); err != nil {
		return nil, err
	}
	rec := &journal.Run{Command: opts.Command, PID: os.Getpid(), Started: time.Now().UTC(), Roots: w.roots, Log: w.logPath, Guarded: !opts.Unguarded}
	if err := withJournal(w.fsys, r.Dir, opts, func(j *journal.Journal) error {
		if opts.Admit != nil {
			if err := opts.Admit(); err != nil {
				return err
			}
		}
		id, err := j.BeginRun(rec)
		w.id = id
		return err
	}); err != nil {
		w.dropLog()
		return nil, err
	}
	for _, root := range w.roots {
		w.addSyncFD(root)
	}
	w.addSyncFD(filepath.Dir(jpath))
	if !opts.Unguarded {
		sup, err := prepare(cmd, w.roots, opts.SyncInterval, w.barrier, w.periodic)
		if err != nil {
			w.abort("the barrier could not be prepared: " + err.Error())
			return nil, &UnsupportedError{err}
		}
		w.sup = sup
	}
	if err := cmd.Start(); err != nil {
		if w.sup != nil {
			w.sup.close()
		}
		w.abort("the command did not start: " + err.Error())
		return nil, err
	}
	if w.sup != nil {
		if err := w.sup.start(cmd); err != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			w.abort("the barrier did not start: " + err.Error())
			return nil, &UnsupportedError{err}
		}
	}
	return w, nil
}

// ID is the run's record in the journal.
func (w *Run) ID() uint64 { return w.id }

// Finish is called once the command has exited: it stops the barrier,
// makes what the command wrote durable (the final barrier) and returns the
// doctor's scope for what it changed (item directories and run records,
// doctor.Options.Only). The record stays open until Close, after the
// doctor.
func (w *Run) Finish(ctx context.Context) ([]string, error) {
	var supErr error
	if w.sup != nil {
		supErr = w.sup.close()
	}
	if err := syncFSes(w.syncFDs); err != nil {
		return nil, fmt.Errorf("the final sync: %w", err)
	}
	if supErr != nil {
		return nil, supErr
	}
	w.mu.Lock()
	paths := make([]string, 0, len(w.changed))
	for p := range w.changed {
		paths = append(paths, p)
	}
	w.mu.Unlock()
	if w.opts.Unguarded {
		return nil, nil
	}
	sort.Strings(paths)
	scope := Scope(w.fsys, w.r, paths)
	if w.opts.Logger != nil {
		w.opts.Logger.Debug("wrapped run finished", "run", w.id, "barriers", w.syncs, "changed", paths, "doctor", scope)
	}
	return scope, nil
}

// Close closes the run's record with its outcome and removes the change
// log: the run is settled.
func (w *Run) Close(outcome string) error {
	for _, f := range w.syncFDs {
		f.Close()
	}
	err := withJournal(w.fsys, w.r.Dir, w.opts, func(j *journal.Journal) error { return j.CloseRun(w.id, outcome) })
	if err != nil {
		return err // the log stays: the next command settles the run again
	}
	w.dropLog()
	return nil
}

// Syncs is how many barriers ran (each one syncfs per covered file system).
func (w *Run) Syncs() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.syncs
}

// barrier is the supervisor's answer to a stopped call under a root: the
// paths go into the change log; for a barrier call every covered file
// system (the log's too) is then synced; only then does the call go on.
func (w *Run) barrier(paths []string, sync bool) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	var fresh []string
	for _, p := range paths {
		if !w.changed[p] {
			w.changed[p] = true
			fresh = append(fresh, p)
		}
	}
	if len(fresh) > 0 {
		if _, err := w.log.WriteString(strings.Join(fresh, "\n") + "\n"); err != nil {
			w.syncErr = err
			return err
		}
	}
	if !sync {
		// A file created or truncated in place: logged, and durable with
		// the next barrier like the file itself.
		return nil
	}
	w.syncs++
	if err := syncFSes(w.syncFDs); err != nil {
		w.syncErr = err
		return err
	}
	return nil
}

func (w *Run) periodic() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := syncFSes(w.syncFDs); err != nil && w.opts.Logger != nil {
		w.opts.Logger.Warn("periodic sync failed: " + err.Error())
	}
}

// createLog creates the change log and takes its flock. Like the
// journal's lock files it is opened with package os, not through fsx: the
// flock needs the descriptor, and the log is written only by the barrier,
// which syncs it with syncfs (the crash suite cuts the settling, which
// reads it through fsx).
func (w *Run) createLog() error {
	// A repo swamp has not written to yet has no .swamp: journal.Open
	// would make it too.
	if err := os.MkdirAll(filepath.Dir(w.logPath), 0o777); err != nil {
		return fmt.Errorf("creating %s for the run's change log: %w", filepath.Dir(w.logPath), err)
	}
	// O_EXCL and OpenPlain's O_NOFOLLOW: a link planted at the log's name
	// is an error, never a file created where it points.
	f, err := fsx.OpenPlain(w.logPath, os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND, 0o666)
	if err != nil {
		return fmt.Errorf("creating the run's change log: %w", err)
	}
	if err := journal.HoldRunLog(f); err != nil {
		f.Close()
		os.Remove(w.logPath)
		return fmt.Errorf("locking the run's change log %s: %w", w.logPath, err)
	}
	// The log's name is the signal a later command settles by: it must
	// survive a power cut before the command starts.
	if err := w.fsys.SyncDir(filepath.Dir(w.logPath)); err != nil {
		f.Close()
		os.Remove(w.logPath)
		return err
	}
	w.log = f
	return nil
}

func (w *Run) dropLog() {
	_ = w.fsys.Remove(w.logPath)
	_ = w.fsys.SyncDir(filepath.Dir(w.logPath))
	if w.log != nil {
		w.log.Close()
	}
}

// abort closes a record whose command never ran.
func (w *Run) abort(outcome string) {
	_ = w.Close(outcome)
}

func (w *Run) addSyncFD(dir string) {
	f, err := os.Open(dir)
	if err != nil {
		return // not there yet: its parent root is synced
	}
	key, err := fsKey(f)
	if err != nil {
		f.Close()
		return
	}
	for _, g := range w.syncFDs {
		if k, _ := fsKey(g); k == key {
			f.Close()
			return
		}
	}
	w.syncFDs = append(w.syncFDs, f)
}

// coveredRoots are the directories whose changes the barrier orders: the
// repo's .swamp (catalog, journal, the default datastore), the datastore
// wherever it lies, and extra (a remote datastore's cache). Each root is
// resolved once, so a datastore reached through a symlink is covered at
// its real path (the paths the barrier reads are real paths).
func coveredRoots(r *repo.Repo, extra []string) []string {
	seen := map[string]bool{}
	var out []string
	add := func(p string) {
		if p == "" {
			return
		}
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		p = filepath.Clean(p)
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	add(filepath.Join(r.Dir, ".swamp"))
	add(r.Base)
	for _, e := range extra {
		add(e)
	}
	sort.Strings(out)
	return out
}

func underAny(p string, roots []string) bool {
	for _, r := range roots {
		if p == r || strings.HasPrefix(p, r+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// Scope maps changed paths to the doctor's scope (doctor.Options.Only):
// a path inside the data tree to its data-name directory (a version's file
// or directory, `latest`), a run record to itself. Paths of swampj's and
// SQLite's own files are left out: the catalog is checked with the items.
func Scope(fsys fsx.FS, r *repo.Repo, paths []string) []string {
	data := realPath(r.DataRoot)
	base := realPath(r.Base)
	seen := map[string]bool{}
	var out []string
	for _, p := range paths {
		var s string
		switch {
		case filepath.Base(p) == ".lock":
			// swamp's model lock: not data (the doctor finds dead ones
			// with the model's items).
		case strings.HasPrefix(p, data+string(filepath.Separator)):
			s = itemDir(data, p)
		case strings.HasPrefix(p, base+string(filepath.Separator)) && recordLike(p):
			s = p
		}
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	// The doctor compares with the repo's own spelling of its paths.
	if data != r.DataRoot || base != r.Base {
		for i, s := range out {
			switch {
			case strings.HasPrefix(s, data):
				out[i] = r.DataRoot + strings.TrimPrefix(s, data)
			case strings.HasPrefix(s, base):
				out[i] = r.Base + strings.TrimPrefix(s, base)
			}
		}
	}
	return out
}

func realPath(p string) string {
	if real, err := filepath.EvalSymlinks(p); err == nil {
		return filepath.Clean(real)
	}
	return filepath.Clean(p)
}

// itemDir is the data-name directory a changed path under data belongs to
// ("" when the path is above one: a model or type directory).
func itemDir(data, p string) string {
	numeric := func(s string) bool {
		if s == "" {
			return false
		}
		for _, c := range s {
			if c < '0' || c > '9' {
				return false
			}
		}
		return true
	}
	dir := filepath.Dir(p)
	switch {
	case numeric(filepath.Base(p)):
		// a version directory
	case numeric(filepath.Base(dir)):
		dir = filepath.Dir(dir) // a version's file
	}
	rel, err := filepath.Rel(data, dir)
	if err != nil || strings.Count(rel, string(filepath.Separator)) < 2 {
		return "" // fewer than type/model/name
	}
	return dir
}

func recordLike(p string) bool {
	n := filepath.Base(p)
	for _, ext := range []string{".yaml", ".json", ".jsonl", ".log"} {
		if strings.HasSuffix(n, ext) {
			return true
		}
	}
	return false
}

// withJournal runs fn with the journal open as a data writer does (shared:
// the record's commits take the journal's turn only for themselves).
func withJournal(fsys fsx.FS, repoDir string, opts Options, fn func(*journal.Journal) error) error {
	jopts := session.JournalOptions(opts.Common)
	jopts.Shared = true
	j, err := journal.Open(fsys, repo.JournalPathOf(repoDir), jopts)
	if err != nil {
		return err
	}
	if err := fn(j); err != nil {
		_ = j.Close()
		return err
	}
	return j.Close()
}

// readLog returns the paths a change log holds (a torn last line is
// dropped: its barrier never returned, so its call never ran). The log is
// read as a stream, never whole, however long the command ran; a line
// longer than any path (maxLogLine: a damaged or planted log) is skipped,
// not allowed to cut the log short.
func readLog(fsys fsx.FS, path string) ([]string, error) {
	f, err := fsys.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	defer f.Close()
	var out []string
	br := bufio.NewReaderSize(f, maxLogLine)
	for {
		line, err := br.ReadSlice('\n')
		switch {
		case err == bufio.ErrBufferFull:
			// Over-long: skip to its end.
			for err == bufio.ErrBufferFull {
				_, err = br.ReadSlice('\n')
			}
			if err != nil && err != io.EOF {
				return out, err
			}
			continue
		case err == io.EOF:
			return out, nil // a last line without its newline is torn: dropped
		case err != nil:
			return out, err
		}
		out = append(out, string(line[:len(line)-1]))
	}
}

// maxLogLine bounds one change-log line: a path (PATH_MAX is 4096 bytes)
// with room to spare.
const maxLogLine = 64 << 10
