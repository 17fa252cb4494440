package example_test

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/example"
)

// specA and specB are swamp-format §2.4.2 examples A and B, byte for byte.
const specA = `id: 7d3f2c1e-9a4b-4c2d-8e1f-0a1b2c3d4e5f
name: result
version: 3
contentType: application/json
lifetime: infinite
garbageCollection: 10
streaming: false
tags:
  type: resource
  specName: result
  modelName: hello-shell
ownerDefinition:
  ownerType: model-method
  ownerRef: 3f9c2b7e-5a1d-4e8f-9b6c-0d2e4f6a8b1c
createdAt: '2026-08-01T12:00:00.000Z'
size: 124
checksum: 11f0be56e4128d6df51f2db29d89e18ff2afbbbf6ce9f203b3e884f04780d0fa
`

const specB = `id: 0a9b8c7d-6e5f-4a3b-8c2d-1e0f9a8b7c6d
name: result
version: 1
contentType: application/json
lifetime: infinite
garbageCollection: 30d
streaming: false
tags:
  type: resource
  specName: result
  modelName: scan-shell
  source: step-output
  workflow: nightly-scan
  workflowId: b5e1d0c4-2f3a-4b6c-8d7e-9f0a1b2c3d4e
  workflowRunId: c8a7f6e5-d4c3-4b2a-9180-7f6e5d4c3b2a
  job: scan
  step: run-shell
ownerDefinition:
  ownerType: model-method
  ownerRef: 9e8d7c6b-5a49-4837-a625-1403f2e1d0c9
  workflowId: b5e1d0c4-2f3a-4b6c-8d7e-9f0a1b2c3d4e
  workflowRunId: c8a7f6e5-d4c3-4b2a-9180-7f6e5d4c3b2a
  workflowName: nightly-scan
  jobName: scan
  stepName: run-shell
  source: step-output
createdAt: '2026-08-01T12:05:09.007Z'
size: 124
checksum: 11f0be56e4128d6df51f2db29d89e18ff2afbbbf6ce9f203b3e884f04780d0fa
`

const specRaw = `{"exitCode":0,"executedAt":"2026-08-01T12:00:00.000Z","command":"echo hello","durationMs":12,"stdout":"hello\n","stderr":""}`

func TestExampleHoldsTheSpecExamplesByteForByte(t *testing.T) {
	dir := t.TempDir()
	if _, err := example.Write(fsx.Real(), dir); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, ".swamp", "data", "command", "shell")
	for _, c := range []struct{ path, want string }{
		{filepath.Join(data, example.HelloShell, "result", "3", "metadata.yaml"), specA},
		{filepath.Join(data, example.HelloShell, "result", "3", "raw"), specRaw},
		{filepath.Join(data, example.HelloShell, "result", "latest"), "3"},
		{filepath.Join(data, example.ScanShell, "result", "1", "metadata.yaml"), specB},
		{filepath.Join(data, example.ScanShell, "result", "1", "raw"), specRaw},
	} {
		got, err := os.ReadFile(c.path)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != c.want {
			t.Fatalf("%s:\n got  %q\n want %q", c.path, got, c.want)
		}
	}
}

// tree maps every file below dir to its content.
func tree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[rel] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestGeneratorsAreDeterministic(t *testing.T) {
	for name, write := range map[string]func(string) error{
		"example": func(d string) error { _, err := example.Write(fsx.Real(), d); return err },
		"synthetic": func(d string) error {
			_, err := example.Synthetic(fsx.Real(), d, example.SyntheticOptions{Items: 23, Versions: 3, Seed: 9})
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			a, b := t.TempDir(), t.TempDir()
			if err := write(a); err != nil {
				t.Fatal(err)
			}
			if err := write(b); err != nil {
				t.Fatal(err)
			}
			ta, tb := tree(t, a), tree(t, b)
			if len(ta) != len(tb) || len(ta) == 0 {
				t.Fatalf("%d files vs %d", len(ta), len(tb))
			}
			for p, content := range ta {
				if !bytes.Equal(content, tb[p]) {
					t.Fatalf("%s differs between two runs", p)
				}
			}
		})
	}
}

func TestSyntheticCounts(t *testing.T) {
	dir := t.TempDir()
	st, err := example.Synthetic(fsx.Real(), dir, example.SyntheticOptions{Items: 12, Versions: 4})
	if err != nil {
		t.Fatal(err)
	}
	if st.Items != 12 || st.Versions != 48 {
		t.Fatalf("%+v", st)
	}
	n := 0
	for p := range tree(t, dir) {
		if filepath.Base(p) == "metadata.yaml" {
			n++
		}
	}
	if n != 48 {
		t.Fatalf("%d metadata files, want 48", n)
	}
	// It refuses to overwrite.
	if _, err := example.Synthetic(fsx.Real(), dir, example.SyntheticOptions{Items: 12, Versions: 4}); err == nil {
		t.Fatal("writing over an existing repo must fail")
	}
}
