package lock

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/swampj/swampj/fsx"
)

// WriteWindow bounds how long a live swamp leaves a lock file empty or
// partial: it creates the file and writes its JSON in the next call, and its
// heartbeat truncates and rewrites it (swamp-format §8). Both take milliseconds; an
// unparseable lock untouched for longer has no writer. The doctor waits this
// long before calling one dead; it is far shorter than the TTL, which is what
// Acquire waits, so a repair is not held up by a lock a power cut emptied.
const WriteWindow = 5 * time.Second

// InFlightWindow is newer swamp's rule for an empty or unreadable lock
// (swamp-format §13.3, file_lock.ts after swamp-club#2571): it is held while its mtime
// is within the acquirer's TTL (30 s by default), because "a live holder's
// file is briefly empty between create and write, and during each
// heartbeat rewrite", and stale after. A doctor that agrees with newer
// swamp judges with this window (JudgeWithin): a fresh empty lock is a
// writer at work, never damage. Acquire already waits this long.
const InFlightWindow = DefaultTTL

// Judgement is what one look at a lock file proves about its holder. It is
// the doctor's reading, stricter than Acquire's in one direction (a local
// pid that exists is alive whatever its age) and quicker in another (an
// unparseable file is dead after WriteWindow, not after a TTL).
type Judgement struct {
	Path  string
	Data  []byte
	Size  int64
	Mtime time.Time
	// Info is the parsed record; nil when the file is not a lock record.
	Info *Info
	// Dead: provably nobody holds it; removing it frees the lock.
	Dead bool
	// Ours: this process holds it (a repair judging under its own locks).
	Ours bool
	// InFlight: the file is empty, not a lock record or unreadable, and
	// younger than the window: a writer between its create and its write,
	// or mid-heartbeat. Never repaired; reported as work in progress.
	InFlight bool
	// Unreadable is why the file could not be read (EACCES), nil when it
	// was read.
	Unreadable error
	// Why says in words what was seen and why it is (not) dead.
	Why string
}

// Holder names a live holder for messages ("pid 4711 on host h").
func (j Judgement) Holder() string {
	if j.Info == nil {
		return "a writer between swamp's create and write"
	}
	return fmt.Sprintf("pid %d on host %s", j.Info.Pid, j.Info.Hostname)
}

// Judge reads the lock file at path and decides whether its holder is
// provably dead at now. missing is true (and the judgement empty) when there
// is no file. An empty, unparseable or unreadable file is in flight for
// WriteWindow; JudgeWithin takes the window (InFlightWindow: newer swamp's).
func Judge(fsys fsx.FS, path string, now time.Time) (j Judgement, missing bool, err error) {
	return JudgeWithin(fsys, path, now, WriteWindow)
}

// JudgeWithin is Judge with the window during which an empty, unparseable
// or unreadable lock file counts as a writer at work (InFlight) rather
// than dead. A lock record that parses is judged as Judge does, whatever
// other keys it has (newer swamp's skipping list) and whatever nonce it
// carries now (newer swamp re-keys a held lock through a .{uuid}.tmp
// beside it and a rename: a new nonce is the same live holder).
func JudgeWithin(fsys fsx.FS, path string, now time.Time, window time.Duration) (j Judgement, missing bool, err error) {
	fsys = fsx.OrReal(fsys)
	o, err := observe(fsys, path)
	if err != nil || o.missing {
		return Judgement{}, o.missing, err
	}
	return judge(path, o, now, hostname(), window), false, nil
}

func hostname() string {
	h, _ := os.Hostname()
	return h
}

