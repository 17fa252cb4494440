package doctor

// The report: findings with their status, the checks, notes on what swamp does
// differently, and the models named.

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/swampj/swampj/ops/report"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/repo"
)

func (s *survey) newReport(mode string) *Report {
	rep := &Report{
		Repo: s.r.Dir, DataRoot: s.r.DataRoot, Namespace: s.r.Namespace, Catalog: s.r.CatalogPath, Mode: mode,
		Items: s.items, Versions: s.versions, ChecksumsVerified: s.o.VerifyChecksum, StepLatestColumn: s.stepCol,
		Findings: []Finding{}, Moves: []Move{}, ReadOnly: s.readOnly, NotWritable: s.notWritable,
		Locks: s.lockCount, Records: s.records, InFlight: append([]InFlight{}, s.inFlight...),
		SwampChecks: append([]SwampCheck{}, s.swamp...),
	}
	rep.SetNotices(append(swampDoctorNotes(s.fsys, s.r), s.notes...), s.warnings)
	return rep
}

// swampDoctorNotes explains, in a namespaced repo, what swamp's `doctor
// datastores` will report as "un-migrated data" although nothing is wrong
// (swamp's defect, swamp-format §10.13): its check flags every
// default subdirectory of the un-namespaced base that holds a file, so it
// flags {base}/data for the repo-local catalog (which never moves) and
// {base}/outputs for the .log files swamp's own method runs keep writing
// there. Only those two are explained; a subdirectory holding real
// un-migrated data is not, since swamp is right about it.
func swampDoctorNotes(fsys fsx.FS, r *repo.Repo) []Notice {
	notes := []Notice{}
	if r.Namespace == "" {
		return notes
	}
	var what []string
	remedy := report.RemedyNone
	dataDir := filepath.Join(r.Base, "data")
	if ents, err := fsys.ReadDir(dataDir); err == nil && len(ents) > 0 {
		onlyCatalog := true
		for _, e := range ents {
			if !repo.IsCatalogFile(e.Name()) {
				onlyCatalog = false
				break
			}
		}
		if onlyCatalog {
			what = append(what, dataDir+" (it holds only the repo-local catalog)")
		}
	}
	outputs := filepath.Join(r.Base, "outputs")
	if files, logsOnly := countOutputs(fsys, outputs); files > 0 && logsOnly {
		what = append(what, fmt.Sprintf("%s (%d .log file(s) swamp's method runs write there)", outputs, files))
		remedy = report.RemedyMigrate // folds them in
	}
	if len(what) == 0 {
		return notes
	}
	return append(notes, Note(fmt.Sprintf("swamp's doctor datastores will report %s as un-migrated data; that is swamp's defect, "+
		"not a problem of this repo: the catalog is repo-local and never moves; root outputs logs are folded in by "+
		"the namespace migration", strings.Join(what, " and ")), remedy))
}

// countOutputs counts the files below dir and whether all are .log files.
func countOutputs(fsys fsx.FS, dir string) (files int, logsOnly bool) {
	logsOnly = true
	var walk func(d string)
	walk = func(d string) {
		ents, err := fsys.ReadDir(d)
		if err != nil {
			return
		}
		for _, e := range ents {
			if e.IsDir() {
				walk(filepath.Join(d, e.Name()))
				continue
			}
			files++
			logsOnly = logsOnly && strings.HasSuffix(e.Name(), ".log")
		}
	}
	walk(dir)
	return files, logsOnly
}

// report lists every finding; status decides the status of the automatic
// ones (manual ones stay manual).
func (s *survey) report(mode string, moves []Move, status func(*unit) Status) *Report {
	rep := s.newReport(mode)
	if len(moves) > 0 {
		rep.Moves, rep.Quarantine = moves, s.qstamp
	}
	for _, u := range s.units {
		for _, f := range u.findings {
			f.Status = StatusManual
			if f.auto && u.hasRepair() {
				f.Status = status(u)
			}
			rep.Findings = append(rep.Findings, f.Finding)
		}
	}
	for _, f := range rep.Findings {
		if f.Status != StatusRepaired {
			rep.Remaining++
		}
	}
	s.nameModels(rep.Findings)
	return rep
}

// nameModels fills each finding's model name from the model definitions
// (models/{type}/{name}.yaml, as swamp resolves them), else from the
// catalog's model_name.
func (s *survey) nameModels(fs []Finding) {
	names := map[string]string{}
	for id, n := range s.modelNames {
		names[id] = n
	}
	if defs, err := s.r.ModelDefinitions(s.fsys); err == nil {
		for _, d := range defs {
			if d.ID != "" && d.Name != "" {
				names[d.ID] = d.Name
			}
		}
	}
	for i := range fs {
		if fs[i].Item == "" {
			continue
		}
		parts := strings.Split(fs[i].Item, "/")
		if len(parts) >= 3 {
			fs[i].ModelName = names[parts[len(parts)-2]]
		}
	}
}

// reportRepair is the report of a confirmed run: in (nil: nothing ran)
// repaired the allowed units; busy says why the others were skipped.
func (s *survey) reportRepair(in *journal.Intent, status func(*unit) Status, busy map[string]string) *Report {
	var moves []Move
	if in != nil {
		moves = s.plannedMoves(func(u *unit) bool { return status(u) == StatusRepaired })
	}
	rep := s.report("repair", moves, status)
	i := 0
	for _, u := range s.units {
		for range u.findings {
			f := &rep.Findings[i]
			i++
			if f.Status != StatusSkipped {
				continue
			}
			if why, ok := busy[u.lockPath]; ok {
				f.Reason = "swamp's model lock is busy: " + why
			} else {
				f.Reason = "found while repairing (its model lock was not taken); run the doctor again"
			}
		}
	}
	return rep
}

// refused is the report and error of a confirmed repair refused because
// intents are open.
func (s *survey) refused(open []*journal.Intent) (*Report, error) {
	e := report.NewOpenIntentsError(open, "run the doctor again")
	rep := s.report("repair", nil, func(*unit) Status { return StatusSkipped })
	for i := range rep.Findings {
		if rep.Findings[i].Status == StatusSkipped {
			rep.Findings[i].Reason = "an interrupted swampj operation is open; it must be finished (recovered) first"
		}
	}
	return rep, e
}
