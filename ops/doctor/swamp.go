package doctor

// swamp's own `doctor datastores` checks (swamp-format §5.1), computed the
// way they should be, under swamp's check ids and with swamp's keys, so an
// operator can hold the two doctors side by side. swamp gets three of them
// wrong after a migration (swamp-format §10.2, §10.13): it counts the repo-local
// catalog and the .log files its own method runs write to {base}/outputs
// as un-migrated data, and it counts catalog completeness against
// {repo}/.swamp/data whatever the real data root is, so a namespaced or
// external datastore reports "covers all 0 record(s)".

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/ops/report"
)

// SwampCheck is one of swamp's datastore checks: check, passed and message
// are swamp's keys (its healthFindings); SwampDiffers says where swamp's
// own answer differs and why.
type SwampCheck struct {
	Check        string `json:"check"`
	Passed       bool   `json:"passed"`
	Message      string `json:"message"`
	SwampDiffers string `json:"swampDiffers,omitempty"`
	// Remedy is the action of swampj's that Message (a failed check) or
	// else SwampDiffers advises; not in swamp's JSON (the CLI appends its
	// command to that text instead).
	Remedy report.Remedy `json:"-"`
}

// Swamp's check ids (doctor_datastores.ts).
const (
	SwampCheckHealth        = "health"
	SwampCheckMigration     = "namespace_migration"
	SwampCheckContamination = "namespace_contamination"
	SwampCheckCompleteness  = "catalog_completeness"
)

// checkSwamp runs swamp's own checks, computed right, and reports the
// ones that fail. A failing migration check is a note, not a finding.
func (s *survey) checkSwamp(context.Context) error {
	latest := map[string]int{}
	for _, group := range s.w.rows {
		for _, row := range group.rows {
			if row.IsLatest {
				latest[row.TypeNormalized]++
			}
		}
	}
	s.swamp = s.swampChecks(s.diskByType, latest)
	for _, c := range s.swamp {
		switch {
		case c.Passed:
		case c.Check == SwampCheckMigration:
			// Where data sits is the migrate command's business (its
			// preview lists what would move), not damage: after
			// `migrate --reverse` with the namespace still set, the
			// data is at the root on purpose. Reported, not a finding.
			s.notes = append(s.notes, Note(fmt.Sprintf("swamp's %s check fails: %s. That is a layout, not damage: "+
				"the namespace migration's preview lists what would move; after a reverse migration with the namespace still set, "+
				"unsetting the namespace finishes going back", c.Check, c.Message), report.RemedyMigrate))
		case c.Check == SwampCheckHealth && fsx.ReadOnlyMedia(s.r.Base):
			// Read-only media (a backup image, a snapshot): swamp cannot
			// write here, and says so; the data itself is checked in full
			// all the same. What it is, not damage.
			s.readOnly = true
			s.notes = append(s.notes, Note(fmt.Sprintf("read-only media: swamp cannot write here (its health check fails: %s). "+
				"The data checks ran in full and are reported here; mount it read-write to use it with swamp", c.Message), report.RemedyMountReadWrite))
		case c.Check == SwampCheckHealth && s.baseIsDir():
			// A directory this user may read but not write (a repo
			// another user owns): swamp run as this user cannot write
			// here, and says so. The data is checked in full all the
			// same; a change is for a user who may write.
			s.notWritable = true
			who := "this user"
			if a := fsx.AccessOf(s.r.Base); a != nil {
				who = a.User + " (" + a.Path + " is " + a.Mode.String() + " owned by " + a.Owner + ")"
			}
			s.notes = append(s.notes, Note(fmt.Sprintf("not writable by this user: %s may read the datastore but not write it, so swamp run as this user "+
				"cannot write here either (its health check fails: %s). The data checks ran in full and are reported here; "+
				"changes need a user who may write the repo, or write permission for this one", who, c.Message), report.RemedyFixAccess))
		default:
			f := Finding{Code: CodeSwampCheck, Path: s.r.Base, swampCheck: c.Check,
				Message: fmt.Sprintf("swamp's %s check: %s", c.Check, c.Message)}
			f.Fix, f.Remedy = swampCheckFix(c)
			s.general.add(f, false)
		}
	}
	return nil
}

