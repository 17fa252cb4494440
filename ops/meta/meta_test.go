package meta

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

func int64p(v int64) *int64 { return &v }

const rawChecksum = "11f0be56e4128d6df51f2db29d89e18ff2afbbbf6ce9f203b3e884f04780d0fa"

// The records behind the two byte-exact files of swamp-format §2.4.2.
func exampleModelMethod() *Metadata {
	return &Metadata{
		ID:                "7d3f2c1e-9a4b-4c2d-8e1f-0a1b2c3d4e5f",
		Name:              "result",
		Version:           3,
		ContentType:       "application/json",
		Lifetime:          "infinite",
		GarbageCollection: GarbageCollection{N: 10},
		Tags:              Tags{{"type", "resource"}, {"specName", "result"}, {"modelName", "hello-shell"}},
		Owner:             Owner{OwnerType: "model-method", OwnerRef: "3f9c2b7e-5a1d-4e8f-9b6c-0d2e4f6a8b1c"},
		CreatedAt:         "2026-08-01T12:00:00.000Z",
		Size:              int64p(124),
		Checksum:          rawChecksum,
	}
}

func exampleWorkflowStep() *Metadata {
	const (
		workflowID = "b5e1d0c4-2f3a-4b6c-8d7e-9f0a1b2c3d4e"
		runID      = "c8a7f6e5-d4c3-4b2a-9180-7f6e5d4c3b2a"
	)
	return &Metadata{
		ID:                "0a9b8c7d-6e5f-4a3b-8c2d-1e0f9a8b7c6d",
		Name:              "result",
		Version:           1,
		ContentType:       "application/json",
		Lifetime:          "infinite",
		GarbageCollection: GarbageCollection{Duration: "30d"},
		Tags: Tags{
			{"type", "resource"}, {"specName", "result"}, {"modelName", "scan-shell"},
			{"source", "step-output"}, {"workflow", "nightly-scan"}, {"workflowId", workflowID},
			{"workflowRunId", runID}, {"job", "scan"}, {"step", "run-shell"},
		},
		Owner: Owner{
			// Deliberately not in schema order: Encode must not care.
			Source: "step-output", StepName: "run-shell", JobName: "scan",
			WorkflowName: "nightly-scan", WorkflowRunID: runID, WorkflowID: workflowID,
			OwnerRef: "9e8d7c6b-5a49-4837-a625-1403f2e1d0c9", OwnerType: "model-method",
		},
		CreatedAt: "2026-08-01T12:05:09.007Z",
		Size:      int64p(124),
		Checksum:  rawChecksum,
	}
}

func readGolden(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "golden", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestEncodeGolden(t *testing.T) {
	cases := []struct {
		file string
		m    *Metadata
		size int
	}{
		{"metadata-model-method.yaml", exampleModelMethod(), 435},
		{"metadata-workflow-step.yaml", exampleWorkflowStep(), 811},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			golden := readGolden(t, c.file)
			if len(golden) != c.size {
				t.Fatalf("golden file is %d bytes, the doc says %d", len(golden), c.size)
			}
			got, err := Encode(c.m)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(golden) {
				t.Errorf("Encode:\n%s\nwant\n%s", got, golden)
			}
			decoded, err := Decode(golden)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(decoded, c.m) {
				t.Errorf("Decode(golden) = %+v\nwant %+v", decoded, c.m)
			}
			again, err := Encode(decoded)
			if err != nil {
				t.Fatal(err)
			}
			if string(again) != string(golden) {
				t.Errorf("Encode(Decode(golden)) differs:\n%s", again)
			}
		})
	}
}

