package ops_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/catalogsync"
	"github.com/swampj/swampj/ops/catalogwriters"
	"github.com/swampj/swampj/ops/doctor"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/ops/write"
)

// Writer tokens for a datastore shared between checkouts (swamp-format §13.7): a
// swampj data write and a doctor repair into a datastore outside the
// repo's .swamp/ rewrite swampj's token under .catalog-writers/ after the
// change, so newer swamp's catalogs in the other checkouts invalidate
// themselves. A catalog rebuild writes none: swamp's design says a
// backfill never does (it changes no data).

// wtTokens is every token file of the shared datastore, by name.
func wtTokens(t *testing.T, shared string) map[string]string {
	t.Helper()
	out := map[string]string{}
	ents, err := os.ReadDir(filepath.Join(shared, catalogwriters.DirName))
	if os.IsNotExist(err) {
		return out
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".tmp") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(shared, catalogwriters.DirName, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = string(b)
	}
	return out
}

func TestWriterTokenAfterWriteAndRepairNotRebuild(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	shared := filepath.Join(root, "shared")
	dir := filepath.Join(root, "a")
	if err := os.MkdirAll(filepath.Join(dir, ".swamp"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := "swampVersion: test\ndatastore:\n  type: filesystem\n  path: " + shared + "\n"
	if err := os.WriteFile(filepath.Join(dir, ".swamp.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := repo.Load(fsx.Real(), dir, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if !catalogwriters.Shared(r) {
		t.Fatalf("a datastore at %s must count as shared", shared)
	}
	a, _ := repo.ParseAddress("command/shell/m1/result")
	write := func(body string) {
		t.Helper()
		if _, err := write.WriteVersions(ctx, r, []write.VersionWrite{{Address: a, Content: strings.NewReader(body)}}, write.WriteOptions{Common: host.Common{SwampLockTimeout: time.Second}}); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"v":1}`)
	first := wtTokens(t, shared)
	if len(first) != 1 {
		t.Fatalf("after a write: tokens %v, want swampj's one", first)
	}
	write(`{"v":2}`)
	second := wtTokens(t, shared)
	for id, tok := range first {
		if second[id] == "" || second[id] == tok {
			t.Fatalf("the token did not change with the second write: %v -> %v", first, second)
		}
	}

	// Damage version 2 (what #3955's power cut leaves) and repair it.
	md := filepath.Join(r.DataRoot, "command", "shell", "m1", "result", "2", "metadata.yaml")
	if err := os.WriteFile(md, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := doctor.Run(ctx, r, doctor.Options{Common: host.Common{JournalLockTimeout: time.Second}, Repair: true, Confirm: true})
	if err != nil || rep.IntentID == 0 {
		t.Fatalf("repair: %v %+v", err, rep)
	}
	third := wtTokens(t, shared)
	for id, tok := range second {
		if third[id] == "" || third[id] == tok {
			t.Fatalf("the token did not change with the repair: %v -> %v", second, third)
		}
	}

	if _, err := catalogsync.Rebuild(ctx, r, catalogsync.Options{Common: host.Common{JournalLockTimeout: time.Second}, Confirm: true}); err != nil {
		t.Fatal(err)
	}
	if got := wtTokens(t, shared); len(got) != len(third) || got[firstKey(third)] != third[firstKey(third)] {
		t.Fatalf("a rebuild must write no token (swamp's backfill does not): %v -> %v", third, got)
	}
}

func firstKey(m map[string]string) string {
	for k := range m {
		return k
	}
	return ""
}
