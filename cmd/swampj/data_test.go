package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/swampj/swampj/fsx/fsxtest"
	"github.com/swampj/swampj/ops/meta"
)

const (
	dataModel   = "3f9c2b7e-5a1d-4e8f-9b6c-0d2e4f6a8b1c"
	shellOutput = `{"exitCode":0,"executedAt":"2026-08-01T12:00:00.000Z","command":"echo hello","durationMs":12,"stdout":"hello\n","stderr":""}`
)

// swampjEnv runs the real binary with extra environment variables.
func swampjEnv(t *testing.T, dir string, env []string, stdin []byte, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	return runResult(t, cmd)
}

func mustOK(t *testing.T, r result, what string) result {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("%s: exit %d\nstdout: %s\nstderr: %s", what, r.code, r.stdout, r.stderr)
	}
	return r
}

// errCode parses the --json error document on stderr.
// listedItems flattens `data list --json` ({models: [{groups: [{items}]}]})
// into its items, sorted by address.
func listedItems(t *testing.T, stdout string) []map[string]any {
	t.Helper()
	var doc struct {
		Models []struct {
			Groups []struct {
				Items []map[string]any `json:"items"`
			} `json:"groups"`
		} `json:"models"`
		Total *int `json:"total"`
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil || doc.Total == nil {
		t.Fatalf("data list --json: %v\n%s", err, stdout)
	}
	var items []map[string]any
	for _, m := range doc.Models {
		for _, g := range m.Groups {
			items = append(items, g.Items...)
		}
	}
	if len(items) != *doc.Total {
		t.Fatalf("data list --json: total %d, %d items", *doc.Total, len(items))
	}
	sort.Slice(items, func(i, j int) bool { return items[i]["address"].(string) < items[j]["address"].(string) })
	return items
}

// listedVersions is `data versions --json`'s versions, oldest first.
func listedVersions(t *testing.T, stdout string) []map[string]any {
	t.Helper()
	var doc struct {
		Versions []map[string]any `json:"versions"`
		Total    int              `json:"total"`
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil || doc.Total != len(doc.Versions) {
		t.Fatalf("data versions --json: %v\n%s", err, stdout)
	}
	slices.Reverse(doc.Versions)
	return doc.Versions
}

func errCode(t *testing.T, r result) (code, message string) {
	t.Helper()
	var e struct {
		Error, Code string
		ExitCode    *int
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(r.stderr)), &e); err != nil || e.ExitCode == nil || *e.ExitCode != r.code {
		t.Fatalf("stderr is not one JSON error {error, code, exitCode} with the exit code %d: %q", r.code, r.stderr)
	}
	return e.Code, e.Error
}

// TestDataWriteThenReadBack writes three versions (from a file, from stdin,
// with --file -), reads each back byte for byte, and lists them.
func TestDataWriteThenReadBack(t *testing.T) {
	dir := newRepo(t)
	addr := "command/shell/" + dataModel + "/result"
	var payloads [][]byte
	for i := 0; i < 3; i++ {
		p := make([]byte, 0, 70000)
		for j := 0; j < 70000; j++ {
			p = append(p, byte((j*7+i)%256)) // every byte value, NUL and newlines included
		}
		payloads = append(payloads, p)
	}
	in := filepath.Join(t.TempDir(), "in.bin")
	if err := os.WriteFile(in, payloads[0], 0o644); err != nil {
		t.Fatal(err)
	}
	r := mustOK(t, swampj(t, dir, "data", "write", addr, "--file", in), "write from a file")
	if !strings.Contains(r.stdout, "version 1") {
		t.Fatalf("write output: %q", r.stdout)
	}
	mustOK(t, swampjIn(t, dir, payloads[1], "data", "write", addr), "write from stdin")
	r = mustOK(t, swampjIn(t, dir, payloads[2], "data", "write", addr, "--file", "-", "--json"), "write with --file -")
	var w struct {
		Address  string
		Version  int64
		Path     string
		IntentID uint64
		Metadata struct {
			Version  int64
			Size     int64
			Checksum string
			Tags     map[string]string
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &w); err != nil {
		t.Fatalf("write --json: %v\n%s", err, r.stdout)
	}
	sum := sha256.Sum256(payloads[2])
	if w.Version != 3 || w.Metadata.Version != 3 || w.Metadata.Size != 70000 || w.Metadata.Checksum != hex.EncodeToString(sum[:]) ||
		w.IntentID == 0 || w.Path != filepath.Join(dir, ".swamp", "data", "command", "shell", dataModel, "result", "3") || w.Metadata.Tags["type"] != "resource" {
		t.Fatalf("write --json: %+v", w)
	}

	for i, p := range payloads {
		r := mustOK(t, swampj(t, dir, "data", "get", addr, "--version", fmt.Sprint(i+1)), "get")
		if !bytes.Equal([]byte(r.stdout), p) {
			t.Fatalf("version %d: got %d bytes back, not the %d written", i+1, len(r.stdout), len(p))
		}
	}
	if r := mustOK(t, swampj(t, dir, "data", "get", addr), "get latest"); !bytes.Equal([]byte(r.stdout), payloads[2]) {
		t.Fatal("get without --version must serve version 3")
	}

	r = mustOK(t, swampj(t, dir, "data", "versions", addr, "--json"), "versions")
	vs := listedVersions(t, r.stdout)
	if len(vs) != 3 {
		t.Fatalf("versions --json:\n%s", r.stdout)
	}
	for i, v := range vs {
		for _, k := range []string{"version", "isLatest", "state", "readable", "path", "size", "contentType", "createdAt", "checksum", "lifecycle", "rawSize", "problems"} {
			if _, ok := v[k]; !ok {
				t.Fatalf("version object lacks %q: %v", k, v)
			}
		}
		if v["version"] != float64(i+1) || v["isLatest"] != (i == 2) || v["readable"] != true || v["state"] != "readable" {
			t.Fatalf("version %d: %v", i+1, v)
		}
	}
	r = mustOK(t, swampj(t, dir, "data", "list", "--json"), "list")
	items := listedItems(t, r.stdout)
	if len(items) != 1 {
		t.Fatalf("list --json:\n%s", r.stdout)
	}
	if it := items[0]; it["address"] != addr || it["version"] != float64(3) || it["latestReadable"] != true || it["versions"] != float64(3) ||
		it["latestRule"] != "file" || len(it["unreadableVersions"].([]any)) != 0 {
		t.Fatalf("list item: %v", it)
	}
	// A prefix no item starts with is not an empty answer (nothing silently ignored).
	if r := swampj(t, dir, "data", "list", "command/shell/nope", "--json"); r.code != 1 || r.stdout != "" {
		t.Fatalf("list with a prefix matching nothing: %+v", r)
	} else if code, _ := errCode(t, r); code != "not_found" {
		t.Fatalf("list with a prefix matching nothing: code %q", code)
	}
	if r := mustOK(t, swampj(t, dir, "data", "list", "command/shell/"), "list with prefix"); !strings.Contains(r.stdout, addr) {
		t.Fatalf("list with a prefix: %q", r.stdout)
	}
	// Nothing is left open in the journal.
	if r := mustOK(t, swampj(t, dir, "journal", "list", "--json"), "journal list"); strings.Contains(r.stdout, `"open"`) {
		t.Fatalf("open intents after clean writes: %s", r.stdout)
	}
}

// TestDataWriteMetadataMatchesSwamp writes the inputs of swamp-format
// §2.4.2's examples through the CLI and compares metadata.yaml with the
// golden files, after substituting the two lines that differ per write (id,
// createdAt). ops/write's TestWriteGoldenMetadata compares them byte for byte with a
// fixed id and clock.
func TestDataWriteMetadataMatchesSwamp(t *testing.T) {
	dir := newRepo(t)
	in := filepath.Join(t.TempDir(), "result.json")
	if err := os.WriteFile(in, []byte(shellOutput), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := "command/shell/" + dataModel + "/result"
	for i := 0; i < 3; i++ {
		mustOK(t, swampj(t, dir, "data", "write", addr, "--file", in, "--owner-type", "model-method", "--owner-ref", dataModel,
			"--model-name", "hello-shell", "--spec-name", "result"), "write")
	}
	compareGolden(t, filepath.Join(dir, ".swamp", "data", "command", "shell", dataModel, "result", "3", "metadata.yaml"), "metadata-model-method.yaml")
	if b, _ := os.ReadFile(filepath.Join(dir, ".swamp", "data", "command", "shell", dataModel, "result", "latest")); string(b) != "3" {
		t.Fatalf("latest = %q", b)
	}

	wf := "9e8d7c6b-5a49-4837-a625-1403f2e1d0c9"
	mustOK(t, swampjIn(t, dir, []byte(shellOutput), "data", "write", "command/shell/"+wf+"/result", "--owner-type", "model-method", "--owner-ref", wf,
		"--model-name", "scan-shell", "--spec-name", "result", "--garbage-collection", "30d",
		"--workflow-id", "b5e1d0c4-2f3a-4b6c-8d7e-9f0a1b2c3d4e", "--workflow-run-id", "c8a7f6e5-d4c3-4b2a-9180-7f6e5d4c3b2a",
		"--workflow-name", "nightly-scan", "--job-name", "scan", "--step-name", "run-shell", "--source", "step-output"), "workflow write")
	compareGolden(t, filepath.Join(dir, ".swamp", "data", "command", "shell", wf, "result", "1", "metadata.yaml"), "metadata-workflow-step.yaml")
}

var idLine = regexp.MustCompile(`(?m)^id: [0-9a-f-]{36}$`)
var createdLine = regexp.MustCompile(`(?m)^createdAt: '\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z'$`)

func compareGolden(t *testing.T, path, golden string) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join("..", "..", "testdata", "golden", golden))
	if err != nil {
		t.Fatal(err)
	}
	norm := func(b []byte) string {
		if len(idLine.FindAll(b, -1)) != 1 || len(createdLine.FindAll(b, -1)) != 1 {
			t.Fatalf("%s: no single id and createdAt line in\n%s", path, b)
		}
		b = idLine.ReplaceAll(b, []byte("id: ID"))
		return string(createdLine.ReplaceAll(b, []byte("createdAt: 'CREATED'")))
	}
	if g, w := norm(got), norm(want); g != w {
		t.Fatalf("%s differs from swamp's %s:\n%s\nwant:\n%s", path, golden, g, w)
	}
}

// TestDataWriteRefusals: every bad input is a clear error with a stable
// code and a non-zero exit, and the tree is exactly as before.
func TestDataWriteRefusals(t *testing.T) {
	dir := newRepo(t)
	addr := "command/shell/m/state"
	mustOK(t, swampjIn(t, dir, []byte(`{"v":1}`), "data", "write", addr), "first write")
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dir, ".swamp", "data", "evil")); err != nil {
		t.Fatal(err)
	}
	skip := func(rel string) bool { return strings.HasPrefix(rel, ".swamp/_journal.db.holder") }
	before := fsxtest.Snapshot(t, dir, skip)
	cases := []struct {
		args []string
		exit int
		code string
		says string
	}{
		{[]string{"data", "write", "command/shell/m/latest"}, 1, "invalid_address", "reserved"},
		{[]string{"data", "write", "command/shell/m/LaTeSt"}, 1, "invalid_address", "reserved"},
		{[]string{"data", "write", "command/shell/m/a..b"}, 1, "invalid_address", ".."},
		{[]string{"data", "write", "command/shell/m/x\\y"}, 1, "invalid_address", `\`},
		{[]string{"data", "write", "only/onepart"}, 1, "invalid_address", "missing"},
		// The trust boundary refuses the link before the write's own check
		// of the data root would (fsx/confine.go).
		{[]string{"data", "write", "evil/t/m/x"}, 3, "path_outside_repo", "which leaves the repo"},
		{[]string{"data", "write", addr, "--file", filepath.Join(dir, "no-such-file")}, 1, "input_unreadable", "no-such-file"},
		{[]string{"data", "write", addr, "--file", t.TempDir()}, 1, "input_unreadable", "is a directory"},
		{[]string{"data", "write", addr, "--workflow-id", "not-a-uuid"}, 2, "usage", "--workflow-id"},
		{[]string{"data", "write", addr, "--lifetime", "forever"}, 2, "usage", "--lifetime"},
		{[]string{"data", "write", addr, "--garbage-collection", "0"}, 2, "usage", "garbage-collection"},
		{[]string{"data", "write", addr, "--garbage-collection", "0d"}, 2, "usage", "greater than zero"},
		{[]string{"data", "write", addr, "--tag", "novalue"}, 2, "usage", "KEY=VALUE"},
		{[]string{"data", "write"}, 2, "usage", "usage"},
		{[]string{"data", "write", addr, "extra"}, 2, "usage", "usage"},
		{[]string{"data", "get", addr, "--version", "0"}, 2, "usage", "positive"},
		{[]string{"data", "get", addr, "--version", "9"}, 1, "not_found", "no version 9"},
		{[]string{"data", "get", "command/shell/m/nothing"}, 1, "not_found", "does not exist"},
	}
	for _, c := range cases {
		r := swampjIn(t, dir, []byte("payload"), append(c.args, "--json")...)
		if r.code != c.exit {
			t.Errorf("%v: exit %d, want %d (%s)", c.args, r.code, c.exit, r.stderr)
			continue
		}
		code, msg := errCode(t, r)
		if code != c.code || !strings.Contains(msg, c.says) {
			t.Errorf("%v: code %q message %q, want %q mentioning %q", c.args, code, msg, c.code, c.says)
		}
		if r.stdout != "" {
			t.Errorf("%v: printed on stdout: %q", c.args, r.stdout)
		}
	}
	if d := fsxtest.Diff(before, fsxtest.Snapshot(t, dir, skip)); len(d) > 0 {
		t.Fatalf("refused commands changed the tree:\n%s", strings.Join(d, "\n"))
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Fatalf("a write escaped the data root: %v", ents)
	}
}

// TestDataWriteLockTimeoutExits75: swamp's per-model lock held by a live
// process makes the write give up after SWAMP_LOCK_TIMEOUT_MS with exit 75,
// naming the holder, and change nothing.
func TestDataWriteLockTimeoutExits75(t *testing.T) {
	dir := newRepo(t)
	addr := "command/shell/m/state"
	mustOK(t, swampjIn(t, dir, []byte("v1"), "data", "write", addr), "first write")
	host, _ := os.Hostname()
	lockFile := filepath.Join(dir, ".swamp", "data", "command", "shell", "m", ".lock")
	info := fmt.Sprintf(`{
  "holder": "swamp@%s",
  "hostname": %q,
  "pid": %d,
  "acquiredAt": %q,
  "ttlMs": 600000,
  "nonce": "2c5e9f0a-8b1d-4e7c-9a36-5f0d1e2b3c4d"
}`, host, host, os.Getpid(), time.Now().UTC().Format("2006-01-02T15:04:05.000Z"))
	if err := os.WriteFile(lockFile, []byte(info), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	r := swampjEnv(t, dir, []string{"SWAMP_LOCK_TIMEOUT_MS=300"}, []byte("v2"), "data", "write", addr, "--json")
	if r.code != 75 {
		t.Fatalf("want exit 75, got %+v", r)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("took %s", d)
	}
	if code, msg := errCode(t, r); code != "lock_timeout" || !strings.Contains(msg, fmt.Sprintf("pid %d", os.Getpid())) {
		t.Fatalf("code %q message %q", code, msg)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, ".swamp", "data", "command", "shell", "m", "state", "latest")); string(b) != "1" {
		t.Fatalf("latest = %q", b)
	}
	if b, _ := os.ReadFile(lockFile); string(b) != info {
		t.Fatal("the other holder's lock must be left alone")
	}
}

// swampVersion writes a version as swamp does: metadata.yaml (swamp's bytes,
// via meta.Encode) and raw.
func swampVersion(t *testing.T, itemDir string, v int64, raw []byte) {
	t.Helper()
	sum := sha256.Sum256(raw)
	size := int64(len(raw))
	md := &meta.Metadata{ID: "7d3f2c1e-9a4b-4c2d-8e1f-0a1b2c3d4e5f", Name: filepath.Base(itemDir), Version: v, ContentType: "application/json",
		Lifetime: "infinite", GarbageCollection: meta.GarbageCollection{N: 10},
		Tags:  meta.Tags{{Key: "type", Value: "resource"}, {Key: "specName", Value: filepath.Base(itemDir)}, {Key: "modelName", Value: "hello-shell"}},
		Owner: meta.Owner{OwnerType: "model-method", OwnerRef: dataModel}, CreatedAt: fmt.Sprintf("2026-08-0%dT12:00:00.000Z", v),
		Size: &size, Checksum: hex.EncodeToString(sum[:])}
	b, err := meta.Encode(md)
	if err != nil {
		t.Fatal(err)
	}
	fsxtest.WriteFiles(t, filepath.Join(itemDir, fmt.Sprint(v)), map[string]string{"metadata.yaml": string(b), "raw": string(raw)})
}

// TestDataReadsSwampLayouts reads data trees as swamp leaves them: the
// example layout, a legacy symlink `latest`, a deferred version above
// `latest`, a streaming version without metadata.yaml, and the zero-byte
// version of issue #3955. get/versions/list answer as swamp would, and
// every unreadable version is marked as such instead of being hidden.
func TestDataReadsSwampLayouts(t *testing.T) {
	dir := newRepo(t)
	root := filepath.Join(dir, ".swamp", "data")
	model := filepath.Join(root, "command", "shell", dataModel)
	content := func(v int) []byte { return []byte(fmt.Sprintf(`{"v":%d}`, v)) }

	// The example layout (swamp-format §2.4.2 A): result/1..3, latest "3", version 3
	// byte-for-byte swamp's example.
	resultDir := filepath.Join(model, "result")
	swampVersion(t, resultDir, 1, content(1))
	swampVersion(t, resultDir, 2, content(2))
	golden, err := os.ReadFile(filepath.Join("..", "..", "testdata", "golden", "metadata-model-method.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	fsxtest.WriteFiles(t, resultDir, map[string]string{"3/metadata.yaml": string(golden), "3/raw": shellOutput, "latest": "3"})
	// A legacy symlink latest -> 2/.
	legacy := filepath.Join(model, "legacy")
	swampVersion(t, legacy, 1, content(1))
	swampVersion(t, legacy, 2, content(2))
	if err := os.Symlink("2/", filepath.Join(legacy, "latest")); err != nil {
		t.Fatal(err)
	}
	// A deferred (uncommitted) version 2 above latest 1.
	deferred := filepath.Join(model, "deferred")
	swampVersion(t, deferred, 1, content(1))
	swampVersion(t, deferred, 2, content(2))
	fsxtest.WriteFiles(t, deferred, map[string]string{"latest": "1"})
	// A streaming write in progress: version 2 has raw, no metadata.yaml yet.
	streaming := filepath.Join(model, "streaming")
	swampVersion(t, streaming, 1, content(1))
	fsxtest.WriteFiles(t, streaming, map[string]string{"latest": "1", "2/raw": "line 1\nline 2\n"})
	// Issue #3955: latest 3, whose raw and metadata.yaml are zero bytes.
	empty := filepath.Join(model, "state")
	swampVersion(t, empty, 1, content(1))
	swampVersion(t, empty, 2, content(2))
	fsxtest.WriteFiles(t, empty, map[string]string{"latest": "3", "3/metadata.yaml": "", "3/raw": ""})

	// A rename tombstone (swamp-format §2.6.6): old-name's latest says renamedTo
	// new-name, with neither size nor checksum, as swamp writes it.
	swampVersion(t, filepath.Join(model, "old-name"), 1, content(1))
	swampVersion(t, filepath.Join(model, "new-name"), 1, content(9))
	tomb := "id: 1b2c3d4e-5f60-4718-8a9b-0c1d2e3f4a5b\nname: old-name\nversion: 2\ncontentType: application/json\n" +
		"lifetime: infinite\ngarbageCollection: 10\nstreaming: false\ntags:\n  type: resource\nownerDefinition:\n" +
		"  ownerType: model-method\n  ownerRef: " + dataModel + "\ncreatedAt: '2026-08-03T12:00:00.000Z'\nlifecycle: deleted\nrenamedTo: new-name\n"
	fsxtest.WriteFiles(t, filepath.Join(model, "old-name"), map[string]string{"2/metadata.yaml": tomb,
		"2/raw": `{"renamedTo":"new-name","renamedAt":"2026-08-03T12:00:00.000Z"}`, "latest": "2"})
	fsxtest.WriteFiles(t, filepath.Join(model, "new-name"), map[string]string{"latest": "1"})

	// Bit rot: raw has the recorded size but not the recorded checksum.
	rot := filepath.Join(model, "rot")
	swampVersion(t, rot, 1, content(1))
	fsxtest.WriteFiles(t, rot, map[string]string{"latest": "1", "1/raw": strings.ToUpper(string(content(1)))})

	at := func(name string) string { return "command/shell/" + dataModel + "/" + name }
	get := func(name string, args ...string) result {
		return swampj(t, dir, append([]string{"data", "get", at(name)}, args...)...)
	}
	for _, c := range []struct {
		name, version, want string
	}{
		{"result", "", shellOutput}, {"result", "1", string(content(1))},
		{"legacy", "", string(content(2))},    // the symlink is followed
		{"deferred", "", string(content(1))},  // latest wins over the higher version
		{"deferred", "2", string(content(2))}, // which is itself readable
		{"streaming", "", string(content(1))}, // latest is 1
		{"state", "2", string(content(2))},    // the last good version
		{"old-name", "", string(content(9))},  // the rename is followed
		{"old-name", "1", string(content(1))}, // not for an explicit version
	} {
		args := []string{}
		if c.version != "" {
			args = append(args, "--version", c.version)
		}
		if r := mustOK(t, get(c.name, args...), "get "+c.name); r.stdout != c.want {
			t.Errorf("get %s %v: %q, want %q", c.name, args, r.stdout, c.want)
		}
	}

	if r := mustOK(t, get("old-name", "--json"), "get renamed --json"); !strings.Contains(r.stdout, `"renamedFrom": [
    "old-name"
  ]`) || !strings.Contains(r.stdout, `"address": "command/shell/`+dataModel+`/new-name"`) {
		t.Errorf("get of a renamed item --json:\n%s", r.stdout)
	}

	// Unreadable versions are errors naming the file and what is wrong.
	r := get("state", "--json")
	if code, msg := errCode(t, r); r.code != 1 || code != "unreadable_version" ||
		!strings.Contains(msg, filepath.Join(empty, "3", "metadata.yaml")) || !strings.Contains(msg, "zero bytes") ||
		!strings.Contains(msg, "last readable version is 2") {
		t.Errorf("get of the #3955 version: exit %d code %q: %s", r.code, code, msg)
	}
	if r := get("state"); r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, "unreadable") {
		t.Errorf("get of the #3955 version without --json: %+v", r)
	}
	for _, args := range [][]string{{"--json"}, {}} {
		r := get("rot", args...)
		if r.code != 1 || !strings.Contains(r.stderr, "unreadable_version") && !strings.Contains(r.stderr, "SHA-256") {
			t.Errorf("get of a version whose checksum does not match %v: %+v", args, r)
		}
		if len(args) > 0 && r.stdout != "" {
			t.Errorf("--json vouched for bad bytes: %s", r.stdout)
		}
	}
	if r := get("streaming", "--version", "2", "--json"); r.code != 1 {
		t.Errorf("get of a streaming version: %+v", r)
	} else if code, msg := errCode(t, r); code != "unreadable_version" || !strings.Contains(msg, "metadata.yaml does not exist") {
		t.Errorf("get of a streaming version: %q %s", code, msg)
	}

	// versions: what is on disk, which one latest names, unreadable marked.
	versions := func(name string) []map[string]any {
		r := mustOK(t, swampj(t, dir, "data", "versions", at(name), "--json"), "versions "+name)
		return listedVersions(t, r.stdout)
	}
	summary := func(vs []map[string]any) string {
		var parts []string
		for _, v := range vs {
			s := fmt.Sprintf("%v:%v", v["version"], v["state"])
			if v["isLatest"] == true {
				s += "*"
			}
			parts = append(parts, s)
		}
		return strings.Join(parts, " ")
	}
	for name, want := range map[string]string{
		"result":    "1:readable 2:readable 3:readable*",
		"legacy":    "1:readable 2:readable*",
		"deferred":  "1:readable* 2:readable",
		"streaming": "1:readable* 2:incomplete",
		"state":     "1:readable 2:readable 3:damaged*",
	} {
		if got := summary(versions(name)); got != want {
			t.Errorf("versions %s: %s, want %s", name, got, want)
		}
	}
	if r := mustOK(t, swampj(t, dir, "data", "versions", at("state")), "versions text"); !strings.Contains(r.stdout, "UNREADABLE") || !strings.Contains(r.stdout, "zero bytes") {
		t.Errorf("versions text does not mark the bad version:\n%s", r.stdout)
	}

	// list: every item of the model (swamp's walk would drop them all
	// because of state/3, swamp-format §9.2), the bad one flagged with its last good version.
	r = mustOK(t, swampj(t, dir, "data", "list", "--json"), "list")
	items := listedItems(t, r.stdout)
	var got []string
	for _, it := range items {
		got = append(got, fmt.Sprintf("%s latest=%v rule=%v readable=%v lastReadable=%v unreadable=%v",
			it["name"], it["version"], it["latestRule"], it["latestReadable"], it["lastReadable"], it["unreadableVersions"]))
	}
	want := []string{
		"deferred latest=1 rule=file readable=true lastReadable=1 unreadable=[]",
		"legacy latest=2 rule=symlink readable=true lastReadable=2 unreadable=[]",
		"new-name latest=1 rule=file readable=true lastReadable=1 unreadable=[]",
		// old-name is not listed: swamp renamed it away
		"result latest=3 rule=file readable=true lastReadable=3 unreadable=[]",
		"rot latest=1 rule=file readable=true lastReadable=1 unreadable=[]", // checksums are not read by list
		"state latest=3 rule=file readable=false lastReadable=2 unreadable=[3]",
		"streaming latest=1 rule=file readable=true lastReadable=1 unreadable=[2]",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("list:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if r := mustOK(t, swampj(t, dir, "data", "list", "command/shell/"+dataModel+"/st"), "list prefix"); !strings.Contains(r.stdout, "UNREADABLE latest (last readable: 2)") ||
		strings.Contains(r.stdout, "/result") {
		t.Errorf("list with prefix:\n%s", r.stdout)
	}

	// A write on top of the damage allocates above it and makes the item
	// readable again; the streaming version's number is not reused.
	r = mustOK(t, swampjIn(t, dir, []byte("fresh"), "data", "write", at("state"), "--json"), "write over #3955")
	if !strings.Contains(r.stdout, `"version": 4`) || !strings.Contains(r.stdout, `"previousLatest": 3`) {
		t.Errorf("write over the damaged item: %s", r.stdout)
	}
	r = mustOK(t, swampjIn(t, dir, []byte("next"), "data", "write", at("streaming"), "--json"), "write beside a streaming version")
	if !strings.Contains(r.stdout, `"version": 3`) {
		t.Errorf("write beside a streaming version: %s", r.stdout)
	}
	if r := mustOK(t, get("legacy"), "get legacy"); r.stdout != string(content(2)) {
		t.Errorf("reading must not change anything: %q", r.stdout)
	}
	if fi, err := os.Lstat(filepath.Join(legacy, "latest")); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("a read converted the legacy symlink: %v %v", fi, err)
	}
}

// TestDataReadsIssue3955Fixture reads the committed #3955 data root (see
// testdata/store/README.md) copied into a repo.
func TestDataReadsIssue3955Fixture(t *testing.T) {
	dir := newRepo(t)
	fsxtest.CopyTree(t, filepath.Join("..", "..", "testdata", "store", "issue-3955", "data"), filepath.Join(dir, ".swamp", "data"))
	model := "command/shell/" + dataModel
	r := swampj(t, dir, "data", "get", model+"/state", "--json")
	if code, msg := errCode(t, r); r.code != 1 || code != "unreadable_version" || !strings.Contains(msg, "metadata.yaml is zero bytes") {
		t.Fatalf("exit %d code %q: %s", r.code, code, msg)
	}
	for _, name := range []string{"journal", "207333"} {
		mustOK(t, swampj(t, dir, "data", "get", model+"/"+name), "get "+name)
	}
	r = mustOK(t, swampj(t, dir, "data", "list"), "list")
	for _, want := range []string{model + "/207333", model + "/journal", model + "/state", "UNREADABLE latest (last readable: 2)"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("list lacks %q:\n%s", want, r.stdout)
		}
	}
}

// TestDataWriteTagsDoNotLeakBetweenRuns runs the command twice in one
// process: the second write must not inherit the first one's --tag.
func TestDataWriteTagsDoNotLeakBetweenRuns(t *testing.T) {
	dir := newRepo(t)
	for i, tag := range []string{"a=1", "b=2"} {
		var out, errb bytes.Buffer
		args := []string{"swampj", "--repo", dir, "data", "write", "command/shell/m/state", "--tag", tag, "--json"}
		if code := run(context.Background(), args, strings.NewReader("x"), &out, &errb); code != 0 {
			t.Fatalf("run %d: exit %d: %s", i, code, errb.String())
		}
		var w struct {
			Metadata struct{ Tags map[string]string }
		}
		if err := json.Unmarshal(out.Bytes(), &w); err != nil {
			t.Fatal(err)
		}
		// type, specName (a new item's defaults to the data name) and the --tag.
		if len(w.Metadata.Tags) != 3 || w.Metadata.Tags["specName"] != "state" || w.Metadata.Tags[strings.Split(tag, "=")[0]] == "" {
			t.Fatalf("run %d: tags %v", i, w.Metadata.Tags)
		}
	}
}
