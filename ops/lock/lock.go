// Package lock is swamp's advisory lock files (swamp-format §8): the
// global datastore lock and the per-model locks, in swamp's exact JSON, with
// swamp's acquire / heartbeat / release protocol, made stricter where swamp
// can lose or wedge a lock:
//
//   - a lock file is never empty or partial: it is written to a temp file
//     and hard-linked into place (swamp-format §9.25), and refreshed by atomic replace;
//   - a lock whose pid is missing locally is stale only if it was taken on
//     this host (swamp ignores the hostname, swamp-format §9.20);
//   - an empty or unparseable lock older than the TTL is stale (swamp waits
//     on it forever, swamp-format §9.25).
//
// Newer swamp (swamp-format §13.2–13.5) is honoured too, so that either
// swamp version may share a datastore with swampj: an empty or unreadable
// lock is held while younger than the TTL (JudgeWithin, InFlightWindow);
// lock records may carry a skipping list and change their nonce during a
// hold; a namespaced datastore has two global locks, both taken
// (global.go); a swamp that started this process lends it its per-model
// locks (ancestry.go).
//
// All disk access goes through an fsx.FS.
package lock

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/swampj/swampj/ops/jsfmt"
)

// Defaults from swamp (datastore_config.ts:99-102, file_lock.ts:40).
const (
	DefaultTimeout = 60 * time.Second
	DefaultTTL     = 30 * time.Second
	// EnvTimeout overrides the wait; callers read it with TimeoutFromEnv.
	EnvTimeout = "SWAMP_LOCK_TIMEOUT_MS"
	// EnvHolderPid names a process whose per-model locks a drain ignores
	// (a parent swamp that lent its locks to this process).
	EnvHolderPid = "SWAMP_LOCK_HOLDER_PID"

	globalSoloName = ".datastore.lock"
	locksDirName   = ".locks"
	modelLockName  = ".lock"
)

// GlobalPath is the global lock: {base}/.datastore.lock in solo mode,
// {base}/.locks/{ns}.lock when namespaced (swamp-format §8). base is the un-namespaced
// datastore base.
func GlobalPath(base, ns string) string {
	if ns == "" {
		return filepath.Join(base, globalSoloName)
	}
	return filepath.Join(base, locksDirName, ns+".lock")
}

// ModelPath is the per-model lock {base}[/{ns}]/data/{type}/{modelId}/.lock
// (swamp-format §8, lock.ts:41-48); typeNorm is the normalised, "/"-separated type.
func ModelPath(base, ns, typeNorm, modelID string) string {
	parts := []string{base}
	if ns != "" {
		parts = append(parts, ns)
	}
	parts = append(parts, "data", filepath.FromSlash(typeNorm), modelID, modelLockName)
	return filepath.Join(parts...)
}

// TimeoutFromEnv returns SWAMP_LOCK_TIMEOUT_MS when it is a positive
// integer, else DefaultTimeout; invalid values are ignored, as swamp does.
func TimeoutFromEnv(env func(string) string) time.Duration {
	if env == nil {
		env = os.Getenv
	}
	if ms, err := strconv.ParseInt(env(EnvTimeout), 10, 64); err == nil && ms > 0 {
		return time.Duration(ms) * time.Millisecond
	}
	return DefaultTimeout
}

// HolderPidFromEnv returns SWAMP_LOCK_HOLDER_PID, or 0 when unset/invalid.
func HolderPidFromEnv(env func(string) string) int {
	if env == nil {
		env = os.Getenv
	}
	pid, err := strconv.Atoi(env(EnvHolderPid))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}

// Info is the content of a lock file (file_lock.ts:48-59).
type Info struct {
	Holder     string    // "{user}@{hostname}"
	Hostname   string    // host that took the lock
	Pid        int       // process that took the lock
	AcquiredAt time.Time // last refresh (the heartbeat rewrites it)
	TTLMs      int64     // validity after AcquiredAt, in milliseconds
	Nonce      string    // random UUID, fixed for one acquisition
}

// TTL is TTLMs as a duration.
func (i Info) TTL() time.Duration { return time.Duration(i.TTLMs) * time.Millisecond }

// Expired reports now − acquiredAt > ttlMs, swamp's TTL test.
func (i Info) Expired(now time.Time) bool { return now.Sub(i.AcquiredAt) > i.TTL() }

// Encode is JSON.stringify(info, null, 2): two-space indent, keys holder,
// hostname, pid, acquiredAt, ttlMs, nonce, and no trailing newline.
func (i Info) Encode() []byte {
	var b bytes.Buffer
	b.WriteString("{\n")
	b.WriteString(`  "holder": ` + jsfmt.Quote(i.Holder) + ",\n")
	b.WriteString(`  "hostname": ` + jsfmt.Quote(i.Hostname) + ",\n")
	b.WriteString(`  "pid": ` + strconv.Itoa(i.Pid) + ",\n")
	b.WriteString(`  "acquiredAt": ` + jsfmt.Quote(jsfmt.ISOString(i.AcquiredAt)) + ",\n")
	b.WriteString(`  "ttlMs": ` + strconv.FormatInt(i.TTLMs, 10) + ",\n")
	b.WriteString(`  "nonce": ` + jsfmt.Quote(i.Nonce) + "\n")
	b.WriteString("}")
	return b.Bytes()
}

// ErrUnparseable marks lock content that is not a usable lock record: empty,
// truncated, not JSON, or missing pid, acquiredAt, ttlMs or nonce.
var ErrUnparseable = errors.New("lock file is empty or not a lock record")

// DecodeInfo parses lock file content. holder and hostname may be absent;
// pid, acquiredAt (ISO 8601), ttlMs and nonce are required, since staleness
// cannot be judged without them.
func DecodeInfo(data []byte) (Info, error) {
	var raw struct {
		Holder     string       `json:"holder"`
		Hostname   string       `json:"hostname"`
		Pid        *json.Number `json:"pid"`
		AcquiredAt *string      `json:"acquiredAt"`
		TTLMs      *json.Number `json:"ttlMs"`
		Nonce      *string      `json:"nonce"`
	}
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return Info{}, ErrUnparseable
	}
	if err := json.Unmarshal(trimmed, &raw); err != nil {
		return Info{}, fmt.Errorf("%w: %v", ErrUnparseable, err)
	}
	if raw.Pid == nil || raw.AcquiredAt == nil || raw.TTLMs == nil || raw.Nonce == nil {
		return Info{}, fmt.Errorf("%w: missing pid, acquiredAt, ttlMs or nonce", ErrUnparseable)
	}
	pid, err := raw.Pid.Int64()
	if err != nil {
		return Info{}, fmt.Errorf("%w: pid: %v", ErrUnparseable, err)
	}
	ttl, err := raw.TTLMs.Int64()
	if err != nil {
		return Info{}, fmt.Errorf("%w: ttlMs: %v", ErrUnparseable, err)
	}
	at, err := time.Parse(time.RFC3339Nano, *raw.AcquiredAt)
	if err != nil {
		return Info{}, fmt.Errorf("%w: acquiredAt: %v", ErrUnparseable, err)
	}
	return Info{Holder: raw.Holder, Hostname: raw.Hostname, Pid: int(pid), AcquiredAt: at, TTLMs: ttl, Nonce: *raw.Nonce}, nil
}