// swampCheckFix is what ends a failing swamp check that is a finding.
func swampCheckFix(c SwampCheck) (string, report.Remedy) {
	if c.Check == SwampCheckCompleteness {
		return "the repair rebuilds the catalog from the disk (rebuilding the catalog does the same)", report.RemedyRepair
	}
	// health: the datastore directory is missing, not a directory, or not
	// writable for this user.
	return "make the datastore directory " + "a directory this user can write (create it, move what is in its place away, or fix its permissions)", report.RemedyFixAccess
}

// baseIsDir reports whether the datastore directory exists as a
// directory (its health check then fails only for want of write access).
func (s *survey) baseIsDir() bool {
	fi, err := s.fsys.Stat(s.r.Base)
	return err == nil && fi.IsDir()
}

// swampChecks computes the four checks. diskByType counts the items the
// walk of the real data root found per type; catalogLatest the catalog's
// is_latest rows of the repo namespace per type.
func (s *survey) swampChecks(diskByType, catalogLatest map[string]int) []SwampCheck {
	out := []SwampCheck{s.swampHealth()}
	if s.r.Namespace != "" {
		out = append(out, s.swampMigration(),
			SwampCheck{Check: SwampCheckContamination, Passed: true,
				Message: "not applicable: a filesystem datastore has no remote namespace to be contaminated (swamp runs this check for extension datastores only)"})
	}
	return append(out, s.swampCompleteness(diskByType, catalogLatest))
}

// swampHealth: the base exists, is a directory, and can be written —
// asked with access(2), not with swamp's probe file (an inspection writes
// nothing).
func (s *survey) swampHealth() SwampCheck {
	r := s.r
	h := SwampCheck{Check: SwampCheckHealth}
	fi, err := s.fsys.Stat(r.Base)
	switch {
	case err != nil:
		h.Message = fmt.Sprintf("Datastore directory does not exist: %s (%v)", r.Base, err)
	case !fi.IsDir():
		h.Message = fmt.Sprintf("Path exists but is not a directory: %s", r.Base)
	case !fsx.Writable(r.Base):
		h.Message = fmt.Sprintf("Directory exists but is not writable: %s", r.Base)
	default:
		h.Passed, h.Message = true, fmt.Sprintf("Filesystem datastore at %s is healthy", r.Base)
	}

	return h
}

// swampMigration: real files (not the catalog, not swamp's own root logs)
// under an un-namespaced subdirectory.
func (s *survey) swampMigration() SwampCheck {
	r := s.r
	m := SwampCheck{Check: SwampCheckMigration}
	var real, explained []string
	tier := map[string]bool{}
	for _, d := range r.Directories {
		tier[d] = true
	}
	for _, sub := range repo.DefaultSubdirs {
		dir := filepath.Join(r.Base, sub)
		files, logs := s.rootFiles(dir, sub)
		switch {
		case files > 0 && !tier[sub]:
			// secrets and bundles stay local by design (swamp-format §1.3).
			explained = append(explained, sub+" (always local, never namespaced)")
		case files > 0:
			real = append(real, sub)
		case logs > 0:
			explained = append(explained, fmt.Sprintf("%s (%d .log file(s) swamp's method runs write there; the namespace migration folds them in)", sub, logs))
			m.Remedy = report.RemedyMigrate // advised in SwampDiffers
		case sub == "data" && s.holdsCatalog(dir):
			explained = append(explained, "data (only the repo-local catalog, which never moves)")
		}
	}
	if len(real) > 0 {
		m.Message = fmt.Sprintf("Un-migrated data found at root level (%s). The namespace migration moves it into namespace %q",
			strings.Join(real, ", "), r.Namespace)
		m.Remedy = report.RemedyMigrate
	} else {
		m.Passed = true
		m.Message = fmt.Sprintf("All data is under namespace %q", r.Namespace)
	}
	if len(explained) > 0 {
		m.SwampDiffers = "swamp reports un-migrated data at root level here: " + strings.Join(explained, "; ") + " — swamp's defect, not data left behind"
		if len(real) > 0 {
			m.Message += "; not counted: " + strings.Join(explained, "; ")
		}
	}
	return m
}