func TestEncodeLayout(t *testing.T) {
	long := strings.Repeat("n", 79)
	m := exampleModelMethod()
	m.Name = long
	m.Lifetime = "0h" // normalised to workflow on write, as Data.create does
	m.Streaming = true
	m.Size = nil
	m.Checksum = ""
	m.Lifecycle = "deleted"
	m.RenamedTo = "207333"
	m.Owner = Owner{DefinitionHash: "abc", OwnerType: "manual", OwnerRef: "cli"}
	m.Tags = Tags{{"type", "file"}, {"42", "true"}, {"7", "2026-01-01"}, {"a:b", "ok 😀"},
		{"yes", "'q'"}, {"multi", "line1\nline2"}, {"note", strings.Repeat("w", 77)}}
	want := `id: 7d3f2c1e-9a4b-4c2d-8e1f-0a1b2c3d4e5f
name: >-
  ` + long + `
version: 3
contentType: application/json
lifetime: workflow
garbageCollection: 10
streaming: true
tags:
  '7': '2026-01-01'
  '42': 'true'
  type: file
  'a:b': "ok \U0001F600"
  'yes': '''q'''
  multi: |-
    line1
    line2
  note: >-
    ` + strings.Repeat("w", 77) + `
ownerDefinition:
  definitionHash: abc
  ownerType: manual
  ownerRef: cli
createdAt: '2026-08-01T12:00:00.000Z'
lifecycle: deleted
renamedTo: '207333'
`
	got, err := Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestRoundTrip(t *testing.T) {
	variants := map[string]func(m *Metadata){
		"as is":           func(m *Metadata) {},
		"duration gc":     func(m *Metadata) { m.GarbageCollection = GarbageCollection{Duration: "1mo"} },
		"streaming":       func(m *Metadata) { m.Streaming = true },
		"size zero":       func(m *Metadata) { m.Size = int64p(0) },
		"no size":         func(m *Metadata) { m.Size = nil; m.Checksum = "" },
		"tombstone":       func(m *Metadata) { m.Lifecycle = "deleted"; m.RenamedTo = "new-name"; m.Size = nil; m.Checksum = "" },
		"active":          func(m *Metadata) { m.Lifecycle = "active" },
		"numeric name":    func(m *Metadata) { m.Name = "207333" },
		"odd name":        func(m *Metadata) { m.Name = "a:b *?<>| \"x\" 'y' #z" },
		"emoji name":      func(m *Metadata) { m.Name = "ok 😀" },
		"long name":       func(m *Metadata) { m.Name = strings.Repeat("long name ", 12) },
		"leading space":   func(m *Metadata) { m.Name = "  spaced  " },
		"max version":     func(m *Metadata) { m.Version = maxSafeInteger },
		"z without ms":    func(m *Metadata) { m.CreatedAt = "2028-02-29T23:59Z" },
		"microseconds":    func(m *Metadata) { m.CreatedAt = "2026-08-01T12:00:00.123456Z" },
		"nil uuid id":     func(m *Metadata) { m.ID = "00000000-0000-0000-0000-000000000000" },
		"upper-case uuid": func(m *Metadata) { m.ID = "7D3F2C1E-9A4B-4C2D-8E1F-0A1B2C3D4E5F" },
		"durations":       func(m *Metadata) { m.Lifetime = "10y"; m.GarbageCollection = GarbageCollection{Duration: "005m"} },
		"all owner fields": func(m *Metadata) {
			m.Owner = Owner{"hash", "workflow-step", "ref", "b5e1d0c4-2f3a-4b6c-8d7e-9f0a1b2c3d4e",
				"c8a7f6e5-d4c3-4b2a-9180-7f6e5d4c3b2a", "wf", "job", "step", "src"}
		},
		"tricky tags": func(m *Metadata) {
			m.Tags = Tags{{"0", "zero"}, {"10", "ten"}, {"type", "resource"}, {"", "empty key"},
				{"empty", ""}, {"null", "null"}, {"num", "012"}, {"bool", "True"}, {"yes", "no"},
				{"ts", "2026-08-01T12:00:00Z"}, {"tab", "a\tb"}, {"nl", "a\n"}, {"nl2", "a\n\n"},
				{"indent", " lead\nx"}, {"quote", "it's"}, {"dq", `"x"`}, {"bs", `C:\x`},
				{"ctrl", "\x01\x7f\u0085\u2028\ufeff"}, {"merge", "<<"}, {"007", "leading zero key"},
				{"long", strings.Repeat("word ", 40)}, {"日本", "語"}}
		},
	}
	for name, mutate := range variants {
		t.Run(name, func(t *testing.T) {
			m := exampleWorkflowStep()
			mutate(m)
			m.Tags = m.Tags.JSOrder()
			data, err := Encode(m)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Decode(data)
			if err != nil {
				t.Fatalf("Decode: %v\n%s", err, data)
			}
			if !reflect.DeepEqual(got, m) {
				t.Errorf("round trip:\n got %+v\nwant %+v\n%s", got, m, data)
			}
		})
	}
}

// golden B with one line replaced, for decode error cases.
func withLine(t *testing.T, old, new string) []byte {
	t.Helper()
	g := string(readGolden(t, "metadata-workflow-step.yaml"))
	if !strings.Contains(g, old) {
		t.Fatalf("golden lacks %q", old)
	}
	return []byte(strings.Replace(g, old, new, 1))
}

// ownerWorkflowID anchors on the ownerDefinition copy of the workflow ids
// (the tags hold the same two lines, followed by job instead).
const ownerWorkflowID = "  workflowId: b5e1d0c4-2f3a-4b6c-8d7e-9f0a1b2c3d4e\n  workflowRunId: c8a7f6e5-d4c3-4b2a-9180-7f6e5d4c3b2a\n  workflowName"

func TestDecodeRejects(t *testing.T) {
	cases := []struct {
		name, old, new, field string
	}{
		{"unquoted createdAt is a date", "createdAt: '2026-08-01T12:05:09.007Z'", "createdAt: 2026-08-01T12:05:09.007Z", "createdAt"},
		{"offset instead of Z", "createdAt: '2026-08-01T12:05:09.007Z'", "createdAt: '2026-08-01T12:05:09.007+00:00'", "createdAt"},
		{"space separator", "createdAt: '2026-08-01T12:05:09.007Z'", "createdAt: '2026-08-01 12:05:09.007Z'", "createdAt"},
		{"lower-case z", "createdAt: '2026-08-01T12:05:09.007Z'", "createdAt: '2026-08-01T12:05:09.007z'", "createdAt"},
		{"impossible date", "createdAt: '2026-08-01T12:05:09.007Z'", "createdAt: '2026-02-29T12:05:09.007Z'", "createdAt"},
		{"hour 24", "createdAt: '2026-08-01T12:05:09.007Z'", "createdAt: '2026-08-01T24:00:00Z'", "createdAt"},
		{"createdAt missing", "createdAt: '2026-08-01T12:05:09.007Z'\n", "", "createdAt"},
		{"createdAt number", "createdAt: '2026-08-01T12:05:09.007Z'", "createdAt: 20260801", "createdAt"},
		{"id not a uuid", "id: 0a9b8c7d-6e5f-4a3b-8c2d-1e0f9a8b7c6d", "id: not-a-uuid", "id"},
		{"id version nibble 0", "id: 0a9b8c7d-6e5f-4a3b-8c2d-1e0f9a8b7c6d", "id: 0a9b8c7d-6e5f-0a3b-8c2d-1e0f9a8b7c6d", "id"},
		{"id variant c", "id: 0a9b8c7d-6e5f-4a3b-8c2d-1e0f9a8b7c6d", "id: 0a9b8c7d-6e5f-4a3b-cc2d-1e0f9a8b7c6d", "id"},
		{"id upper-case max", "id: 0a9b8c7d-6e5f-4a3b-8c2d-1e0f9a8b7c6d", "id: FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF", "id"},
		{"name with ..", "name: result", "name: a..b", "name"},
		{"name with /", "name: result", "name: a/b", "name"},
		{"name with backslash", "name: result", `name: a\b`, "name"},
		{"name with NUL", "name: result", `name: "a\0b"`, "name"},
		{"name empty", "name: result", "name: ''", "name"},
		{"name number", "name: result", "name: 207333", "name"},
		{"version zero", "version: 1", "version: 0", "version"},
		{"version fraction", "version: 1", "version: 1.5", "version"},
		{"version string", "version: 1", "version: '1'", "version"},
		{"version unsafe", "version: 1", "version: 9007199254740993", "version"},
		{"contentType empty", "contentType: application/json", "contentType: ''", "contentType"},
		{"lifetime bad", "lifetime: infinite", "lifetime: forever", "lifetime"},
		{"lifetime seconds", "lifetime: infinite", "lifetime: 10s", "lifetime"},
		{"gc zero", "garbageCollection: 30d", "garbageCollection: 0", "garbageCollection"},
		{"gc zero duration", "garbageCollection: 30d", "garbageCollection: 00d", "garbageCollection"},
		{"gc quoted count", "garbageCollection: 30d", "garbageCollection: '10'", "garbageCollection"},
		{"gc negative", "garbageCollection: 30d", "garbageCollection: -3", "garbageCollection"},
		{"streaming string", "streaming: false", "streaming: 'false'", "streaming"},
		{"streaming null", "streaming: false", "streaming: null", "streaming"},
		{"tag value number", "job: scan", "job: 123", "tags.job"},
		{"tag value bool", "job: scan", "job: true", "tags.job"},
		{"tag value null", "job: scan", "job: ~", "tags.job"},
		{"tag value date", "job: scan", "job: 2026-01-01", "tags.job"},
		{"tag value octal", "job: scan", "job: 012", "tags.job"},
		{"tags without type", "  type: resource\n", "", "tags"},
		{"tags not a map", "tags:\n  type: resource", "tags: [a]\nx:\n  type: resource", "tags"},
		{"ownerType unknown", "ownerType: model-method", "ownerType: robot", "ownerDefinition.ownerType"},
		{"ownerRef empty", "ownerRef: 9e8d7c6b-5a49-4837-a625-1403f2e1d0c9", "ownerRef: ''", "ownerDefinition.ownerRef"},
		{"ownerRef missing", "  ownerRef: 9e8d7c6b-5a49-4837-a625-1403f2e1d0c9\n", "", "ownerDefinition.ownerRef"},
		{"owner workflowId", ownerWorkflowID, "  workflowId: nope\n  workflowRunId: c8a7f6e5-d4c3-4b2a-9180-7f6e5d4c3b2a\n  workflowName", "ownerDefinition.workflowId"},
		{"owner workflowId empty", ownerWorkflowID, "  workflowId: ''\n  workflowRunId: c8a7f6e5-d4c3-4b2a-9180-7f6e5d4c3b2a\n  workflowName", "ownerDefinition.workflowId"},
		{"owner workflowRunId", ownerWorkflowID, "  workflowId: b5e1d0c4-2f3a-4b6c-8d7e-9f0a1b2c3d4e\n  workflowRunId: 1\n  workflowName", "ownerDefinition.workflowRunId"},
		{"owner definitionHash empty", "  ownerType: model-method", "  definitionHash: ''\n  ownerType: model-method", "ownerDefinition.definitionHash"},
		{"size negative", "size: 124", "size: -1", "size"},
		{"size string", "size: 124", "size: '124'", "size"},
		{"checksum number", "checksum: 11f0be56e4128d6df51f2db29d89e18ff2afbbbf6ce9f203b3e884f04780d0fa", "checksum: 123", "checksum"},
		{"lifecycle unknown", "size: 124", "size: 124\nlifecycle: gone", "lifecycle"},
		{"lifecycle empty", "size: 124", "size: 124\nlifecycle: ''", "lifecycle"},
		{"renamedTo empty", "size: 124", "size: 124\nrenamedTo: ''", "renamedTo"},
		{"id missing", "id: 0a9b8c7d-6e5f-4a3b-8c2d-1e0f9a8b7c6d\n", "", "id"},
		{"ownerDefinition missing", "ownerDefinition:", "otherThing:", "ownerDefinition"},
		{"duplicate key", "size: 124", "size: 124\nsize: 125", ""},
		{"not YAML", "size: 124", "size: [124", ""},
		{"second document", "size: 124", "size: 124\n---\na: b", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Decode(withLine(t, c.old, c.new))
			var inv *InvalidError
			if !errors.As(err, &inv) {
				t.Fatalf("error %v (%T), want *InvalidError", err, err)
			}
			if inv.Field != c.field {
				t.Errorf("field %q (%v), want %q", inv.Field, err, c.field)
			}
		})
	}
}

