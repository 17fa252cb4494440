package catalogwriters

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/repo"
)

// checkout makes a repo at dir whose datastore block is yaml ("" for the
// default, repo-local one) and loads it.
func checkout(t *testing.T, dir, yaml string) *repo.Repo {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, ".swamp"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".swamp.yaml"), []byte("swampVersion: test\n"+yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := repo.Load(nil, dir, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// foreignTokens is swamp's SharedDatastoreWriteTracker.foreignTokens: every
// other writer's token, names ending in .tmp skipped, as sorted JSON. A
// peer's catalog invalidates itself when this string changes.
func foreignTokens(t *testing.T, dir, self string) string {
	t.Helper()
	tokens := map[string]string{}
	ents, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return "{}"
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !e.Type().IsRegular() || e.Name() == self || strings.HasSuffix(e.Name(), ".tmp") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		tokens[e.Name()] = string(b)
	}
	out, _ := json.Marshal(tokens) // sorted keys, as swamp sorts them
	return string(out)
}

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestRepoLocalDatastoreGetsNoToken(t *testing.T) {
	root := t.TempDir()
	r := checkout(t, filepath.Join(root, "repo"), "")
	if Shared(r) {
		t.Fatal("a repo-local datastore is not shared")
	}
	p, err := Record(nil, r)
	if err != nil || p != "" {
		t.Fatalf("Record = %q, %v", p, err)
	}
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && (d.Name() == DirName || d.Name() == WriterIDName) {
			t.Errorf("%s created for a repo-local datastore", p)
		}
		return nil
	})
}

func TestTokenRewrittenAfterEachChangeSoPeersInvalidate(t *testing.T) {
	root := t.TempDir()
	shared := filepath.Join(root, "shared")
	block := "datastore:\n  type: filesystem\n  path: " + shared + "\n"
	a := checkout(t, filepath.Join(root, "a"), block)
	b := checkout(t, filepath.Join(root, "b"), block)
	if !Shared(a) || Dir(a) != filepath.Join(shared, DirName) {
		t.Fatalf("Shared %v, Dir %s", Shared(a), Dir(a))
	}
	peer := "peer-catalog-writer-id" // what b's swamp catalog would call itself
	seen := foreignTokens(t, Dir(a), peer)
	var idA string
	for i := 0; i < 3; i++ {
		p, err := Record(nil, a)
		if err != nil {
			t.Fatal(err)
		}
		id := filepath.Base(p)
		if idA != "" && id != idA {
			t.Errorf("writer id changed from %s to %s", idA, id)
		}
		idA = id
		tok, _ := os.ReadFile(p)
		if !uuidRE.Match(tok) || !uuidRE.MatchString(id) {
			t.Errorf("token %q (id %s): want a bare UUID, as swamp writes", tok, id)
		}
		now := foreignTokens(t, Dir(a), peer)
		if now == seen {
			t.Errorf("write %d: the peer's view of the tokens did not change (%s)", i, now)
		}
		seen = now
	}
	pb, err := Record(nil, b)
	if err != nil || filepath.Base(pb) == idA {
		t.Errorf("the second checkout's token %s: %v (want its own id)", pb, err)
	}
	ents, _ := os.ReadDir(Dir(a))
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("temp %s left", e.Name())
		}
	}
	if len(ents) != 2 {
		t.Errorf("%d tokens, want one per checkout", len(ents))
	}
	if got, _ := os.ReadFile(filepath.Join(a.LocalDir, WriterIDName)); string(got) != idA {
		t.Errorf("writer id file %q, want %s", got, idA)
	}
}

func TestNamespacedTokenDirIsTheTierRoot(t *testing.T) {
	root := t.TempDir()
	shared := filepath.Join(root, "shared")
	r := checkout(t, filepath.Join(root, "a"), "datastore:\n  type: filesystem\n  path: "+shared+"\n  namespace: ns1\n")
	p, err := Record(nil, r)
	if err != nil || filepath.Dir(p) != filepath.Join(shared, "ns1", DirName) {
		t.Fatalf("Record = %s, %v", p, err)
	}
}

// A crash anywhere in a rewrite leaves the old token or the new one, never
// an empty or partial file, and never a name swamp's reader would take for
// a token.
func TestTokenRewriteCrashSafe(t *testing.T) {
	root := t.TempDir()
	r := checkout(t, filepath.Join(root, "a"), "datastore:\n  type: filesystem\n  path: "+filepath.Join(root, "shared")+"\n")
	p, err := Record(nil, r)
	if err != nil {
		t.Fatal(err)
	}
	for k := 0; ; k++ {
		before, _ := os.ReadFile(p)
		f := fsx.NewFault(nil).CrashAfter(k)
		_, err := Record(f, r)
		after, rerr := os.ReadFile(p)
		if rerr != nil || !uuidRE.Match(after) {
			t.Fatalf("crash after op %d: token %q, %v", k, after, rerr)
		}
		if err != nil && !fsx.IsCrash(err) {
			t.Fatalf("op %d: %v", k, err)
		}
		if tokens := foreignTokens(t, Dir(r), "x"); strings.Count(tokens, ":") != 1 {
			t.Fatalf("crash after op %d: a peer reads %s", k, tokens)
		}
		if err == nil {
			if string(after) == string(before) {
				t.Fatal("a completed rewrite kept the old token")
			}
			if k < 4 {
				t.Errorf("rewrite completed in %d ops: no fsync?", k)
			}
			return
		}
	}
}

func TestWriterIDRefusesGarbage(t *testing.T) {
	root := t.TempDir()
	r := checkout(t, filepath.Join(root, "a"), "datastore:\n  type: filesystem\n  path: "+filepath.Join(root, "shared")+"\n")
	if err := os.WriteFile(filepath.Join(r.LocalDir, WriterIDName), []byte("../../etc/passwd"), 0o644); err != nil {
		t.Fatal(err)
	}
	if p, err := Record(nil, r); err == nil || p != "" || !strings.Contains(err.Error(), "nothing was written") {
		t.Fatalf("Record = %q, %v", p, err)
	}
}
