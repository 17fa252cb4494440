package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// Model-name addressing: swamp users name a model by its name
// or id; TYPE/MODEL_ID/DATA_NAME keeps working.

// defineModel writes models/{type}/{name}.yaml as swamp's `model create` does.
func defineModel(t *testing.T, dir, typ, name, id string) string {
	t.Helper()
	p := filepath.Join(dir, "models", filepath.FromSlash(typ), name+".yaml")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	body := "type: \"" + typ + "\"\ntypeVersion: 2026.02.09.1\nid: " + id + "\nname: " + name + "\nversion: 1\ntags: {}\nglobalArguments: {}\nmethods: {}\n"
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// addressingForms are the ways to name m1's item "result".
func addressingForms(id, addr string) [][]string {
	return [][]string{
		{"m1", "result"}, {id, "result"}, {addr},
		{"--model", "m1", "--name", "result"}, {"result", "--model", "m1"}, {"--model", id, "--name", "result"},
	}
}

func jsonKeys(t *testing.T, doc string) []string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, doc)
	}
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// missingKeys lists the keys of want that got lacks.
func missingKeys(got, want []string) []string {
	have := map[string]bool{}
	for _, k := range got {
		have[k] = true
	}
	var out []string
	for _, k := range want {
		if !have[k] {
			out = append(out, k)
		}
	}
	return out
}

// swamp's keys, from its source (libswamp/data/get.ts DataGetData,
// versions.ts, list.ts); the golden test checks them against the real swamp.
var (
	swampGetKeys      = []string{"checksum", "content", "contentPath", "contentType", "createdAt", "garbageCollection", "id", "lifetime", "modelId", "modelName", "modelType", "name", "ownerDefinition", "size", "streaming", "tags", "version"}
	swampVersionsKeys = []string{"dataName", "modelId", "modelName", "modelType", "total", "versions"}
	swampVersionKeys  = []string{"checksum", "createdAt", "isLatest", "size", "version"}
	swampListKeys     = []string{"groups", "modelId", "modelName", "modelType", "total"}
	swampListItemKeys = []string{"contentType", "createdAt", "id", "name", "size", "streaming", "type", "version"}
)

