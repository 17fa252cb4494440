package doctor

// The staging check family: .swampj-stage-* directories no open intent owns
// (staging_leftover), judged by the owner token in their names. A stage
// whose writer is alive is work in progress, noted (InFlight) and never a
// finding, so a doctor run beside writers stays clean.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/swampj/swampj/ops/internal/session"

	"github.com/swampj/swampj/fsx"
)

// checkStaging finds staging directories no open intent owns. With Only
// (what a command changed), only those inside the changed items: an
// interrupted command leaves exactly those behind.
func (s *survey) checkStaging(ctx context.Context) error {
	owned := map[string]bool{}
	for _, in := range s.open {
		for _, st := range in.Steps {
			owned[filepath.Clean(st.Path)], owned[filepath.Clean(st.To)] = true, true
		}
	}
	var stageRoots []string
	if s.w.only != nil {
		for _, it := range s.w.walked {
			if s.w.itemDirs[it.Dir] {
				stageRoots = append(stageRoots, it.Dir)
			}
		}
	}
	stages, err := s.findStages(ctx, s.w.itemDirs, owned, s.w.listings, stageRoots)
	if err != nil {
		return err
	}
	s.units = append(s.units, stages...)
	return nil
}

// findStages lists staging directories under the data root that no open
// intent owns. Version directories of known items are not entered.
// Directories the walk and the scan listed already (listings) are not
// listed again.
//
// roots, when not nil, are the directories searched (the changed items of
// Options.Only) instead of the whole data root.
func (s *survey) findStages(ctx context.Context, itemDirs, owned map[string]bool, listings map[string][]fs.DirEntry, roots []string) ([]*unit, error) {
	var units []*unit
	var walk func(dir string, segs []string) error
	walk = func(dir string, segs []string) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		ents, ok := listings[dir]
		var err error
		if !ok {
			ents, err = s.fsys.ReadDir(dir)
		}
		if err != nil {
			if fsx.IsCrash(err) {
				return err
			}
			return nil // reported by the walk already, or gone
		}
		isItem := itemDirs[dir]
		for _, e := range ents {
			if !e.IsDir() {
				continue
			}
			name := e.Name()
			if isItem && allDigits(name) {
				continue // a version directory holds only files (no path built: an item has many)
			}
			p := filepath.Join(dir, name)
			switch {
			case strings.HasPrefix(name, session.StagePrefix):
				if owned[p] {
					continue
				}
				if pid, _, attributed := session.StageOwner(name); attributed && !session.StageOwnerGone(name) {
					// A write in progress stages before its intent is
					// journaled (exec.go, Recording): its writer is alive.
					s.inFlight = append(s.inFlight, InFlight{Item: strings.Join(segs, "/"), Path: p, Pid: pid,
						Message: fmt.Sprintf("%s is being staged by a live write (pid %d); it is left alone", p, pid)})
					continue
				}
				// The listing may be older than the judgement: a live
				// writer that published its stage (or rolled it back) and
				// exited in between leaves a gone owner and no stage. Look
				// again now that the owner is gone — a dead writer moves
				// nothing any more — so a doctor beside writers reports
				// only what is really left.
				if _, err := s.fsys.Lstat(p); errors.Is(err, fs.ErrNotExist) {
					continue
				} else if fsx.IsCrash(err) {
					return err
				}
				units = append(units, s.stageUnit(p, append(segs[:len(segs):len(segs)], name)))
			case strings.HasPrefix(name, ".swampj-"):
				// swampj's own directories
			default:
				if err := walk(p, append(segs[:len(segs):len(segs)], name)); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if roots == nil {
		if err := walk(s.r.DataRoot, nil); err != nil {
			return nil, err
		}
		return units, nil
	}
	for _, dir := range roots {
		rel, err := filepath.Rel(s.r.DataRoot, dir)
		if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
			continue
		}
		if err := walk(dir, strings.Split(filepath.ToSlash(rel), "/")); err != nil {
			return nil, err
		}
	}
	return units, nil
}

// stageUnit is one leftover staging directory ({type}/{model}/{name}/stage).
func (s *survey) stageUnit(path string, segs []string) *unit {
	u := &unit{}
	item := ""
	if n := len(segs); n >= 4 {
		typ, model := strings.Join(segs[:n-3], "/"), segs[n-3]
		item = strings.Join(segs[:n-1], "/")
		u.lockPath = s.modelLockPath(typ, model, filepath.Dir(filepath.Dir(path)))
	}
	dest := s.qpath(path)
	u.moves = []Move{{From: path, To: dest}}
	u.add(Finding{Code: CodeStagingLeftover, Path: path, Item: item,
		Message: "a swampj staging directory that no open intent owns: an interrupted write whose journal record is gone; swamp never reads it",
		Fix:     "move it to " + dest}, true)
	return u
}
