package engine

// Recording an intent while its first steps run: the journal commit in flight
// beside the staging of a write (DriveRecording waits for it before anything
// becomes visible).

import (
	"context"
	"fmt"
	"time"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/journal"
)

// nameTemps chooses the temp names of the intent's steps that go through
// a temp file (Kind.Temp) and have none yet.
func nameTemps(in *journal.Intent) {
	for i := range in.Steps {
		s := &in.Steps[i]
		if k, err := KindOf(s); err == nil && k.Temp && s.Temp == "" {
			s.Temp = fsx.TempName(s.Path)
		}
	}
}

// Recording is the journal commit of an intent that runs while the
// intent's leading staging steps write (a versioned write's raw and
// metadata.yaml into hidden staging directories that no reader looks at):
// the journal's two fdatasyncs then overlap the staging and its fsyncs
// instead of preceding them. The executor joins it before the first step
// that is not staging, so nothing a reader can see changes before the
// intent is durable (DriveRecording).
//
// On the real disk the commit runs in its own goroutine from
// StartRecording on. Under a test file system every operation must keep
// its number, so the commit is issued in line, first, as Record does:
// the serial order of a crash suite is the one it always was. (Its ALICE
// states drop any one un-fsynced operation, the journal's holder record
// included, so a staging directory created ahead of the commit there could
// be left with no trace of the crash that made it.) The state the overlap
// adds — staging with no intent yet — comes only from the real disk; the
// crash-image suite and the write tests that crash the commit itself
// (write_prerecord_test.go) cover it.
type Recording struct {
	j  *journal.Journal
	in *journal.Intent
	// begun is the copy of in that the commit fills in (id, status,
	// times) while the run reads in; settle copies those back.
	begun   journal.Intent
	settled bool
	done    chan struct{}
	err     error
	release func() // the journal's turn, let go once the commit is done
}

// StartRecording prepares the intent like Record and starts its commit
// (on the real disk; see Recording).
//
// A shared holder of the journal (journal/hold.go) takes the journal's turn
// here, before anything is staged, and lets it go once the commit is
// durable: a writer that dies with its staging written and its intent not
// yet durable then leaves its holder record behind, the evidence the next
// holder sweeps by (CrashLeftoversUnchecked).
func StartRecording(fsys fsx.FS, j *journal.Journal, in *journal.Intent) *Recording {
	nameTemps(in)
	r := &Recording{j: j, in: in, begun: *in, done: make(chan struct{})}
	release, err := j.Hold()
	if err != nil {
		r.err = fmt.Errorf("journal: recording intent: %w", err)
		close(r.done)
		return r
	}
	r.release = release
	if fsx.Concurrent(fsx.OrReal(fsys)) {
		go r.run()
	} else {
		r.run()
	}
	return r
}

func (r *Recording) run() {
	defer close(r.done)
	defer r.release()
	start := time.Now()
	_, r.err = r.j.Begin(&r.begun)
	observeFlush("journal-commit", 2, start, time.Now())
}

// settle waits for the commit and, once, gives the intent what Begin
// recorded in it.
func (r *Recording) settle() {
	<-r.done
	if !r.settled {
		r.settled = true
		if r.err == nil {
			*r.in = r.begun
		}
	}
}

// Wait returns the commit's outcome once it is durable or has failed.
func (r *Recording) Wait() error {
	r.settle()
	return r.err
}

// Recorded reports whether the intent is in the journal. It waits for a
// commit in flight.
func (r *Recording) Recorded() bool {
	r.settle()
	return r.err == nil
}

// RecordError is a journal commit of a Recording that failed: only
// staging steps had run, and DriveRecording removed what they staged.
type RecordError struct{ Err error }

func (e *RecordError) Error() string { return "recording the intent in the journal: " + e.Err.Error() }

func (e *RecordError) Unwrap() error { return e.Err }

// DriveRecording runs forward an intent whose journal commit is in flight
// (StartRecording). Staging steps run meanwhile; the commit is joined
// before the first other step. If the run fails before the intent is in
// the journal (the commit failed, or a staging step failed before it was
// issued), what the staging steps wrote is removed here — nothing else was
// touched, and nothing of it was ever visible — and the error is returned
// as it is (*RecordError for the commit's own failure); Result is nil then.
// Once the intent is recorded, a failure is Drive's.
func DriveRecording(ctx context.Context, env *Env, j *journal.Journal, rec *Recording, live LiveApply) (*Result, error) {
	env = env.OrRealFS()
	res, err := drive(ctx, env, j, rec.in, journal.Forward, live, rec)
	if err == nil || rec.Recorded() {
		return res, err
	}
	if fsx.IsCrash(err) || fsx.IsCrash(rec.err) {
		if !fsx.IsCrash(err) {
			err = rec.err
		}
		return nil, err // a crash leaves what it leaves; recovery attributes it
	}
	d := &Dirty{fs: env.FS}
	for i := range rec.in.Steps {
		s := &rec.in.Steps[i]
		if k, kerr := KindOf(s); kerr == nil && k.Stages {
			if uerr := k.Undo(ctx, env, s, d); uerr != nil {
				return nil, fmt.Errorf("%w (and removing the staged files failed: %v; recover removes them)", err, uerr)
			}
		}
	}
	if perr := removePreparedTemps(env, rec.in); perr != nil {
		return nil, fmt.Errorf("%w (and removing a temp file failed: %v; recover removes it)", err, perr)
	}
	if rec.err != nil {
		return nil, &RecordError{Err: rec.err}
	}
	return nil, err
}

// Intent is the intent being recorded (its id is set once recorded).
func (r *Recording) Intent() *journal.Intent { return r.in }