// TestModelNameAddressing on a fixture with a models/ definition: every
// addressing form of get, versions, list and write names the same item;
// a model name shows in list, versions and JSON; an unknown name is an
// error, an ambiguous one lists its candidates; a model whose definition
// is gone is still found through the catalog's model_name.
func TestModelNameAddressing(t *testing.T) {
	dir := newRepo(t)
	def := defineModel(t, dir, "command/shell", "m1", dataModel)
	for i := 1; i <= 2; i++ {
		mustOK(t, swampjIn(t, dir, []byte(`{"n":`+itoa(i)+`}`), "data", "write", smallAddr, "-q"), "write")
	}
	// A write by model name.
	mustOK(t, swampjIn(t, dir, []byte(`{"n":3}`), "data", "write", "m1", "result", "-q"), "write m1 result")
	mustOK(t, swampjIn(t, dir, []byte(`{"n":4}`), "data", "write", "--model", "m1", "--name", "result", "-", "-q"), "write --model --name -")

	for _, form := range addressingForms(dataModel, smallAddr) {
		if r := mustOK(t, swampj(t, dir, append([]string{"data", "get"}, form...)...), "get"); r.stdout != `{"n":4}` {
			t.Errorf("data get %v: %q", form, r.stdout)
		}
		if r := mustOK(t, swampj(t, dir, append([]string{"data", "get", "--version", "2"}, form...)...), "get"); r.stdout != `{"n":2}` {
			t.Errorf("data get --version 2 %v: %q", form, r.stdout)
		}
		r := mustOK(t, swampj(t, dir, append([]string{"data", "get", "--json"}, form...)...), "get --json")
		if miss := missingKeys(jsonKeys(t, r.stdout), swampGetKeys); len(miss) > 0 || !strings.Contains(r.stdout, `"modelName": "m1"`) {
			t.Errorf("data get --json %v lacks swamp's %v:\n%s", form, miss, r.stdout)
		}
		v := mustOK(t, swampj(t, dir, append([]string{"data", "versions", "--json"}, form...)...), "versions")
		if vs := listedVersions(t, v.stdout); len(vs) != 4 || !strings.Contains(v.stdout, `"modelName": "m1"`) {
			t.Errorf("data versions %v:\n%s", form, v.stdout)
		}
		if miss := missingKeys(jsonKeys(t, v.stdout), swampVersionsKeys); len(miss) > 0 {
			t.Errorf("data versions --json %v lacks swamp's %v:\n%s", form, miss, v.stdout)
		}
		var vdoc struct{ Versions []map[string]any }
		if err := json.Unmarshal([]byte(v.stdout), &vdoc); err != nil || len(vdoc.Versions) == 0 {
			t.Fatalf("data versions --json %v: %v\n%s", form, err, v.stdout)
		}
		for _, ver := range vdoc.Versions {
			var keys []string
			for k := range ver {
				keys = append(keys, k)
			}
			if miss := missingKeys(keys, swampVersionKeys); len(miss) > 0 {
				t.Errorf("data versions --json %v: a version lacks swamp's %v", form, miss)
			}
		}
	}

	// data list MODEL: swamp's document; the name shows in text too.
	for _, m := range []string{"m1", dataModel} {
		for _, args := range [][]string{{"data", "list", m, "--json"}, {"data", "list", "--model", m, "--json"}} {
			r := mustOK(t, swampj(t, dir, args...), "list")
			var doc struct {
				ModelName string
				Groups    []struct {
					Type  string
					Items []map[string]any
				}
				Total int
			}
			if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || doc.ModelName != "m1" || doc.Total != 1 ||
				len(doc.Groups) != 1 || doc.Groups[0].Type != "resource" || len(missingKeys(jsonKeys(t, r.stdout), swampListKeys)) > 0 {
				t.Fatalf("%v: %v\n%s", args, err, r.stdout)
			}
			var itemKeys []string
			for k := range doc.Groups[0].Items[0] {
				itemKeys = append(itemKeys, k)
			}
			if miss := missingKeys(itemKeys, swampListItemKeys); len(miss) > 0 {
				t.Errorf("%v: items lack swamp's %v", args, miss)
			}
		}
	}
	if r := mustOK(t, swampj(t, dir, "data", "list"), "list"); !strings.Contains(r.stdout, "m1 ") {
		t.Errorf("data list does not show the model name:\n%s", r.stdout)
	}

	// Unknown names are errors, never an empty answer.
	for _, args := range [][]string{{"data", "list", "hello-shell"}, {"data", "get", "hello-shell", "result"}, {"data", "versions", "hello-shell", "result"}} {
		r := swampj(t, dir, append(args, "--json")...)
		if code, msg := errCode(t, r); r.code != 1 || r.stdout != "" || code != "not_found" || !strings.Contains(msg, "hello-shell") {
			t.Errorf("%v: %+v", args, r)
		}
	}
	// A model name without a data name is a usage error.
	if r := swampj(t, dir, "data", "get", "m1"); r.code != 2 {
		t.Errorf("data get m1: %+v", r)
	}

	// Definition gone: the catalog's model_name still names it.
	if err := os.Remove(def); err != nil {
		t.Fatal(err)
	}
	if r := mustOK(t, swampj(t, dir, "data", "get", "m1", "result", "-v"), "get through the catalog"); r.stdout != `{"n":4}` ||
		!strings.Contains(r.stderr, "resolved from catalog") {
		t.Errorf("data get m1 result without a definition: %+v", r)
	}

	// Two models named m1: an error naming both.
	other := "7a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
	defineModel(t, dir, "command/shell", "m1", dataModel)
	defineModel(t, dir, "@acme/scanner", "m1", other)
	r := swampj(t, dir, "data", "get", "m1", "result", "--json")
	if code, msg := errCode(t, r); r.code != 1 || code != "ambiguous_model" || !strings.Contains(msg, dataModel) || !strings.Contains(msg, other) {
		t.Errorf("ambiguous m1: %+v", r)
	}
	// The id and the address still work.
	mustOK(t, swampj(t, dir, "data", "get", dataModel, "result"), "get by id while the name is ambiguous")
	mustOK(t, swampj(t, dir, "data", "get", smallAddr), "get by address while the name is ambiguous")
}

