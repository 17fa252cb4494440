package doctor

// Writes in flight. swamp streams a version's raw, then writes
// metadata.yaml, then `latest`, all under the model's lock (swamp-format §8). While a live
// process holds that lock, a version above the committed `latest` that is
// not readable yet is a write in progress, not damage: the doctor reports it
// as such (InFlight), counts it as passing, and never quarantines it.
// Once the holder is dead the lock is dead (locks.go) and the version
// is judged like any other. Versions at or below `latest` are committed, so
// damage there is damage whoever holds the lock (the repair then skips the
// model while its lock is busy).

import (
	"fmt"

	"github.com/swampj/swampj/ops/store"
)

// InFlight is a version a live writer is still writing.
type InFlight struct {
	Item    string `json:"item"`
	Version int64  `json:"version"`
	Path    string `json:"path"`
	Lock    string `json:"lock"`
	// Pid is the lock holder's pid (0: a holder between swamp's create and
	// write of the lock file).
	Pid     int    `json:"pid"`
	Message string `json:"message"`
}

// committedLatest is the version `latest` commits: its number when it is a
// file or symlink swamp parsed, else 0 (absent or unparsable: swamp falls
// back to the highest directory, which may be the write in flight).
func committedLatest(st *store.ItemState) int64 {
	switch st.Pointer.Rule {
	case store.PointerFile, store.PointerSymlink:
		return st.Pointer.Version
	}
	return 0
}

// liveHolder is the judgement of u's model lock when another live process
// holds it (ok=false: no lock, a dead one, or ours).
func (s *survey) liveHolder(u *unit) (pid int, ok bool) {
	if u.lockPath == "" {
		return 0, false
	}
	j, found := s.locks[u.lockPath]
	if !found || j.Dead || j.Ours {
		return 0, false
	}
	if j.Info != nil {
		pid = j.Info.Pid
	}
	return pid, true
}

// isInFlight reports whether v is a write in progress; it records it.
func (s *survey) isInFlight(u *unit, di *surveyItem, v *store.Version) bool {
	pid, live := s.liveHolder(u)
	if !live || v.Readable() || v.Number <= committedLatest(di.st) {
		return false
	}
	holder := s.locks[u.lockPath].Holder()
	s.inFlight = append(s.inFlight, InFlight{Item: di.item.Key(), Version: v.Number, Path: v.Dir, Lock: u.lockPath, Pid: pid,
		Message: fmt.Sprintf("version %d of %s is in progress (model locked by %s): %s; it is left alone while that lock is live",
			v.Number, di.item.Key(), holder, problemMessages(v.Problems))})
	return true
}
