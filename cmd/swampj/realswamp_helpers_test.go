package main

// Helpers of the interop suite in realswamp_test.go: running the real swamp
// named by SWAMP_BIN, a swamp-made base repo shared by copying, sha256
// manifests of every data file, and the swamp-vs-swampj agreement checks.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

const realSwampSkip = "real-swamp interop suite skipped: SWAMP_BIN is not set; enable it with " +
	"SWAMP_BIN=$(bash ../shared/realswamp/setup.sh) go test ./cmd/swampj -run RealSwamp"

func needSwamp(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("SWAMP_BIN")
	if bin == "" {
		t.Skip(realSwampSkip)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("SWAMP_BIN=%s: %v", bin, err)
	}
	return bin
}

var ansiRE = regexp.MustCompile("\x1b\\[[0-9;]*m")

// swampCmd runs the real swamp in dir (no stdin, no colours).
func swampCmd(t *testing.T, dir string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Getenv("SWAMP_BIN"), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "NO_COLOR=1", "SWAMP_NO_TELEMETRY=1")
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("swamp %v: %v", args, err)
	}
	return result{code: code, stdout: ansiRE.ReplaceAllString(so.String(), ""), stderr: ansiRE.ReplaceAllString(se.String(), "")}
}

// swampOK runs swamp and reports a non-zero exit as a test error.
func swampOK(t *testing.T, dir string, args ...string) (result, bool) {
	t.Helper()
	r := swampCmd(t, dir, args...)
	if r.code != 0 {
		t.Errorf("swamp %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, tail(r.stdout, 1500), tail(r.stderr, 1500))
		return r, false
	}
	return r, true
}

// swampJSON runs swamp with --json and decodes its stdout into v.
func swampJSON(t *testing.T, dir string, v any, args ...string) bool {
	t.Helper()
	r, ok := swampOK(t, dir, append(args, "--json")...)
	if !ok {
		return false
	}
	if err := json.Unmarshal([]byte(r.stdout), v); err != nil {
		t.Errorf("swamp %s --json: %v\n%s", strings.Join(args, " "), err, tail(r.stdout, 1500))
		return false
	}
	return true
}

// swampjOK runs swampj and reports a non-zero exit as a test error.
func swampjOK(t *testing.T, dir string, args ...string) (result, bool) {
	t.Helper()
	r := swampj(t, dir, args...)
	if r.code != 0 {
		t.Errorf("swampj %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, tail(r.stdout, 1500), tail(r.stderr, 1500))
		return r, false
	}
	return r, true
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// swampBase is a repo made by the real swamp: models m1 and m2 with method
// runs (m1 twice) and workflow wf1 whose two steps run m1 and m2.
type swampBase struct {
	dir      string
	models   map[string]string // name -> id
	workflow string            // wf1's id
}

func buildSwampBase(t *testing.T) swampBase {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "base")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	must := func(args ...string) {
		t.Helper()
		if _, ok := swampOK(t, dir, args...); !ok {
			t.FailNow()
		}
	}
	must("init")
	must("model", "create", "command/shell", "m1")
	must("model", "create", "command/shell", "m2")
	must("model", "method", "run", "m1", "execute", "--input", "run=echo hi")
	must("model", "method", "run", "m2", "execute", "--input", "run=echo two")
	must("workflow", "create", "wf1")
	wfPath := filepath.Join(dir, "workflows", "workflow-wf1.yaml")
	b := swampBase{dir: dir, models: map[string]string{}, workflow: yamlID(t, wfPath)}
	wf := "id: " + b.workflow + `
name: wf1
tags: {}
jobs:
  - name: main
    description: two steps, m1 then m2
    steps:
      - name: first
        task:
          type: model_method
          modelIdOrName: m1
          methodName: execute
          inputs:
            run: echo first
        dependsOn: []
        weight: 0
        allowFailure: false
      - name: second
        task:
          type: model_method
          modelIdOrName: m2
          methodName: execute
          inputs:
            run: echo second
        dependsOn:
          - step: first
            condition:
              type: succeeded
        weight: 0
        allowFailure: false
    dependsOn: []
    weight: 0
version: 1
`
	if err := os.WriteFile(wfPath, []byte(wf), 0o644); err != nil {
		t.Fatal(err)
	}
	must("workflow", "run", "wf1")
	for _, m := range []string{"m1", "m2"} {
		b.models[m] = yamlID(t, filepath.Join(dir, "models", "command", "shell", m+".yaml"))
	}
	return b
}

func yamlID(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^id: *"?([0-9a-f-]{36})"?$`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("%s: no id", path)
	}
	return string(m[1])
}

// copyRepo copies the base repo (cp -a, as a user would) into a fresh dir.
func copyRepo(t *testing.T, b swampBase) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "repo")
	if out, err := exec.Command("cp", "-a", b.dir, dst).CombinedOutput(); err != nil {
		t.Fatalf("cp -a: %v %s", err, out)
	}
	return dst
}

// notData: the catalog files, lock files, swampj's journal and swamp's run
// tracker are infrastructure, not data.
func notData(rel string) bool {
	base := filepath.Base(rel)
	for _, p := range []string{"_catalog.db", "_extension_catalog.db", "_journal.db", "run_tracker.db"} {
		if strings.HasPrefix(base, p) {
			return true
		}
	}
	if strings.HasSuffix(base, ".lock") || strings.Contains("/"+rel, "/.locks/") {
		return true
	}
	return strings.HasPrefix(rel, ".git/")
}

// manifest is sha256 of every data file, keyed by its path with the
// namespace segment removed (".swamp/ns1/data/x" and ".swamp/data/x" are the
// same logical file). A logical file found twice is an error.
type manifest map[string]string

func takeManifest(t *testing.T, repo, ns string) manifest {
	t.Helper()
	m := manifest{}
	where := map[string]string{}
	err := filepath.WalkDir(repo, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(repo, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() || notData(rel) {
			return nil
		}
		key := rel
		if ns != "" && strings.HasPrefix(rel, ".swamp/"+ns+"/") {
			key = ".swamp/" + strings.TrimPrefix(rel, ".swamp/"+ns+"/")
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		if prev, dup := where[key]; dup {
			t.Errorf("data file present twice: %s and %s", prev, rel)
		}
		where[key] = rel
		m[key] = hex.EncodeToString(sum[:])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// sameExcept checks that after holds exactly the files of before with the
// same bytes, except keys for which changed returns true (created, removed or
// rewritten because the command was asked to).
func sameExcept(t *testing.T, what string, before, after manifest, changed func(key string) bool) {
	t.Helper()
	var bad []string
	for k, h := range before {
		if changed != nil && changed(k) {
			continue
		}
		if a, ok := after[k]; !ok {
			bad = append(bad, "missing  "+k)
		} else if a != h {
			bad = append(bad, "changed  "+k)
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok && (changed == nil || !changed(k)) {
			bad = append(bad, "new      "+k)
		}
	}
	sort.Strings(bad)
	if len(bad) > 0 {
		t.Errorf("%s: data files differ unexpectedly:\n  %s", what, strings.Join(bad, "\n  "))
	}
}

// swampjReadOnly runs a swampj command that must not change any data file.
func swampjReadOnly(t *testing.T, dir, ns string, args ...string) (result, bool) {
	t.Helper()
	before := takeManifest(t, dir, ns)
	r, ok := swampjOK(t, dir, args...)
	sameExcept(t, "swampj "+strings.Join(args, " "), before, takeManifest(t, dir, ns), nil)
	return r, ok
}

// healthy: swampj's catalog verify and doctor both exit 0 and report nothing.
func healthy(t *testing.T, dir, ns, when string) {
	t.Helper()
	if r, ok := swampjReadOnly(t, dir, ns, "catalog", "verify"); ok && !strings.Contains(r.stdout, "agrees") {
		t.Errorf("%s: catalog verify: %s", when, r.stdout)
	} else if !ok {
		t.Errorf("%s: catalog verify failed (above)", when)
	}
	if r, ok := swampjReadOnly(t, dir, ns, "doctor"); ok && !strings.Contains(r.stdout, "No problems found") {
		t.Errorf("%s: doctor: %s", when, r.stdout)
	} else if !ok {
		t.Errorf("%s: doctor failed (above)", when)
	}
}

// What swampj says about the data (the --json documents).
type sjItem struct {
	Address        string `json:"address"`
	Type           string `json:"modelType"`
	ModelID        string `json:"modelId"`
	ModelName      string `json:"modelName"`
	DataName       string `json:"name"`
	Latest         int64  `json:"version"`
	LatestReadable bool   `json:"latestReadable"`
	Versions       int    `json:"versions"`
	raw            map[string]any
}

type sjVersion struct {
	Version   int64  `json:"version"`
	Latest    bool   `json:"isLatest"`
	Readable  bool   `json:"readable"`
	State     string `json:"state"`
	Size      int64  `json:"size"`
	Checksum  string `json:"checksum"`
	Lifecycle string `json:"lifecycle"`
}

func sjList(t *testing.T, dir string) []sjItem {
	t.Helper()
	r, ok := swampjOK(t, dir, "data", "list", "--json")
	if !ok {
		t.FailNow()
	}
	var items []sjItem
	raws := listedItems(t, r.stdout)
	if err := remarshal(raws, &items); err != nil {
		t.Fatalf("swampj data list --json: %v", err)
	}
	for i := range items {
		items[i].raw = raws[i]
	}
	return items
}

func sjVersions(t *testing.T, dir, addr string) []sjVersion {
	t.Helper()
	r, ok := swampjOK(t, dir, "data", "versions", addr, "--json")
	if !ok {
		return nil
	}
	var vs []sjVersion
	if err := remarshal(listedVersions(t, r.stdout), &vs); err != nil {
		t.Errorf("swampj data versions --json: %v", err)
	}
	return vs
}

// sjGet returns the bytes swampj reads for addr (version 0: latest).
func sjGet(t *testing.T, dir, addr string, version int64) ([]byte, bool) {
	t.Helper()
	args := []string{"data", "get", addr}
	if version > 0 {
		args = append(args, "--version", itoa(int(version)))
	}
	r, ok := swampjOK(t, dir, args...)
	return []byte(r.stdout), ok
}

// markedRenamed: a swampj list entry that says it was renamed away.
func markedRenamed(raw map[string]any) bool {
	for k, v := range raw {
		lk := strings.ToLower(k)
		s := strings.ToLower(strings.TrimSpace(jsonString(v)))
		if strings.Contains(lk, "renamed") && s != "" && s != "false" && s != "null" && s != "[]" {
			return true
		}
		if (lk == "state" || lk == "status") && strings.Contains(s, "renamed") {
			return true
		}
	}
	return false
}

func jsonString(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// What swamp says.
type swList struct {
	ModelID string `json:"modelId"`
	Groups  []struct {
		Items []struct {
			Name    string `json:"name"`
			Version int64  `json:"version"`
			Size    int64  `json:"size"`
		} `json:"items"`
	} `json:"groups"`
}

type swVersions struct {
	Versions []struct {
		Version  int64  `json:"version"`
		Size     int64  `json:"size"`
		Checksum string `json:"checksum"`
		IsLatest bool   `json:"isLatest"`
	} `json:"versions"`
}

type swGet struct {
	Name        string          `json:"name"`
	ModelID     string          `json:"modelId"`
	Version     int64           `json:"version"`
	Size        int64           `json:"size"`
	Checksum    string          `json:"checksum"`
	ContentType string          `json:"contentType"`
	ContentPath string          `json:"contentPath"`
	Content     json.RawMessage `json:"content"`
}

type swQueryRow struct {
	Name      string            `json:"name"`
	Version   int64             `json:"version"`
	IsLatest  bool              `json:"isLatest"`
	ModelName string            `json:"modelName"`
	ModelID   string            `json:"modelId"`
	ModelType string            `json:"modelType"`
	Size      int64             `json:"size"`
	Tags      map[string]string `json:"tags"`
}

type swQuery struct {
	Results []swQueryRow `json:"results"`
}

func swampQuery(t *testing.T, dir, pred string) ([]swQueryRow, bool) {
	t.Helper()
	var q swQuery
	ok := swampJSON(t, dir, &q, "data", "query", pred)
	return q.Results, ok
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// sameContent: swamp's `content` (parsed JSON for JSON data, a string
// otherwise) is the bytes swampj read.
func sameContent(raw []byte, content json.RawMessage) bool {
	var s string
	if json.Unmarshal(content, &s) == nil && s == string(raw) {
		return true
	}
	var a, b any
	if json.Unmarshal(raw, &a) != nil || json.Unmarshal(content, &b) != nil {
		return false
	}
	return reflect.DeepEqual(a, b)
}

// agree checks that swamp and swampj see the same data: swamp's query rows
// (every item, of every type, with the versions it considers latest per step
// group) are versions swampj reads with the same size; swamp's `data list`
// of each model names exactly the items swampj lists (an item swampj lists but
// swamp hides must be marked renamed); the latest version and its size agree.
// With full, also every version (size, checksum, which is latest, bytes via
// checksum) and the latest's bytes through `data get`, item by item.
func agree(t *testing.T, dir string, models map[string]string, full bool) {
	t.Helper()
	items := sjList(t, dir)
	byAddr := map[string]sjItem{}
	versions := map[string]map[int64]sjVersion{}
	for _, it := range items {
		byAddr[it.Address] = it
		versions[it.Address] = map[int64]sjVersion{}
		for _, v := range sjVersions(t, dir, it.Address) {
			versions[it.Address][v.Version] = v
		}
	}
	rows, ok := swampQuery(t, dir, "true")
	if !ok {
		return
	}
	latestRow := map[string]bool{}
	for _, r := range rows {
		addr := r.ModelType + "/" + r.ModelID + "/" + r.Name
		v, ok := versions[addr][r.Version]
		switch {
		case !ok:
			t.Errorf("swamp data query has %s v%d, swampj does not list it", addr, r.Version)
		case !v.Readable || v.Size != r.Size:
			t.Errorf("%s v%d: swamp size %d, swampj %+v", addr, r.Version, r.Size, v)
		}
		if r.IsLatest && byAddr[addr].Latest == r.Version {
			latestRow[addr] = true
		}
	}
	for _, it := range items {
		if lv := versions[it.Address][it.Latest]; lv.Lifecycle == "deleted" {
			continue // a deletion or rename marker: swamp's query shows no row for it
		}
		if !latestRow[it.Address] {
			t.Errorf("swampj's latest %s v%d is not a latest row of swamp data query", it.Address, it.Latest)
		}
	}
	for name, id := range models {
		var l swList
		if !swampJSON(t, dir, &l, "data", "list", name) {
			continue
		}
		seen := map[string]bool{}
		for _, g := range l.Groups {
			for _, si := range g.Items {
				addr := "command/shell/" + id + "/" + si.Name
				seen[addr] = true
				it, ok := byAddr[addr]
				if !ok {
					t.Errorf("swamp data list %s shows %s, swampj data list does not", name, si.Name)
					continue
				}
				if it.Latest != si.Version || versions[addr][si.Version].Size != si.Size {
					t.Errorf("%s: swamp latest v%d (%d bytes), swampj latest v%d (%+v)", addr, si.Version, si.Size, it.Latest, versions[addr][si.Version])
				}
				if full {
					agreeItem(t, dir, name, si.Name, addr, versions[addr])
				}
			}
		}
		for _, it := range items {
			if it.ModelID == id && !seen[it.Address] && !markedRenamed(it.raw) {
				t.Errorf("swampj data list shows %s as an ordinary item (%v); swamp data list %s does not show it", it.Address, it.raw, name)
			}
		}
	}
}

func agreeItem(t *testing.T, dir, model, name, addr string, sj map[int64]sjVersion) {
	t.Helper()
	var sv swVersions
	if swampJSON(t, dir, &sv, "data", "versions", model, name) {
		if len(sv.Versions) != len(sj) {
			t.Errorf("%s: swamp has %d versions, swampj %d", addr, len(sv.Versions), len(sj))
		}
		for _, v := range sv.Versions {
			j, ok := sj[v.Version]
			if !ok || j.Size != v.Size || j.Checksum != v.Checksum || j.Latest != v.IsLatest {
				t.Errorf("%s v%d: swamp %+v, swampj %+v", addr, v.Version, v, j)
				continue
			}
			if raw, ok := sjGet(t, dir, addr, v.Version); ok && sha(raw) != v.Checksum {
				t.Errorf("%s v%d: swampj reads bytes with sha256 %s, swamp's checksum is %s", addr, v.Version, sha(raw), v.Checksum)
			}
		}
	}
	var g swGet
	if swampJSON(t, dir, &g, "data", "get", model, name) {
		raw, ok := sjGet(t, dir, addr, 0)
		if ok && (sha(raw) != g.Checksum || !sameContent(raw, g.Content) || int64(len(raw)) != g.Size) {
			t.Errorf("%s: swamp data get v%d (sha %s, %d bytes) differs from swampj data get (sha %s, %d bytes)", addr, g.Version, g.Checksum, g.Size, sha(raw), len(raw))
		}
		if j := sj[g.Version]; !j.Latest {
			t.Errorf("%s: swamp data get reads v%d, swampj's latest is not that version", addr, g.Version)
		}
	}
}
