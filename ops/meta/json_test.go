package meta

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

func TestJSONKeepsSwampKeyOrder(t *testing.T) {
	b, err := os.ReadFile("../../testdata/golden/metadata-workflow-step.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	out := string(m.JSON())
	if !json.Valid([]byte(out)) {
		t.Fatalf("not JSON: %s", out)
	}
	order := []string{`"id"`, `"name"`, `"version"`, `"contentType"`, `"lifetime"`, `"garbageCollection":"30d"`, `"streaming":false`,
		`"tags":{"type":"resource"`, `"ownerDefinition":{"ownerType"`, `"createdAt"`, `"size":124`, `"checksum"`}
	last := -1
	for _, k := range order {
		i := strings.Index(out, k)
		if i < 0 || i < last {
			t.Fatalf("%s missing or out of order in %s", k, out)
		}
		last = i
	}
	if (*Metadata)(nil).JSON() == nil || string((*Metadata)(nil).JSON()) != "null" {
		t.Fatal("nil metadata must render as null")
	}
}
