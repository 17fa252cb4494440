package catalog

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"sort"
	"time"

	"github.com/swampj/swampj/fsx"
)

// sidecarSuffixes are the files SQLite keeps beside a database and finds by
// name (swamp-format §3.1, §11, design §2.3). With the database they are one unit:
// a database separated from its -wal loses committed transactions or becomes
// corrupt, so they are moved together and never deleted (swamp-format §9.4).
var sidecarSuffixes = []string{"-wal", "-shm", "-journal"}

// MovedFile is one rename done by a move-aside.
type MovedFile struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// MoveAside reports a damaged catalog that Open moved out of the way before
// creating a fresh one. The moved files keep their relative names (the
// database plus "-wal", "-shm", "-journal"), so the moved set is still an
// openable SQLite database for inspection.
type MoveAside struct {
	Reason string      `json:"reason"`
	Files  []MovedFile `json:"files"`
}

// stampLayout is the UTC time stamp in moved-aside names.
const stampLayout = "20060102T150405Z"

// Infixes of moved-aside names. A damaged catalog goes to
// <db>.corrupt-<stamp><suffix>; sidecars found without any database go to
// <db>.orphan-<stamp><suffix>, so that an orphan set is never mistaken for
// the unfinished half of an interrupted move.
const (
	infixCorrupt = ".corrupt-"
	infixOrphan  = ".orphan-"
)

func movedName(dbPath, infix, stamp, suffix string) string {
	return dbPath + infix + stamp + suffix
}

// MoveAsideFiles moves the catalog at path and its sidecars aside, with the
// same names and order Open uses for a damaged file, for a caller that has
// decided the catalog must go (e.g. a foreign one the user confirmed). It
// returns nil when there is nothing to move. It refuses while this process
// has the catalog open (a database must not be renamed while in use,
// design §2.3); other processes are the caller's concern: hold the
// datastore lock and make sure no swamp process runs.
func MoveAsideFiles(fsys fsx.FS, path, reason string, now time.Time) (*MoveAside, error) {
	fsys = fsx.OrReal(fsys)
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, &MoveAsideError{Path: path, Reason: reason, Err: err}
	}
	if holdPath(abs) {
		releasePath(abs)
		return nil, &MoveAsideError{Path: abs, Reason: reason, Err: errors.New("the catalog is open in this process; close it first")}
	}
	defer releasePath(abs)
	return moveAside(fsys, abs, reason, now)
}

// moveAside renames the catalog and its sidecars to moved-aside names.
//
// Order matters for a crash in the middle: sidecars first, the database
// last. SQLite deletes a -wal or -journal that it finds beside a missing,
// empty or non-SQLite database, so the sidecars are taken out of its reach
// first; a damaged database left at the live name is recognised again at
// the next Open. That Open reuses the stamp of the unfinished set (moved
// sidecars, no moved database), so one damaged catalog ends up under one
// stamp (see chooseStamp). Every rename refuses to replace, and the
// directory is fsynced after the sidecars and again after the database.
func moveAside(fsys fsx.FS, dbPath, reason string, now time.Time) (*MoveAside, error) {
	var live []string // sidecars first, database last
	for _, suf := range sidecarSuffixes {
		if ok, err := fsx.Exists(fsys, dbPath+suf); err != nil {
			return nil, &MoveAsideError{Path: dbPath, Reason: reason, Err: err}
		} else if ok {
			live = append(live, suf)
		}
	}
	dbExists, err := fsx.Exists(fsys, dbPath)
	if err != nil {
		return nil, &MoveAsideError{Path: dbPath, Reason: reason, Err: err}
	}
	if dbExists {
		live = append(live, "")
	}
	if len(live) == 0 {
		return nil, nil
	}

	infix := infixCorrupt
	if !dbExists {
		infix = infixOrphan
	}
	stamp, err := chooseStamp(fsys, dbPath, infix, live, now)
	if err != nil {
		return nil, &MoveAsideError{Path: dbPath, Reason: reason, Err: err}
	}
	done := &MoveAside{Reason: reason}
	dir := filepath.Dir(dbPath)
	fail := func(err error) (*MoveAside, error) {
		return nil, &MoveAsideError{Path: dbPath, Reason: reason, Moved: done.Files, Err: err}
	}
	for _, suf := range live {
		if suf == "" && len(done.Files) > 0 {
			// The sidecars' renames are durable before the database's.
			if err := fsys.SyncDir(dir); err != nil {
				return fail(err)
			}
		}
		from, to := dbPath+suf, movedName(dbPath, infix, stamp, suf)
		if err := fsys.RenameNoReplace(from, to); err != nil {
			return fail(err)
		}
		done.Files = append(done.Files, MovedFile{From: from, To: to})
	}
	if err := fsys.SyncDir(dir); err != nil {
		return fail(err)
	}
	return done, nil
}

// chooseStamp picks the stamp of the moved names. A damaged database whose
// sidecars were already moved by an interrupted move-aside joins that set:
// the newest unfinished stamp under which none of the live names is taken.
// Otherwise the stamp is now, with a ".N" counter when that second is taken.
//
// An unfinished set is recognised by its names only; if a healthy catalog
// replaced the damaged one before the move was finished (swamp recreating a
// zero-byte file), a later damaged catalog without sidecars would be filed
// under the old stamp. Open finishes an interrupted move at once when it
// sees one, so that needs a swamp run in between.
func chooseStamp(fsys fsx.FS, dbPath, infix string, live []string, now time.Time) (string, error) {
	free := func(stamp string) (bool, error) {
		for _, suf := range live {
			taken, err := fsx.Exists(fsys, movedName(dbPath, infix, stamp, suf))
			if err != nil || taken {
				return false, err
			}
		}
		return true, nil
	}

	if infix == infixCorrupt {
		unfinished, err := unfinishedStamps(fsys, dbPath)
		if err != nil {
			return "", err
		}
		for i := len(unfinished) - 1; i >= 0; i-- { // newest first
			if ok, err := free(unfinished[i]); err != nil {
				return "", err
			} else if ok {
				return unfinished[i], nil
			}
		}
	}

	base := now.UTC().Format(stampLayout)
	for n := 0; n < 1000; n++ {
		stamp := base
		if n > 0 {
			stamp = fmt.Sprintf("%s.%d", base, n)
		}
		if ok, err := free(stamp); err != nil {
			return "", err
		} else if ok {
			return stamp, nil
		}
	}
	return "", fmt.Errorf("no free moved-aside name for %s at %s", dbPath, base)
}

// unfinishedStamps lists, oldest first, the stamps of corrupt sets that have
// a moved sidecar but no moved database: a move-aside interrupted before its
// last rename.
func unfinishedStamps(fsys fsx.FS, dbPath string) ([]string, error) {
	ents, err := fsys.ReadDir(filepath.Dir(dbPath))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	re := regexp.MustCompile(`^` + regexp.QuoteMeta(filepath.Base(dbPath)+infixCorrupt) +
		`(\d{8}T\d{6}Z(?:\.\d+)?)(-wal|-shm|-journal)$`)
	seen := map[string]bool{}
	var stamps []string
	for _, e := range ents {
		m := re.FindStringSubmatch(e.Name())
		if m == nil || seen[m[1]] {
			continue
		}
		seen[m[1]] = true
		if ok, err := fsx.Exists(fsys, movedName(dbPath, infixCorrupt, m[1], "")); err != nil {
			return nil, err
		} else if !ok {
			stamps = append(stamps, m[1])
		}
	}
	sort.Strings(stamps)
	return stamps, nil
}
