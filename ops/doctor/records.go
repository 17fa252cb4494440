package doctor

// Run records. swamp keeps method outputs under
// outputs/{type}/{method}/{id}-{ts}.yaml (+ .log), workflow runs under
// workflow-runs/{workflowId}/workflow-run-{id}.yaml with .runs-index.json
// indexes, and its command audit in audit/*.jsonl (swamp-format §2.8), all in the
// datastore tier, written without fsync. A power cut leaves zero-byte
// records; swamp's readers parse every file of a directory and one null
// document fails the whole command ("Cannot read properties of null
// (reading 'logFile')" from `swamp model output search` and `model method
// history search`). Such a record is a finding (CodeRecordUnreadable) and
// the repair moves it — with its .log — to {quarantine}/records/…, as it
// moves damaged versions. swamp writes these files by temp file and rename,
// so a live writer never shows a partial record at the final name; files
// younger than the lock write window are still left alone.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/lock"
	"github.com/swampj/swampj/ops/repo"
)

// recordProblem says what is wrong with a record's bytes ("" when fine).
func recordProblem(name string, data []byte) string {
	switch {
	case strings.HasSuffix(name, ".yaml"):
		if len(bytes.TrimSpace(data)) == 0 {
			return fmt.Sprintf("it is empty (%d bytes): swamp parses it as null", len(data))
		}
		var doc map[string]any
		if err := yaml.Unmarshal(data, &doc); err != nil {
			return "it is not valid YAML: " + err.Error()
		}
		if doc == nil {
			return "it is not a YAML mapping"
		}
	case strings.HasSuffix(name, ".json"):
		if !json.Valid(data) {
			return fmt.Sprintf("it is not valid JSON (%d bytes)", len(data))
		}
	case strings.HasSuffix(name, ".jsonl"):
		for i, line := range bytes.Split(data, []byte("\n")) {
			if len(bytes.TrimSpace(line)) > 0 && !json.Valid(line) {
				return fmt.Sprintf("line %d is not valid JSON (a torn append)", i+1)
			}
		}
	}
	return ""
}

// checkRecords checks the run records swamp reads back (outputs,
// workflow runs, audit): with Only, the ones the command wrote.
func (s *survey) checkRecords(ctx context.Context) error {
	return s.surveyRecords(ctx, s.w.only)
}

// surveyRecords finds damaged run records and plans their moves: every
// record of the record trees, or with only (Options.Only) the record
// files named there.
func (s *survey) surveyRecords(ctx context.Context, only map[string]bool) error {
	var want func(p string) bool
	var dirs []string // with only: the directories of the records named
	if only != nil {
		want = func(p string) bool { return only[p] }
		seen := map[string]bool{}
		for _, root := range s.r.RecordRoots() {
			for p := range only {
				if d := filepath.Dir(p); strings.HasPrefix(p, root+string(filepath.Separator)) && !seen[d] {
					seen[d] = true
					dirs = append(dirs, d)
				}
			}
		}
		sort.Strings(dirs)
	}
	roots := s.r.RecordRoots()
	for i, sub := range repo.RecordDirs {
		root := roots[i]
		var walk func(dir string, descend bool) error
		walk = func(dir string, descend bool) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			ents, err := s.fsys.ReadDir(dir)
			if err != nil {
				if fsx.IsCrash(err) {
					return err
				}
				if errors.Is(err, fs.ErrNotExist) {
					return nil
				}
				if f, ok := outsideFinding(dir, err); ok {
					s.general.add(f, false)
					return nil
				}
				if errors.Is(err, syscall.ENOTDIR) {
					s.warnings = append(s.warnings, fmt.Sprintf("run records under %s not checked: a regular file stands where a directory must go: %s; "+
						"move it away (a migration that stopped there runs again once it is gone)", dir, dir))
				} else {
					s.warnings = append(s.warnings, fmt.Sprintf("run records under %s not checked: %v", dir, err))
				}
				return nil
			}
			names := map[string]bool{}
			for _, e := range ents {
				names[e.Name()] = true
			}
			for _, e := range ents {
				p := filepath.Join(dir, e.Name())
				if e.IsDir() {
					if !descend {
						continue
					}
					if err := walk(p, true); err != nil {
						return err
					}
					continue
				}
				if !e.Type().IsRegular() || !repo.IsRecordName(e.Name()) || want != nil && !want(p) {
					continue
				}
				if err := s.checkRecord(sub, dir, e.Name(), names); err != nil {
					return err
				}
			}
			return nil
		}
		if only == nil {
			if err := walk(root, true); err != nil {
				return err
			}
			continue
		}
		for _, d := range dirs {
			if d == root || strings.HasPrefix(d, root+string(filepath.Separator)) {
				if err := walk(d, false); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// recordQPath is where a record under the tier goes in quarantine.
func (s *survey) recordQPath(p string) string {
	rel, err := filepath.Rel(s.r.Base, p)
	if err != nil || strings.HasPrefix(rel, "..") {
		rel = filepath.Base(p)
	}
	return filepath.Join(s.qstamp, "records", rel)
}

// checkRecord reads the run record n in dir (sub: its record tree) and,
// if swamp cannot read it back and it is not being written, plans its move
// to quarantine with its .log. names are the entries of dir.
func (s *survey) checkRecord(sub, dir, n string, names map[string]bool) error {
	p := filepath.Join(dir, n)
	s.records++
	data, err := s.fsys.ReadFile(p)
	if err != nil {
		if fsx.IsCrash(err) {
			return err
		}
		s.warnings = append(s.warnings, fmt.Sprintf("run record %s not checked: %v", p, err))
		return nil
	}
	why := recordProblem(n, data)
	if why == "" {
		return nil
	}
	if fi, err := s.fsys.Stat(p); err == nil && time.Since(fi.ModTime()) <= lock.WriteWindow {
		return nil // possibly still being written
	}
	u := &unit{}
	dest := s.recordQPath(p)
	u.moves = append(u.moves, Move{From: p, To: dest})
	fix := "move it to " + dest
	if strings.HasSuffix(n, ".yaml") {
		if log := strings.TrimSuffix(n, ".yaml") + ".log"; names[log] {
			lp := filepath.Join(dir, log)
			u.moves = append(u.moves, Move{From: lp, To: s.recordQPath(lp)})
			fix += " with its " + log
		}
	}
	u.add(Finding{Code: CodeRecordUnreadable, Path: p,
		Message: fmt.Sprintf("swamp's %s record %s cannot be read: %s; swamp's readers of %s/ fail on it", sub, p, why, sub),
		Fix:     fix}, true)
	s.units = append(s.units, u)
	return nil
}
