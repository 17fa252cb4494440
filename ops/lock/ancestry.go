package lock

// Nested swamp processes (swamp-format §13.5). A swamp that holds a
// per-model lock may run a shell step that starts another swamp, or
// swampj; the child must work under its ancestor's lock, not wait on it
// (the ancestor keeps it until the child exits, so waiting would only time
// out), and must never take over a lock that is neither its ancestor's nor
// free. Three environment variables say which locks are an ancestor's:
//
//   - SWAMP_LOCK_HOLDER_PID (both versions): the pid of the nearest swamp
//     above that took a per-model lock. At 06b6147 the only signal, and
//     only its structural drain reads it.
//   - SWAMP_LOCK_ANCESTOR_PIDS (newer): every swamp above, comma-separated,
//     oldest first, at most 64.
//   - SWAMP_LOCK_HOLDER_TOKENS (newer): "<pid>:<nonce>+<nonce>,…", the
//     nonces of the locks held for the run that started this process.
//
// Ancestry.Relation is newer swamp's lockRelation
// (src/domain/datastore/lock_holder_marker.ts @ cda6d504), which also
// covers 06b6147's variable: a handed-down nonce is the ancestor's
// whoever holds it and wherever; otherwise a lock whose pid is an
// ancestor's, taken on this host (or naming no host), is the ancestor's,
// unless that ancestor listed the nonces it holds for this run and this
// one is not among them (it holds it for another run: wait on it).

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/swampj/swampj/fsx"
)

const (
	// EnvAncestorPids lists every swamp process above this one.
	EnvAncestorPids = "SWAMP_LOCK_ANCESTOR_PIDS"
	// EnvHolderTokens lists the nonces of the locks held for this run.
	EnvHolderTokens = "SWAMP_LOCK_HOLDER_TOKENS"
	// MaxAncestors is how many ancestors (and token entries) are kept:
	// the newest (MAX_LOCK_ANCESTORS).
	MaxAncestors = 64
)

// noncePattern is LOCK_NONCE_PATTERN: anything else in a tokens entry is
// dropped. Compiled on first use: `{1,128}` is a 100 KiB program, which
// every swampj process compiled at init, --version included.
var noncePattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9-]{1,128}$`) })

// Relation is how a per-model lock relates to this process.
type Relation int

const (
	// Other: held by anything else; waited on.
	Other Relation = iota
	// Ancestor: held for the run that started this process; used as it
	// is, never waited on, taken over or removed.
	Ancestor
	// AncestorOtherRun: held by a swamp above this process, but for
	// another run or step of it; waited on.
	AncestorOtherRun
)

func (r Relation) String() string {
	switch r {
	case Ancestor:
		return "ancestor"
	case AncestorOtherRun:
		return "ancestor-other-run"
	}
	return "other"
}

// Ancestry is what this process inherited: the swamp processes above it
// and the lock nonces handed down to it.
type Ancestry struct {
	self   int
	host   string
	pids   map[int]bool
	chain  []int                   // oldest first, without self
	tokens map[int]map[string]bool // pid → nonces listed for it
	nonces map[string]bool         // every listed nonce
}

// AncestryFromEnv reads the three variables through env (nil: the process
// environment), for this process on this host.
func AncestryFromEnv(env func(string) string) Ancestry {
	if env == nil {
		env = os.Getenv
	}
	host, _ := os.Hostname()
	return NewAncestry(env(EnvHolderPid), env(EnvAncestorPids), env(EnvHolderTokens), os.Getpid(), host)
}

// NewAncestry parses the variables' values for process self on host, as
// swamp does: the chain is the ancestor list (its newest 64) plus the
// holder pid, malformed entries dropped, duplicates and self removed, the
// newest 64 kept; tokens entries with a malformed pid are dropped, as are
// malformed nonces, repeated pids merge.
func NewAncestry(holderPid, ancestorPids, holderTokens string, self int, host string) Ancestry {
	a := Ancestry{self: self, host: host, pids: map[int]bool{}, tokens: map[int]map[string]bool{}, nonces: map[string]bool{}}
	raw := strings.Split(ancestorPids, ",")
	if len(raw) > MaxAncestors {
		raw = raw[len(raw)-MaxAncestors:]
	}
	raw = append(raw, holderPid)
	seen := map[int]bool{self: true}
	for _, e := range raw {
		if pid, ok := parsePid(e); ok && !seen[pid] {
			seen[pid] = true
			a.chain = append(a.chain, pid)
		}
	}
	if len(a.chain) > MaxAncestors {
		a.chain = a.chain[len(a.chain)-MaxAncestors:]
	}
	for _, pid := range a.chain {
		a.pids[pid] = true
	}
	var order []int
	for _, entry := range strings.Split(holderTokens, ",") {
		i := strings.IndexByte(entry, ':')
		if i < 0 {
			continue
		}
		pid, ok := parsePid(entry[:i])
		if !ok {
			continue
		}
		set := a.tokens[pid]
		if set == nil {
			set = map[string]bool{}
		}
		for _, n := range strings.Split(entry[i+1:], "+") {
			if noncePattern().MatchString(n) {
				set[n] = true
			}
		}
		// a repeated pid counts at its newest position
		for k, p := range order {
			if p == pid {
				order = append(order[:k], order[k+1:]...)
				break
			}
		}
		order = append(order, pid)
		a.tokens[pid] = set
	}
	if len(order) > MaxAncestors {
		for _, pid := range order[:len(order)-MaxAncestors] {
			delete(a.tokens, pid)
		}
	}
	for _, set := range a.tokens {
		for n := range set {
			a.nonces[n] = true
		}
	}
	return a
}

// parsePid is swamp's parsePid: trimmed, ^[1-9][0-9]*$, a safe integer.
func parsePid(s string) (int, bool) {
	s = strings.TrimSpace(s)
	if s == "" || s[0] < '1' || s[0] > '9' {
		return 0, false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n > 1<<53-1 {
		return 0, false
	}
	return int(n), true
}

// Empty reports whether nothing was inherited: every lock is Other.
func (a Ancestry) Empty() bool { return len(a.chain) == 0 && len(a.nonces) == 0 }

// Pids are the ancestors, oldest first.
func (a Ancestry) Pids() []int { return append([]int(nil), a.chain...) }

// Relation is lockRelation for the lock record i. An empty hostname is
// taken as none recorded (swamp's lock files always carry one).
func (a Ancestry) Relation(i Info) Relation {
	if i.Nonce != "" && a.nonces[i.Nonce] {
		return Ancestor
	}
	if !a.pids[i.Pid] || (i.Hostname != "" && i.Hostname != a.host) {
		return Other
	}
	if _, listed := a.tokens[i.Pid]; !listed || i.Nonce == "" {
		return Ancestor
	}
	return AncestorOtherRun
}

// Lends reports whether this process may work under the lock i as its
// ancestor's: Relation is Ancestor and, when the match is on the pid
// alone, that process still exists (a child whose ancestor died holds
// nothing through it; the lock is then stale by its dead pid).
func (a Ancestry) Lends(i Info) bool {
	switch {
	case a.Relation(i) != Ancestor:
		return false
	case i.Nonce != "" && a.nonces[i.Nonce]:
		return true
	}
	return fsx.ProcessExists(i.Pid)
}
