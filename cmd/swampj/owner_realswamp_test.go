package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// realSwamp runs the real swamp CLI ($SWAMP_BIN) in dir.
func realSwamp(t *testing.T, dir string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Getenv("SWAMP_BIN"), args...)
	cmd.Dir = dir
	return runResult(t, cmd)
}

// TestOwnerWithRealSwamp: a swampj write into an item swamp's
// method run owns keeps swamp working — the next method run passes swamp's
// ownership check, `data query` finds swampj's versions by model name, and
// swampj reads what swamp writes next. An item swamp renames away is not
// listed, and raises nothing in doctor or catalog verify.
func TestOwnerWithRealSwamp(t *testing.T) {
	if os.Getenv("SWAMP_BIN") == "" {
		t.Skip("set SWAMP_BIN to the real swamp CLI to run this test")
	}
	dir := t.TempDir()
	mustOK(t, realSwamp(t, dir, "init"), "swamp init")
	mustOK(t, realSwamp(t, dir, "model", "create", "command/shell", "m1"), "swamp model create")
	mustOK(t, realSwamp(t, dir, "model", "method", "run", "m1", "execute", "--input", "run=echo hi"), "swamp method run 1")
	def, err := os.ReadFile(filepath.Join(dir, "models", "command", "shell", "m1.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^id: (\S+)$`).FindSubmatch(def)
	if m == nil {
		t.Fatalf("no id in the definition:\n%s", def)
	}
	id := string(m[1])
	addr := "command/shell/" + id + "/result"

	// swampj writes version 2 of swamp's item, and a new item of the model,
	// with no owner flags.
	var written struct {
		Version  int64
		Metadata struct {
			ID              string
			Tags            map[string]string
			OwnerDefinition map[string]string
		}
	}
	r := mustOK(t, swampjIn(t, dir, []byte(`{"exitCode":0,"stdout":"from swampj"}`), "data", "write", addr, "--json"), "swampj data write")
	if err := json.Unmarshal([]byte(r.stdout), &written); err != nil {
		t.Fatal(err)
	}
	if written.Version != 2 || written.Metadata.OwnerDefinition["ownerType"] != "model-method" || written.Metadata.OwnerDefinition["ownerRef"] != id ||
		written.Metadata.Tags["modelName"] != "m1" || written.Metadata.Tags["specName"] != "result" {
		t.Fatalf("swampj's version:\n%s", r.stdout)
	}
	mustOK(t, swampjIn(t, dir, []byte(`{"note":1}`), "data", "write", "command/shell/"+id+"/notes"), "swampj data write (new item)")

	// swamp's query finds both by the model's name.
	q := mustOK(t, realSwamp(t, dir, "data", "query", `modelName == "m1"`, "--json"), "swamp data query")
	var found struct {
		Results []struct {
			ID, Name, ModelName string
			Version             int64
		}
	}
	if err := json.Unmarshal([]byte(q.stdout), &found); err != nil {
		t.Fatalf("%v\n%s", err, q.stdout)
	}
	seen := map[string]bool{}
	for _, res := range found.Results {
		if res.Name == "result" && res.ID == written.Metadata.ID && res.Version == 2 && res.ModelName == "m1" {
			seen["result"] = true
		}
		if res.Name == "notes" && res.ModelName == "m1" {
			seen["notes"] = true
		}
	}
	if !seen["result"] || !seen["notes"] {
		t.Fatalf("swamp data query found %v of swampj's versions:\n%s", seen, q.stdout)
	}

	// swamp's next method run passes its ownership check and writes
	// version 3, which swampj reads.
	if r := realSwamp(t, dir, "model", "method", "run", "m1", "execute", "--input", "run=echo again"); r.code != 0 ||
		strings.Contains(r.stdout+r.stderr, "Ownership validation failed") {
		t.Fatalf("swamp method run after swampj's write: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	var got struct {
		Version int64
	}
	g := mustOK(t, swampj(t, dir, "data", "get", addr, "--json"), "swampj data get --json")
	if err := json.Unmarshal([]byte(g.stdout), &got); err != nil || got.Version != 3 {
		t.Fatalf("swampj data get: %v\n%s", err, g.stdout)
	}
	if c := mustOK(t, swampj(t, dir, "data", "get", addr), "swampj data get"); !strings.Contains(c.stdout, "again") {
		t.Fatalf("swampj reads %q, want swamp's version 3", c.stdout)
	}

	// An explicit different owner is refused, nothing written.
	if r := swampjIn(t, dir, []byte("{}"), "data", "write", addr, "--owner-type", "manual", "--owner-ref", "swampj"); r.code != 1 ||
		!strings.Contains(r.stderr, `existing owner "model-method:`+id+`"`) {
		t.Fatalf("a different owner: exit %d\n%s", r.code, r.stderr)
	}

	// swamp renames the item away: swampj's list hides it, as swamp's does;
	// doctor and catalog verify find nothing wrong.
	mustOK(t, realSwamp(t, dir, "data", "rename", "m1", "result", "result2"), "swamp data rename")
	l := mustOK(t, swampj(t, dir, "data", "list"), "swampj data list")
	if strings.Contains(l.stdout, "/result ") || !strings.Contains(l.stdout, "/result2 ") {
		t.Fatalf("swampj data list after the rename:\n%s", l.stdout)
	}
	if v := mustOK(t, swampj(t, dir, "data", "versions", addr), "swampj data versions"); !strings.Contains(v.stdout, "renamed to result2") {
		t.Fatalf("swampj data versions of the renamed item:\n%s", v.stdout)
	}
	mustOK(t, swampj(t, dir, "doctor"), "swampj doctor")
	mustOK(t, swampj(t, dir, "catalog", "verify"), "swampj catalog verify")
}