func TestDecodeAccepts(t *testing.T) {
	cases := []struct {
		name, old, new string
		check          func(m *Metadata) bool
	}{
		{"createdAt without seconds", "createdAt: '2026-08-01T12:05:09.007Z'", "createdAt: '2026-08-01T12:05Z'",
			func(m *Metadata) bool { return m.CreatedAt == "2026-08-01T12:05Z" }},
		{"double-quoted createdAt", "createdAt: '2026-08-01T12:05:09.007Z'", `createdAt: "2026-08-01T12:05:09.007Z"`,
			func(m *Metadata) bool { return m.CreatedAt == "2026-08-01T12:05:09.007Z" }},
		{"leap day", "createdAt: '2026-08-01T12:05:09.007Z'", "createdAt: '2000-02-29T00:00:00Z'",
			func(m *Metadata) bool { return m.CreatedAt == "2000-02-29T00:00:00Z" }},
		{"zero lifetime is workflow", "lifetime: infinite", "lifetime: 00w",
			func(m *Metadata) bool { return m.Lifetime == "workflow" }},
		{"hex version", "version: 1", "version: 0x3", func(m *Metadata) bool { return m.Version == 3 }},
		{"float-spelled version", "version: 1", "version: 2.0", func(m *Metadata) bool { return m.Version == 2 }},
		{"octal size", "size: 124", "size: 012", func(m *Metadata) bool { return *m.Size == 10 }},
		{"no streaming key", "streaming: false\n", "", func(m *Metadata) bool { return !m.Streaming }},
		{"unknown keys dropped", "size: 124", "size: 124\nfuture: {a: 1}", func(m *Metadata) bool { return *m.Size == 124 }},
		{"numeric tag keys reordered", "  type: resource", "  type: resource\n  42: answer\n  '7': seven",
			func(m *Metadata) bool {
				return m.Tags[0].Key == "7" && m.Tags[1].Key == "42" && m.Tags[2].Key == "type"
			}},
		{"block scalar tag", "job: scan", "job: |-\n    multi\n    line",
			func(m *Metadata) bool { v, _ := m.Tags.Get("job"); return v == "multi\nline" }},
		{"folded tag", "job: scan", "job: >-\n    folded\n    text",
			func(m *Metadata) bool { v, _ := m.Tags.Get("job"); return v == "folded text" }},
		{"nil uuid", "id: 0a9b8c7d-6e5f-4a3b-8c2d-1e0f9a8b7c6d", "id: 00000000-0000-0000-0000-000000000000",
			func(m *Metadata) bool { return m.ID == "00000000-0000-0000-0000-000000000000" }},
		{"max uuid lower-case", "id: 0a9b8c7d-6e5f-4a3b-8c2d-1e0f9a8b7c6d", "id: ffffffff-ffff-ffff-ffff-ffffffffffff",
			func(m *Metadata) bool { return m.ID == "ffffffff-ffff-ffff-ffff-ffffffffffff" }},
		{"empty checksum reads as absent", "checksum: 11f0be56e4128d6df51f2db29d89e18ff2afbbbf6ce9f203b3e884f04780d0fa", "checksum: ''",
			func(m *Metadata) bool { return m.Checksum == "" }},
		{"name latest is readable", "name: result", "name: latest", func(m *Metadata) bool { return m.Name == "latest" }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := Decode(withLine(t, c.old, c.new))
			if err != nil {
				t.Fatal(err)
			}
			if !c.check(m) {
				t.Errorf("unexpected %+v", m)
			}
		})
	}
}

