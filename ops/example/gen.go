// Package example writes swamp repos in swamp's exact on-disk layout
// (swamp-format §1.2, §2): `.swamp.yaml`, versioned data items with their
// `latest` pointers and byte-exact metadata.yaml files (ops/meta.Encode), and
// the runtime directories beside them. Everything it writes is deterministic:
// ids, timestamps and contents come from fixed values or a seeded generator,
// so the same call writes the same bytes.
//
// It writes the data tree only; the catalog is built from that tree by
// swampj's own rebuild (cmd/mkswamp does that), so the two always agree.
//
// Two shapes:
//
//   - Write: a small, hand-designed repo with the cases that matter (several
//     model types, several versions per item, a purely numeric data name,
//     workflow-step outputs of two steps writing the same item, outputs,
//     workflow runs, secrets, audit). It is testdata/example-repo.
//   - Synthetic: many items × many versions, for benchmarks.
//
// Files are created exclusively (never overwriting) through fsx and not
// fsynced: this is a test-data generator, not a datastore writer.
package example

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"time"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/meta"
)

// SwampVersion is the swamp build the generated repos claim (the one issue
// #3955 was reported against).
const SwampVersion = "20261022.021804.0-sha.983e2929"

// writer creates files and directories under one root, never replacing.
type writer struct {
	fsys fsx.FS
	made map[string]bool // directories known to exist
}

func newWriter(fsys fsx.FS) *writer {
	if fsys == nil {
		fsys = fsx.Real()
	}
	return &writer{fsys: fsys, made: map[string]bool{}}
}

// mkdirAll creates dir and its missing parents (no fsync).
func (w *writer) mkdirAll(dir string) error {
	if w.made[dir] {
		return nil
	}
	fi, err := w.fsys.Stat(dir)
	switch {
	case err == nil && fi.IsDir():
		w.made[dir] = true
		return nil
	case err == nil:
		return fmt.Errorf("%s exists and is not a directory", dir)
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	if parent := filepath.Dir(dir); parent != dir {
		if err := w.mkdirAll(parent); err != nil {
			return err
		}
	}
	if err := w.fsys.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	w.made[dir] = true
	return nil
}

// file writes a new file; it fails if the file exists.
func (w *writer) file(path string, data []byte) error {
	if err := w.mkdirAll(filepath.Dir(path)); err != nil {
		return err
	}
	f, err := w.fsys.Create(path, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Version is one data version to write.
type Version struct {
	Type    string // normalised model type, "/"-separated
	ModelID string
	// Meta is the metadata; Name and Version must be set. Size and
	// Checksum are filled in from Raw, as swamp's save does (swamp-format §2.6.2).
	Meta *meta.Metadata
	Raw  []byte
}

// writeVersion writes {dataRoot}/{type}/{modelId}/{name}/{N}/metadata.yaml
// then raw, swamp's order (swamp-format §2.6.2 steps 6–7).
func (w *writer) writeVersion(dataRoot string, v Version) error {
	size := int64(len(v.Raw))
	sum := sha256.Sum256(v.Raw)
	v.Meta.Size = &size
	v.Meta.Checksum = hex.EncodeToString(sum[:])
	md, err := meta.Encode(v.Meta)
	if err != nil {
		return fmt.Errorf("encoding %s/%s/%s v%d: %w", v.Type, v.ModelID, v.Meta.Name, v.Meta.Version, err)
	}
	dir := filepath.Join(itemDir(dataRoot, v.Type, v.ModelID, v.Meta.Name), strconv.FormatInt(v.Meta.Version, 10))
	if err := w.file(filepath.Join(dir, "metadata.yaml"), md); err != nil {
		return err
	}
	return w.file(filepath.Join(dir, "raw"), v.Raw)
}

// writeLatest writes the `latest` pointer: the decimal number, no newline
// (swamp-format §2.5).
func (w *writer) writeLatest(dataRoot, typ, modelID, name string, n int64) error {
	return w.file(filepath.Join(itemDir(dataRoot, typ, modelID, name), "latest"), []byte(strconv.FormatInt(n, 10)))
}

func itemDir(dataRoot, typ, modelID, name string) string {
	return filepath.Join(dataRoot, filepath.FromSlash(typ), modelID, name)
}

// swampYAML is .swamp.yaml as `swamp repo init` leaves it (swamp-format §1.2.1, first
// example): no datastore block, so the datastore is {repo}/.swamp, solo.
func swampYAML(initializedAt, repoID string) []byte {
	return []byte("swampVersion: " + SwampVersion + "\n" +
		"initializedAt: \"" + initializedAt + "\"\n" +
		"repoId: " + repoID + "\n" +
		"tools:\n" +
		"  - claude\n" +
		"gitignoreManaged: true\n")
}

// uuids hands out deterministic RFC 4122 version-4 UUIDs.
type uuids struct{ rng *rand.Rand }

func newUUIDs(seed uint64) *uuids {
	return &uuids{rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

func (u *uuids) next() string {
	var b [16]byte
	for i := range b {
		b[i] = byte(u.rng.Uint32())
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// iso is JavaScript's toISOString (swamp-format §2.4): UTC, milliseconds, Z.
func iso(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// resourceMeta is a model-method resource's metadata (swamp-format §2.4.2 A).
func resourceMeta(id, name string, version int64, modelName, defID, createdAt string) *meta.Metadata {
	return &meta.Metadata{
		ID: id, Name: name, Version: version,
		ContentType:       "application/json",
		Lifetime:          "infinite",
		GarbageCollection: meta.GarbageCollection{N: 10},
		Tags: meta.Tags{
			{Key: "type", Value: "resource"},
			{Key: "specName", Value: name},
			{Key: "modelName", Value: modelName},
		},
		Owner:     meta.Owner{OwnerType: "model-method", OwnerRef: defID},
		CreatedAt: createdAt,
	}
}

// StepRun names the workflow step that wrote a version (swamp-format §7.1).
type StepRun struct {
	Workflow, WorkflowID, RunID, Job, Step string
}

// stepOutput turns m into a workflow-step output (swamp-format §2.4.2 B, swamp-format §7.1): the
// workflow tags appended after modelName in the order source, workflow,
// workflowId, workflowRunId, job, step, mirrored into ownerDefinition.
func stepOutput(m *meta.Metadata, s StepRun) *meta.Metadata {
	m.Tags = append(m.Tags,
		meta.Tag{Key: "source", Value: "step-output"},
		meta.Tag{Key: "workflow", Value: s.Workflow},
		meta.Tag{Key: "workflowId", Value: s.WorkflowID},
		meta.Tag{Key: "workflowRunId", Value: s.RunID},
		meta.Tag{Key: "job", Value: s.Job},
		meta.Tag{Key: "step", Value: s.Step},
	)
	m.Owner.WorkflowID = s.WorkflowID
	m.Owner.WorkflowRunID = s.RunID
	m.Owner.WorkflowName = s.Workflow
	m.Owner.JobName = s.Job
	m.Owner.StepName = s.Step
	m.Owner.Source = "step-output"
	return m
}

// shellRaw is the built-in command/shell model's `result` resource as swamp
// stores it: compact JSON, no trailing newline (swamp-format §2.4.2).
func shellRaw(executedAt, command, stdout string, durationMs int) []byte {
	return fmt.Appendf(nil, `{"exitCode":0,"executedAt":%q,"command":%q,"durationMs":%d,"stdout":%q,"stderr":""}`,
		executedAt, command, durationMs, stdout)
}