// swampCompleteness: every on-disk item of the real data root has its
// latest row, per type.
func (s *survey) swampCompleteness(diskByType, catalogLatest map[string]int) SwampCheck {
	r := s.r
	c := SwampCheck{Check: SwampCheckCompleteness}
	disk, cat := 0, 0
	var short []string
	types := make([]string, 0, len(diskByType))
	for t := range diskByType {
		types = append(types, t)
	}
	sort.Strings(types)
	for _, t := range types {
		disk += diskByType[t]
		cat += catalogLatest[t]
		if catalogLatest[t] < diskByType[t] {
			short = append(short, fmt.Sprintf("%s: %d indexed of %d on disk", t, catalogLatest[t], diskByType[t]))
		}
	}
	switch {
	case s.catalogUnread:
		// A catalog is there but could not be read here (its finding or
		// warning says why): what it covers is not known.
		c.Passed = true
		c.Message = fmt.Sprintf("Catalog index not checked: the catalog could not be read here (%d record(s) on disk)", disk)
	case !s.catalogUsable || (!s.populated && s.catalogRows == 0):
		// No catalog, or one swamp invalidated: swamp's next query builds
		// it from disk, so nothing is missing from a query's point of view.
		c.Passed = true
		c.Message = fmt.Sprintf("Catalog index not built yet: swamp builds it from the %d record(s) on disk at its next query (a catalog rebuild builds it now)", disk)
		c.Remedy = report.RemedyRebuildCatalog
	case len(short) > 0 && !s.populated:
		// Not marked populated: swamp's next query runs its additive
		// backfill (swamp-format §3.7), which adds every missing row.
		c.Passed = true
		c.Message = fmt.Sprintf("Catalog index holds %d of %d record(s) on disk and is not marked populated: swamp's next query backfills the rest", cat, disk)
	case len(short) > 0:
		c.Message = fmt.Sprintf("Catalog index is missing %d record(s) across %d model type(s) that exist on disk (%s). A catalog rebuild adds them",
			disk-cat, len(short), strings.Join(short, "; "))
		c.Remedy = report.RemedyRebuildCatalog
	default:
		c.Passed = true
		c.Message = fmt.Sprintf("Catalog index covers all %d record(s) on disk", disk)
	}
	if local := filepath.Join(r.Dir, ".swamp", "data"); filepath.Clean(r.DataRoot) != filepath.Clean(local) {
		c.SwampDiffers = fmt.Sprintf("swamp counts the records under %s, not the data root %s, so it reports the index complete whatever it holds", local, r.DataRoot)
	}
	return c
}

// rootFiles counts, below {base}/{sub}, the files swamp's check would call
// un-migrated data (catalog files of data/ excluded) and, for outputs/,
// the .log files swamp itself writes there.
func (s *survey) rootFiles(dir, sub string) (files, logs int) {
	var walk func(d string, depth int)
	walk = func(d string, depth int) {
		ents, err := s.fsys.ReadDir(d)
		if err != nil {
			return
		}
		for _, e := range ents {
			p := filepath.Join(d, e.Name())
			switch {
			case e.IsDir():
				walk(p, depth+1)
			case sub == "data" && depth == 0 && repo.IsCatalogFile(e.Name()):
			case sub == "outputs" && strings.HasSuffix(e.Name(), ".log") && e.Type()&fs.ModeType == 0:
				logs++
			default:
				files++
			}
		}
	}
	walk(dir, 0)
	return files, logs
}

func (s *survey) holdsCatalog(dir string) bool {
	ents, err := s.fsys.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range ents {
		if repo.IsCatalogFile(e.Name()) {
			return true
		}
	}
	return false
}