func TestDecodeEmptyAndShape(t *testing.T) {
	for _, src := range []string{"", " ", "\n\n", " \t\r\n"} {
		if _, err := Decode([]byte(src)); !errors.Is(err, ErrEmpty) {
			t.Errorf("%q: %v, want ErrEmpty", src, err)
		}
	}
	for _, src := range []string{"# comment\n", "null\n", "- a\n", "just text\n", "---\n"} {
		_, err := Decode([]byte(src))
		var inv *InvalidError
		if !errors.As(err, &inv) || errors.Is(err, ErrEmpty) {
			t.Errorf("%q: %v, want *InvalidError", src, err)
		}
	}
}

func TestErrorMessages(t *testing.T) {
	_, err := Decode(withLine(t, "createdAt: '2026-08-01T12:05:09.007Z'", "createdAt: 2026-08-01T12:05:09.007Z"))
	if want := `metadata.yaml: field "createdAt": must be a quoted ISO-8601 UTC timestamp`; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("message %q, want prefix %q", err, want)
	}
	if got := (&InvalidError{Reason: "not valid YAML"}).Error(); got != "metadata.yaml: not valid YAML" {
		t.Errorf("document-level message %q", got)
	}
}

func TestValidateAndEncodeRefuse(t *testing.T) {
	cases := map[string]func(m *Metadata){
		"both gc forms": func(m *Metadata) { m.GarbageCollection = GarbageCollection{N: 3, Duration: "3d"} },
		"no gc":         func(m *Metadata) { m.GarbageCollection = GarbageCollection{} },
		"duplicate tag": func(m *Metadata) { m.Tags = append(m.Tags, Tag{"type", "file"}) },
		"duplicate of 40": func(m *Metadata) {
			for i := range 40 {
				m.Tags = append(m.Tags, Tag{fmt.Sprintf("k%d", i), "v"})
			}
			m.Tags = append(m.Tags, Tag{"k7", "again"})
		},
		"duplicate late":  func(m *Metadata) { m.Tags = append(m.Tags, Tag{"a", "1"}, Tag{"b", "2"}, Tag{"a", "3"}) },
		"invalid utf8":    func(m *Metadata) { m.Tags = append(m.Tags, Tag{"x", "\xff"}) },
		"lifecycle other": func(m *Metadata) { m.Lifecycle = "archived" },
		"size negative":   func(m *Metadata) { m.Size = int64p(-1) },
		"createdAt local": func(m *Metadata) { m.CreatedAt = "2026-08-01T12:00:00" },
	}
	for name, mutate := range cases {
		m := exampleModelMethod()
		mutate(m)
		if err := Validate(m); err == nil {
			t.Errorf("%s: Validate accepted", name)
		}
		if _, err := Encode(m); err == nil {
			t.Errorf("%s: Encode accepted", name)
		}
	}
	if err := Validate(nil); err == nil {
		t.Error("Validate(nil) accepted")
	}
}