// TestRealSwampModelNameAddressing: on a repo made by the real swamp,
// every addressing form of swampj gives swamp's answer, and swampj's JSON
// carries every key swamp's does for data get, versions and list.
// mustDecode: the command exited 0 and printed one JSON document that
// decodes into v (a nested comparison that decodes nothing compares
// nothing).
func mustDecode(t *testing.T, what string, r result, v any) {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("%s: exit %d\n%s%s", what, r.code, r.stdout, r.stderr)
	}
	if err := json.Unmarshal([]byte(r.stdout), v); err != nil {
		t.Fatalf("%s: %v\n%s", what, err, r.stdout)
	}
}

func TestRealSwampModelNameAddressing(t *testing.T) {
	needSwamp(t)
	dir := filepath.Join(t.TempDir(), "repo")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"init"}, {"model", "create", "command/shell", "m1"},
		{"model", "method", "run", "m1", "execute", "--input", "run=echo hi"}, {"model", "method", "run", "m1", "execute", "--input", "run=echo ho"}} {
		if _, ok := swampOK(t, dir, args...); !ok {
			t.FailNow()
		}
	}
	id := yamlID(t, filepath.Join(dir, "models", "command", "shell", "m1.yaml"))
	addr := "command/shell/" + id + "/result"

	sw := swampCmd(t, dir, "data", "get", "m1", "result", "--json")
	var swGet map[string]any
	mustDecode(t, "swamp data get m1 result --json", sw, &swGet)
	if len(swGet) == 0 {
		t.Fatalf("swamp data get --json printed an empty document: %+v", sw)
	}
	swKeys := jsonKeys(t, sw.stdout)
	for _, form := range addressingForms(id, addr) {
		r := mustOK(t, swampj(t, dir, append([]string{"data", "get", "--json"}, form...)...), "swampj data get")
		if miss := missingKeys(jsonKeys(t, r.stdout), swKeys); len(miss) > 0 {
			t.Errorf("swampj data get --json %v lacks swamp's keys %v", form, miss)
		}
		var got map[string]any
		mustDecode(t, fmt.Sprintf("swampj data get --json %v", form), r, &got)
		for _, k := range swKeys {
			if jsonString(got[k]) != jsonString(swGet[k]) {
				t.Errorf("data get %v: %s = %s, swamp says %s", form, k, jsonString(got[k]), jsonString(swGet[k]))
			}
		}
	}
	for _, c := range []struct {
		swamp, swampj []string
	}{
		{[]string{"data", "versions", "m1", "result"}, []string{"data", "versions", "m1", "result"}},
		{[]string{"data", "list", "m1"}, []string{"data", "list", "m1"}},
	} {
		s := swampCmd(t, dir, append(c.swamp, "--json")...)
		j := mustOK(t, swampj(t, dir, append(c.swampj, "--json")...), "swampj")
		var sv, jv map[string]any
		mustDecode(t, fmt.Sprintf("swamp %v --json", c.swamp), s, &sv)
		mustDecode(t, fmt.Sprintf("swampj %v --json", c.swampj), j, &jv)
		if miss := missingKeys(jsonKeys(t, j.stdout), jsonKeys(t, s.stdout)); len(miss) > 0 {
			t.Errorf("swampj %v --json lacks swamp's keys %v", c.swampj, miss)
		}
		for _, k := range []string{"modelId", "modelName", "modelType", "total", "dataName"} {
			if jsonString(sv[k]) != jsonString(jv[k]) {
				t.Errorf("%v: %s = %s, swamp says %s", c.swampj, k, jsonString(jv[k]), jsonString(sv[k]))
			}
		}
	}
	// The nested keys: every version and every list item.
	var sv, jv struct{ Versions []map[string]any }
	mustDecode(t, "swamp data versions m1 result --json", swampCmd(t, dir, "data", "versions", "m1", "result", "--json"), &sv)
	mustDecode(t, "swampj data versions m1 result --json", swampj(t, dir, "data", "versions", "m1", "result", "--json"), &jv)
	if len(sv.Versions) != 2 {
		// Two method runs, two versions: fewer and the comparison below
		// compares nothing.
		t.Fatalf("swamp lists %d versions of m1/result after two runs, want 2", len(sv.Versions))
	}
	if len(sv.Versions) != len(jv.Versions) {
		t.Fatalf("versions: swamp %d, swampj %d", len(sv.Versions), len(jv.Versions))
	}
	for i := range sv.Versions {
		for k, v := range sv.Versions[i] {
			if jsonString(jv.Versions[i][k]) != jsonString(v) {
				t.Errorf("versions[%d].%s = %s, swamp says %s", i, k, jsonString(jv.Versions[i][k]), jsonString(v))
			}
		}
	}
	type groups struct {
		Groups []struct {
			Type  string
			Items []map[string]any
		}
	}
	var sl, jl groups
	mustDecode(t, "swamp data list m1 --json", swampCmd(t, dir, "data", "list", "m1", "--json"), &sl)
	mustDecode(t, "swampj data list m1 --json", swampj(t, dir, "data", "list", "m1", "--json"), &jl)
	items := 0
	for _, g := range sl.Groups {
		items += len(g.Items)
	}
	if items == 0 {
		t.Fatalf("swamp's data list m1 --json lists no items: the comparison would compare nothing")
	}
	if len(sl.Groups) != len(jl.Groups) {
		t.Fatalf("list groups: swamp %d, swampj %d", len(sl.Groups), len(jl.Groups))
	}
	for i, g := range sl.Groups {
		if jl.Groups[i].Type != g.Type || len(jl.Groups[i].Items) != len(g.Items) {
			t.Errorf("group %d: swamp %s/%d, swampj %s/%d", i, g.Type, len(g.Items), jl.Groups[i].Type, len(jl.Groups[i].Items))
			continue
		}
		for j, it := range g.Items {
			for k, v := range it {
				if jsonString(jl.Groups[i].Items[j][k]) != jsonString(v) {
					t.Errorf("groups[%d].items[%d].%s = %s, swamp says %s", i, j, k, jsonString(jl.Groups[i].Items[j][k]), jsonString(v))
				}
			}
		}
	}
	// Errors as swamp prints them: {"error": "<message>", ...}.
	s := swampCmd(t, dir, "data", "get", "nope", "result", "--json")
	j := swampj(t, dir, "data", "get", "nope", "result", "--json")
	var se, je map[string]any
	if err := json.Unmarshal([]byte(strings.TrimSpace(s.stderr)), &se); err != nil {
		t.Fatalf("swamp's error: %v %+v", err, s)
	}
	if err := json.Unmarshal([]byte(lastLine(j.stderr)), &je); err != nil {
		t.Fatalf("swampj's error: %v %+v", err, j)
	}
	if _, ok := se["error"].(string); !ok || s.code != j.code {
		t.Fatalf("swamp's error shape changed: %+v", s)
	}
	if msg, ok := je["error"].(string); !ok || !strings.HasPrefix(msg, "Model not found: nope") {
		t.Errorf("swampj's error: %v", je)
	}
}