func judge(path string, o observed, now time.Time, host string, window time.Duration) Judgement {
	j := Judgement{Path: path, Data: o.data, Size: int64(len(o.data)), Mtime: o.mtime, Info: o.info, Unreadable: o.unreadable}
	age := now.Sub(o.mtime).Round(time.Second)
	if o.info == nil {
		what := "zero bytes"
		switch {
		case o.unreadable != nil:
			what = fmt.Sprintf("a file that cannot be read (%v)", o.unreadable)
		case len(o.data) > 0:
			what = fmt.Sprintf("%d bytes that are not a lock record (%q)", len(o.data), short(o.data))
		}
		if now.Sub(o.mtime) <= window {
			j.InFlight = true
			j.Why = fmt.Sprintf("%s, written %s ago: a swamp writer may be between creating and writing it, or rewriting it in its heartbeat "+
				"(held while younger than %s)", what, age, window)
			return j
		}
		j.Dead = true
		j.Why = fmt.Sprintf("%s, untouched for %s (a crash or power cut between swamp's create and write); "+
			"swamp 06b6147 never removes such a file and waits on it until it times out (exit 75)", what, age)
		return j
	}
	i := o.info
	if heldHere(path, i.Nonce) {
		j.Ours = true
		j.Why = "held by this process"
		return j
	}
	if i.Hostname == host && host != "" {
		if i.Pid == os.Getpid() {
			j.Dead = true
			j.Why = fmt.Sprintf("names pid %d on this host, this very process, which does not hold it: left by an earlier process with the same pid", i.Pid)
			return j
		}
		if fsx.ProcessExists(i.Pid) {
			j.Why = fmt.Sprintf("held by pid %d on this host (alive)", i.Pid)
			if i.Expired(now) {
				j.Why += fmt.Sprintf(", not refreshed since %s: it may be stopped or hung; it is left alone", i.AcquiredAt.Format(time.RFC3339))
			}
			return j
		}
		j.Dead = true
		j.Why = fmt.Sprintf("names pid %d on this host (%s), which does not exist", i.Pid, i.Hostname)
		return j
	}
	// Another host: its pid cannot be probed. Dead only when neither the
	// record nor the file has been refreshed for a whole TTL past its
	// expiry (the heartbeat rewrites both every TTL/3).
	far := i.TTL() + max(i.TTL(), 30*time.Second)
	last := i.AcquiredAt
	if o.mtime.After(last) {
		last = o.mtime
	}
	if now.Sub(last) > far {
		j.Dead = true
		j.Why = fmt.Sprintf("held by pid %d on host %s, last refreshed %s ago with a TTL of %s: its holder stopped refreshing it long ago",
			i.Pid, i.Hostname, now.Sub(last).Round(time.Second), i.TTL())
		return j
	}
	j.Why = fmt.Sprintf("held by pid %d on host %s (another host; refreshed %s ago)", i.Pid, i.Hostname, now.Sub(last).Round(time.Second))
	return j
}

func short(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "…"
	}
	return string(b)
}

// StillDead re-reads path and reports whether it is still the file j judged
// dead (same bytes) and still dead at now: what a step checks right before
// it moves a dead lock away, so that a lock someone took in the meantime is
// never moved.
func StillDead(fsys fsx.FS, path string, want []byte, now time.Time) (bool, string, error) {
	return StillDeadWithin(fsys, path, want, now, WriteWindow)
}

// StillDeadWithin is StillDead judging with JudgeWithin's window. A lock
// re-keyed since it was judged (new nonce, new bytes) is "changed", never
// moved.
func StillDeadWithin(fsys fsx.FS, path string, want []byte, now time.Time, window time.Duration) (bool, string, error) {
	fsys = fsx.OrReal(fsys)
	j, missing, err := JudgeWithin(fsys, path, now, window)
	switch {
	case err != nil:
		return false, "", err
	case missing:
		return false, path + " is gone", nil
	case !bytes.Equal(j.Data, want):
		return false, fmt.Sprintf("%s changed since it was judged dead (now %s)", path, j.Why), nil
	case !j.Dead:
		return false, fmt.Sprintf("%s is no longer dead: %s", path, j.Why), nil
	}
	return true, "", nil
}

