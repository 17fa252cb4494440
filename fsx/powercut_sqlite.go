package fsx

import (
	"errors"
	"fmt"
	"io/fs"
	"sort"
)

// The power-cut model of a SQLite database, whose writes go through SQLite's
// own file layer and not through fsx. A commit at synchronous=FULL is
// durable when it returns (its WAL is fsynced), and the model leaves it
// alone. A commit at synchronous=NORMAL is not: its frames sit in the page
// cache until the WAL is next fsynced (a later FULL commit of any
// connection, a checkpoint, or a sync of the -wal file), and a power cut
// before that loses it, and every commit after it, with the log's prefix
// up to the last sync kept (SQLite's recovery stops at the first frame
// whose checksum does not follow).
//
// The writer tells the model both moments: NoteSQLiteUnsynced before a
// commit that will not be synced, NoteSQLiteSynced after anything that
// made every commit so far durable. At the first unsynced commit since the
// last sync the model copies the database and its -wal as they are (what a
// power cut from then on leaves); a sync drops the copy; PowerCut writes
// it back and removes the -shm (SQLite rebuilds it from the log). This is
// the pessimistic end: a real cut may keep some of the unsynced commits,
// never one after a lost one.

// sqliteNoter is implemented by the FS values that keep the model (Fault)
// and by the wrappers that pass it on.
type sqliteNoter interface {
	noteSQLite(dbPath string, synced bool)
}

// NoteSQLiteUnsynced tells fsys's power-cut model, if it keeps one, that
// the SQLite database at dbPath is about to commit without syncing its
// WAL. A no-op on the real disk.
func NoteSQLiteUnsynced(fsys FS, dbPath string) { noteSQLite(fsys, dbPath, false) }

// NoteSQLiteSynced tells fsys's power-cut model, if it keeps one, that
// every commit of the database at dbPath so far is durable. A no-op on the
// real disk.
func NoteSQLiteSynced(fsys FS, dbPath string) { noteSQLite(fsys, dbPath, true) }

func noteSQLite(fsys FS, dbPath string, synced bool) {
	if n, ok := fsys.(sqliteNoter); ok {
		n.noteSQLite(dbPath, synced)
	}
}

func (k *killFS) noteSQLite(dbPath string, synced bool) { noteSQLite(k.FS, dbPath, synced) }

// sqliteCopy is a database's files as of its last durable commit; nil
// content: the file did not exist.
type sqliteCopy struct {
	db, wal []byte
}

func (f *Fault) noteSQLite(dbPath string, synced bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dur == nil {
		return
	}
	if synced {
		delete(f.dur.sqlite, dbPath)
		return
	}
	if _, ok := f.dur.sqlite[dbPath]; ok {
		return // the copy of the last durable state stands
	}
	c := &sqliteCopy{}
	c.db, _ = f.Inner.ReadFile(dbPath)
	c.wal, _ = f.Inner.ReadFile(dbPath + "-wal")
	if f.dur.sqlite == nil {
		f.dur.sqlite = map[string]*sqliteCopy{}
	}
	f.dur.sqlite[dbPath] = c
}

// UnsyncedSQLite lists the databases with commits a power cut would lose.
func (f *Fault) UnsyncedSQLite() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dur == nil {
		return nil
	}
	var out []string
	for p := range f.dur.sqlite {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// cutSQLite puts every database with unsynced commits back to its copy.
// Called by PowerCut with f.mu held, after the tree's own changes are
// undone: a database whose file is gone by then (its creation was lost)
// is left gone.
func (f *Fault) cutSQLite() ([]string, error) {
	var lost []string
	paths := make([]string, 0, len(f.dur.sqlite))
	for p := range f.dur.sqlite {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		c := f.dur.sqlite[p]
		if ok, _ := Exists(f.Inner, p); !ok {
			continue
		}
		for _, part := range []struct {
			name string
			data []byte
		}{{p, c.db}, {p + "-wal", c.wal}} {
			if err := f.Inner.Remove(part.name); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return lost, err
			}
			if part.data == nil {
				continue
			}
			if err := rewrite(f.Inner, part.name, part.data); err != nil {
				return lost, err
			}
		}
		if err := f.Inner.Remove(p + "-shm"); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return lost, err
		}
		lost = append(lost, fmt.Sprintf("unsynced commits of %s lost", p))
	}
	f.dur.sqlite = nil
	return lost, nil
}
