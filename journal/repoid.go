package journal

// A journal belongs to its repo. Its intents name the repo's paths, so a
// journal copied into another repo (by hand, by a backup restored beside
// the original, by someone who wants swampj to act elsewhere) must never
// have its open intents acted on there. The journal records, when it is
// created, which repo it was made for: the repo directory's resolved path
// and the inode of the directory it lives in (.swamp). Opened where both differ and with open intents, it is
// refused as damaged (CorruptError: set aside by a command that can write,
// never acted on: an inspection only reads it), with a message that says
// whose it is. A journal with nothing open that is found in another repo
// (a repo copied while idle) becomes this repo's at its first writing open:
// whatever it records from then on names this repo's paths.
// Either one matching is enough: a repo reached through a symlink, or
// moved, keeps its inode; a repo restored in place keeps its path; a
// power-cut image mounted where it was written keeps both. Nothing is
// refused while no intent is open: there is nothing to act on.
//
// This is the journal's own check. What stops any step from acting
// outside the repo, whatever the journal says, is the trust boundary
// (fsx/confine.go), which refuses each path.

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	bolt "go.etcd.io/bbolt"
)

var keyRepo = []byte("repo")

// repoDirOf is the repo directory of the journal at path
// ({repo}/.swamp/_journal.db).
func repoDirOf(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	return filepath.Dir(filepath.Dir(path))
}

// repoIdentity is "ino path": the inode of the directory the journal at
// path is in, and its repo directory's resolved path.
func repoIdentity(path string) string {
	dir := repoDirOf(path)
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	var ino uint64
	if fi, err := os.Stat(filepath.Dir(path)); err == nil {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			ino = uint64(st.Ino)
		}
	}
	return strconv.FormatUint(ino, 10) + " " + dir
}

// foreignRepo returns the repo a journal at path with meta bucket m was
// made for when it is another one and tx holds open intents ("" when it
// belongs here, or records nothing).
func foreignRepo(tx *bolt.Tx, m *bolt.Bucket, path string) string {
	rec := string(m.Get(keyRepo))
	if rec == "" {
		return ""
	}
	if o := tx.Bucket(bucketOpen); o == nil {
		return ""
	} else if k, _ := o.Cursor().First(); k == nil {
		return ""
	}
	recIno, recDir, _ := strings.Cut(rec, " ")
	hereIno, hereDir, _ := strings.Cut(repoIdentity(path), " ")
	if recDir == hereDir || (recIno == hereIno && recIno != "0") {
		return ""
	}
	return recDir
}

// restampRepo records this repo as the journal's when it records another
// and has no open intent (foreignRepo let it open), or records none yet (a
// journal made before repos were recorded). One commit, only then.
func restampRepo(db *bolt.DB, path string) error {
	here := repoIdentity(path)
	var stale bool
	if err := db.View(func(tx *bolt.Tx) error {
		m := tx.Bucket(bucketMeta)
		stale = m != nil && string(m.Get(keyRepo)) != here
		return nil
	}); err != nil || !stale {
		return err
	}
	return db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(keyRepo, []byte(here)) })
}

func foreignReason(made string) string {
	return fmt.Sprintf("it was made for the repo at %s, not this one (copied from another repo?): its open intents name that repo's paths and are never acted on here", made)
}