// Found is a swamp lock file on disk.
type Found struct {
	Path string
	// Scope is "global" (the datastore lock) or "model".
	Scope   string
	Type    string // model locks: normalised type
	ModelID string
}

// FindLockFiles lists every swamp lock file of a repo, parseable or not:
// the global locks ({base}/.datastore.lock solo; namespaced, 06b6147's
// {base}/.locks/{ns}.lock and newer swamp's {base}/{ns}/.datastore.lock,
// GlobalPaths) and the per-model locks {base}[/{ns}]/data/<type…>/<id>/.lock.
// Directories holding a regular `latest` are data items: their version
// directories are not listed (no lock lives there), which keeps the walk to
// the model level. Symlinks are not followed.
func FindLockFiles(fsys fsx.FS, base, ns string) ([]Found, error) {
	fsys = fsx.OrReal(fsys)
	return FindLockFilesListed(fsys, base, ns, fsys.ReadDir)
}

// FindLockFilesListed is FindLockFiles taking each directory's listing
// from list, so a caller that has just walked the data tree (the doctor)
// can hand over the listings it already holds; list falls back to reading
// the directory for the others. The result is FindLockFiles' for the same
// listings.
func FindLockFilesListed(fsys fsx.FS, base, ns string, list func(dir string) ([]fs.DirEntry, error)) ([]Found, error) {
	fsys = fsx.OrReal(fsys)
	var out []Found
	for _, g := range GlobalPaths(base, ns) {
		if fi, err := fsys.Lstat(g); err == nil && fi.Mode().IsRegular() {
			out = append(out, Found{Path: g, Scope: "global"})
		} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("inspecting %s: %w", g, err)
		}
	}
	root := filepath.Join(base, "data")
	if ns != "" {
		root = filepath.Join(base, ns, "data")
	}
	var walk func(dir string, segs []string) error
	walk = func(dir string, segs []string) error {
		ents, err := list(dir)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return fmt.Errorf("scanning for model locks in %s: %w", dir, err)
		}
		item := false
		for _, e := range ents {
			if e.Name() == "latest" && e.Type().IsRegular() {
				item = true
			}
		}
		for _, e := range ents {
			// The path is built only for what is entered or reported: an
			// item's versions are many.
			switch {
			case e.IsDir():
				if item && allDigits(e.Name()) || strings.HasPrefix(e.Name(), ".swampj-") {
					continue
				}
				if err := walk(filepath.Join(dir, e.Name()), append(segs[:len(segs):len(segs)], e.Name())); err != nil {
					return err
				}
			case e.Name() == modelLockName && e.Type().IsRegular() && len(segs) >= 2:
				out = append(out, Found{Path: filepath.Join(dir, e.Name()), Scope: "model", Type: strings.Join(segs[:len(segs)-1], "/"), ModelID: segs[len(segs)-1]})
			}
		}
		return nil
	}
	if err := walk(root, nil); err != nil {
		return out, err
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Path < out[b].Path })
	return out, nil
}

// ModelLockIn is the per-model lock file FindLockFiles reports in a
// directory with these entries, when the directory is at least two levels
// below the model lock tree's root (base/data, base/ns/data) and its
// listing has a regular .lock; "" otherwise. A walker uses it to judge a
// model's lock as soon as it lists the model directory, before it looks
// at the model's items; FindLockFiles (or FindLockFilesListed) still
// decides which lock files there are.
func ModelLockIn(base, ns, dir string, entries []fs.DirEntry) string {
	root := filepath.Join(base, "data")
	if ns != "" {
		root = filepath.Join(base, ns, "data")
	}
	rel, err := filepath.Rel(root, dir)
	if err != nil || rel == "." || !strings.Contains(rel, string(filepath.Separator)) || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return ""
	}
	for _, e := range entries {
		if e.Name() == modelLockName && e.Type().IsRegular() {
			return filepath.Join(dir, e.Name())
		}
	}
	return ""
}

func allDigits(s string) bool {
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
