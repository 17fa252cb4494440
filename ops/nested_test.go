package ops_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/doctor"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/lock"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/ops/write"
	swampjrecover "github.com/swampj/swampj/recover"
)

// Nested runs (swamp-format §13.5): a swampj started by a swamp
// process that holds a per-model lock (a shell step of that model) works
// under that lock as swamp's own child would, under either version's
// variables — 06b6147's SWAMP_LOCK_HOLDER_PID, newer swamp's
// SWAMP_LOCK_ANCESTOR_PIDS with SWAMP_LOCK_HOLDER_TOKENS — and never
// writes or removes it. With a token naming another run of that process,
// or no variables at all, the lock is someone else's: it waits, then times
// out.

const nestedNonce = "2c5e9f0a-8b1d-4e7c-9a36-5f0d1e2b3c4d" // dlRecord's

// nestedEnvs are the variables of each case for a holder pid; lends says
// whether the lock is the child's to work under.
func nestedEnvs(pid int) []struct {
	name  string
	env   map[string]string
	lends bool
} {
	return []struct {
		name  string
		env   map[string]string
		lends bool
	}{
		{"06b6147 SWAMP_LOCK_HOLDER_PID", map[string]string{lock.EnvHolderPid: fmt.Sprint(pid)}, true},
		{"newer ANCESTOR_PIDS and HOLDER_TOKENS", map[string]string{lock.EnvAncestorPids: fmt.Sprint(pid),
			lock.EnvHolderTokens: fmt.Sprintf("%d:%s", pid, nestedNonce)}, true},
		{"a token of another run", map[string]string{lock.EnvAncestorPids: fmt.Sprint(pid),
			lock.EnvHolderTokens: fmt.Sprintf("%d:%s", pid, "0b0b0b0b-1111-4222-8333-444444444444")}, false},
		{"no variables", map[string]string{}, false},
	}
}

func nestedSetenv(t *testing.T, env map[string]string) {
	for _, k := range []string{lock.EnvHolderPid, lock.EnvAncestorPids, lock.EnvHolderTokens} {
		t.Setenv(k, env[k]) // every case sets all three ("" is unset for swamp's parser)
	}
}

func TestNestedWriteWorksUnderTheAncestorsLock(t *testing.T) {
	pid := dlLive(t)
	for _, tc := range nestedEnvs(pid) {
		t.Run(tc.name, func(t *testing.T) {
			dir := apiRepo(t)
			r := migLoad(t, dir)
			lp := lock.ModelPath(r.Base, "", "command/shell", "m1")
			rec := dlRecord(pid)
			dlPlant(t, lp, rec, 0)
			nestedSetenv(t, tc.env)
			a, _ := repo.ParseAddress("command/shell/m1/result")
			_, err := write.WriteVersions(context.Background(), r, []write.VersionWrite{{Address: a, Content: strings.NewReader(`{"v":2}`)}}, write.WriteOptions{Common: host.Common{SwampLockTimeout: 300 * time.Millisecond}})
			if tc.lends && err != nil {
				t.Fatalf("a write under its ancestor's lock must go on: %v", err)
			}
			if !tc.lends && !errors.Is(err, lock.ErrTimeout) {
				t.Fatalf("a write under someone else's lock must wait and time out, got %v", err)
			}
			if got, err := os.ReadFile(lp); err != nil || !bytes.Equal(got, rec) {
				t.Fatalf("the ancestor's lock must be left as it is: %q %v", got, err)
			}
		})
	}
}

func TestNestedDoctorRepairWorksUnderTheAncestorsLock(t *testing.T) {
	pid := dlLive(t)
	for _, tc := range nestedEnvs(pid) {
		t.Run(tc.name, func(t *testing.T) {
			r := drBuild(t, t.TempDir(), drSpec{items: []drItem{dr3955()}})
			lp := dlModelLock(r, drModel)
			rec := dlRecord(pid)
			dlPlant(t, lp, rec, 0)
			nestedSetenv(t, tc.env)
			rep, err := doctor.Run(context.Background(), r, doctor.Options{Common: host.Common{JournalLockTimeout: 300 * time.Millisecond, FS: fsx.Real()}, Repair: true, Confirm: true, Now: drNow})
			if err != nil {
				t.Fatal(err)
			}
			latest := drRead(t, filepath.Join(drItemDir(r, "result"), "latest"))
			if tc.lends && (rep.IntentID == 0 || latest != "3") {
				t.Fatalf("the repair under its ancestor's lock must repair the item: intent %d, latest %q, findings %+v", rep.IntentID, latest, rep.Findings)
			}
			if !tc.lends && rep.IntentID != 0 {
				t.Fatalf("the repair must skip a model someone else holds: intent %d", rep.IntentID)
			}
			if got, err := os.ReadFile(lp); err != nil || !bytes.Equal(got, rec) {
				t.Fatalf("the ancestor's lock must be left as it is: %q %v", got, err)
			}
		})
	}
}

// A write interrupted after its intent was journaled is finished by
// recovery under its model's lock: an ancestor's is borrowed, anyone
// else's waited on.
func TestNestedRecoveryWorksUnderTheAncestorsLock(t *testing.T) {
	pid := dlLive(t)
	for _, tc := range nestedEnvs(pid) {
		t.Run(tc.name, func(t *testing.T) {
			dir := apiRepo(t)
			r := migLoad(t, dir)
			a, _ := repo.ParseAddress("command/shell/m1/result")
			clean := fsx.NewFault(fsx.Real())
			probe := apiRepo(t)
			if _, err := write.WriteVersions(context.Background(), migLoad(t, probe), []write.VersionWrite{{Address: a, Content: strings.NewReader(`{"v":2}`)}}, write.WriteOptions{Common: host.Common{SwampLockTimeout: time.Second, FS: clean}}); err != nil {
				t.Fatal(err)
			}
			cut := migOpIndex(clean, "failpoint:journal.begin") + 2
			_, err := write.WriteVersions(context.Background(), r, []write.VersionWrite{{Address: a, Content: strings.NewReader(`{"v":2}`)}}, write.WriteOptions{Common: host.Common{SwampLockTimeout: time.Second, FS: fsx.NewFault(fsx.Real()).CrashAfter(cut)}})
			if !fsx.IsCrash(err) {
				t.Fatalf("want a crash at cut %d, got %v", cut, err)
			}
			lp := lock.ModelPath(r.Base, "", "command/shell", "m1")
			rec := dlRecord(pid)
			dlPlant(t, lp, rec, 0) // the crashed writer's lock, now the ancestor's
			nestedSetenv(t, tc.env)
			_, err = swampjrecover.Run(context.Background(), dir, swampjrecover.Options{Common: host.Common{JournalLockTimeout: time.Second, SwampLockTimeout: 300 * time.Millisecond}})
			if tc.lends && err != nil {
				t.Fatalf("recovery under its ancestor's lock must go on: %v", err)
			}
			if !tc.lends && !errors.Is(err, lock.ErrTimeout) {
				t.Fatalf("recovery under someone else's lock must wait and time out, got %v", err)
			}
			if open := migOpenIntents(t, dir); (open == 0) != tc.lends {
				t.Fatalf("%d intents open afterwards", open)
			}
			if got, err := os.ReadFile(lp); err != nil || !bytes.Equal(got, rec) {
				t.Fatalf("the ancestor's lock must be left as it is: %q %v", got, err)
			}
		})
	}
}