func TestValidateDataName(t *testing.T) {
	ok := []string{"result", "result-prod", "207333", "latest2", "a:b", "x*?<>|", "CON", "trailing. ", "日本語", "ſatest", ".hidden", "a.b"}
	bad := []string{"", "latest", "LATEST", "Latest", "..", "a..b", "a/b", `a\b`, "a\x00b", "\xff"}
	for _, n := range ok {
		if err := ValidateDataName(n); err != nil {
			t.Errorf("%q refused: %v", n, err)
		}
	}
	for _, n := range bad {
		if err := ValidateDataName(n); err == nil {
			t.Errorf("%q accepted", n)
		}
	}
}

func TestNormalizeType(t *testing.T) {
	cases := map[string]string{
		"AWS::EC2::VPC":                     "aws/ec2/vpc",
		"@myorg/foo-bar":                    "@myorg/foo-bar",
		"docker run":                        "docker/run",
		"Microsoft.Resources/resourceGroup": "microsoft/resources/resourcegroup",
		"  swamp/echo \n":                   "swamp/echo",
		"command/shell":                     "command/shell",
		"a:b":                               "a:b",
		"a:::b":                             "a/:b",
		"//a///b//":                         "a/b",
		"a \t\n b":                          "a/b",
		"a\u00a0b\u3000c\ufeffd":            "a/b/c/d",
		"a\u0085b":                          "a\u0085b",
		"..a..":                             "a",
		"ΟΔΟΣ":                              "οδος",
		"ΟΔΟΣ.X":                            "οδοσ/x", // the dot is case-ignorable: not a final sigma
		"İ":                                 "i\u0307",
		"\U00010D50X":                       "\U00010D70x", // Garay: a Unicode 16 case pair Go's tables lack
		"":                                  "",
		"  ":                                "",
		"/":                                 "",
	}
	for in, want := range cases {
		if got := NormalizeType(in); got != want {
			t.Errorf("NormalizeType(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestTimes(t *testing.T) {
	now := NowISO()
	if !regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`).MatchString(now) {
		t.Errorf("NowISO %q", now)
	}
	if parsed, err := time.Parse(time.RFC3339, now); err != nil || time.Since(parsed) > time.Minute {
		t.Errorf("NowISO %q: %v", now, err)
	}
	if _, err := Decode(withLine(t, "createdAt: '2026-08-01T12:05:09.007Z'", "createdAt: '"+now+"'")); err != nil {
		t.Errorf("NowISO value refused by Decode: %v", err)
	}

	cases := map[string]string{
		"2026-08-01T12:00:00.000Z":          "2026-08-01T12:00:00.000Z",
		"2026-08-01T12:00:00Z":              "2026-08-01T12:00:00.000Z",
		"2026-08-01T12:00Z":                 "2026-08-01T12:00:00.000Z",
		"2026-08-01T12:00:00.1Z":            "2026-08-01T12:00:00.100Z",
		"2026-08-01T12:00:00.12Z":           "2026-08-01T12:00:00.120Z",
		"2026-08-01T12:00:00.05Z":           "2026-08-01T12:00:00.050Z",
		"2026-08-01T12:00:00.1234Z":         "2026-08-01T12:00:00.123Z",
		"2026-08-01T12:00:00.123456Z":       "2026-08-01T12:00:00.123Z",
		"2026-08-01T12:00:00.9999999999Z":   "2026-08-01T12:00:00.999Z",
		"2026-08-01T12:00:00.0001234Z":      "2026-08-01T12:00:00.000Z",
		"2026-08-01T12:00:00.000123456789Z": "2026-08-01T12:00:00.123Z", // V8 quirk
		"0000-01-01T00:00:00Z":              "0000-01-01T00:00:00.000Z",
	}
	for in, want := range cases {
		got, err := CatalogTime(in)
		if err != nil || got != want {
			t.Errorf("CatalogTime(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "2026-08-01", "2026-08-01T12:00:00+00:00", "2026-08-01 12:00:00Z", "2026-02-30T00:00Z"} {
		if _, err := CatalogTime(in); err == nil {
			t.Errorf("CatalogTime(%q) accepted", in)
		}
	}
}

func TestTagsJSON(t *testing.T) {
	cases := []struct {
		tags Tags
		want string
	}{
		{exampleModelMethod().Tags, `{"type":"resource","specName":"result","modelName":"hello-shell"}`},
		{nil, `{}`},
		{Tags{{"type", "x"}, {"10", "a"}, {"2", "b"}, {"02", "c"}}, `{"2":"b","10":"a","type":"x","02":"c"}`},
		{Tags{{"k", "a\"b\\c/d<e>f&g"}}, `{"k":"a\"b\\c/d<e>f&g"}`},
		{Tags{{"k", "\b\f\n\r\t\x00\x1f\x7f"}}, `{"k":"\b\f\n\r\t\u0000\u001f` + "\x7f" + `"}`},
		{Tags{{"k", "\u2028\u2029é😀"}}, `{"k":"` + "\u2028\u2029é😀" + `"}`},
		{Tags{{"a", "1"}, {"a", "2"}}, `{"a":"2"}`},
	}
	for _, c := range cases {
		if got := TagsJSON(c.tags); got != c.want {
			t.Errorf("TagsJSON(%v) = %s, want %s", c.tags, got, c.want)
		}
	}
}
