package protocol

// The remove-file step kind: a namespace manifest removed by a migration
// (ops/migrate/migrate.go, ops/migrate/namespace.go), put back byte for byte on undo.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/internal/engine"
)

// KindRemoveFile removes the small file Path whose whole content is OldData
// (a namespace manifest). Done when the file is absent; not done while it
// still holds OldData; anything else is a conflict, because the file changed
// since the plan was made. Undo writes OldData back durably through the
// temp name Temp fixed at plan time.
const KindRemoveFile = "remove-file"

// RemoveFileStep builds a remove-file step for path, which holds old now.
func RemoveFileStep(path string, old []byte, note string) journal.Step {
	return journal.Step{Kind: KindRemoveFile, Path: path, OldData: old, OldExists: true, Temp: fsx.TempName(path), Note: note}
}

func observeRemoveFile(_ context.Context, env *engine.Env, s *journal.Step) (engine.Observation, string, error) {
	tempLeft := false
	if s.Temp != "" {
		if ok, _ := fsx.Exists(env.FS, s.Temp); ok {
			tempLeft = true
		}
	}
	cur, err := env.FS.ReadFile(s.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if tempLeft {
			// An undo that crashed before its rename: forward removes the
			// temp, backward writes the file again.
			return engine.Partial, "temp file " + s.Temp + " left behind", nil
		}
		return engine.Done, "", nil
	case err != nil:
		return engine.Conflict, "", err
	case bytes.Equal(cur, s.OldData):
		if tempLeft {
			return engine.Partial, "temp file " + s.Temp + " left behind", nil
		}
		return engine.NotDone, "", nil
	default:
		return engine.Conflict, fmt.Sprintf("%s holds %d bytes that are not the content the plan removes", s.Path, len(cur)), nil
	}
}

func applyRemoveFile(_ context.Context, env *engine.Env, s *journal.Step, d *engine.Dirty) error {
	if err := env.FS.Remove(s.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return CleanTemp(env, s, d)
}

func undoRemoveFile(_ context.Context, env *engine.Env, s *journal.Step, d *engine.Dirty) error {
	if err := fsx.WriteFileAtomicVia(env.FS, s.Path, WriteTemp(s), s.OldData, fsx.FileMode); err != nil {
		return err
	}
	d.Synced(filepath.Dir(s.Path))
	return nil
}