// TestDoctorFindingsNameTheModel: a doctor finding about an item carries
// the model's name from its definition (text and --json).
func TestDoctorFindingsNameTheModel(t *testing.T) {
	dir := newRepo(t)
	defineModel(t, dir, "command/shell", "m1", dataModel)
	mustOK(t, swampjIn(t, dir, []byte(`{"n":1}`), "data", "write", smallAddr, "-q"), "write")
	mustOK(t, swampjIn(t, dir, []byte(`{"n":2}`), "data", "write", smallAddr, "-q"), "write")
	v2 := filepath.Join(dir, ".swamp", "data", filepath.FromSlash(smallAddr), "2")
	for _, f := range []string{"raw", "metadata.yaml"} {
		if err := os.Truncate(filepath.Join(v2, f), 0); err != nil {
			t.Fatal(err)
		}
	}
	r := swampj(t, dir, "doctor", "--json")
	if r.code != 1 || !strings.Contains(r.stdout, `"modelName": "m1"`) {
		t.Fatalf("doctor --json findings must name the model: %d\n%s", r.code, r.stdout)
	}
	if r := swampj(t, dir, "doctor"); !strings.Contains(r.stdout, "(model m1)") {
		t.Fatalf("doctor text must name the model:\n%s", r.stdout)
	}
}
