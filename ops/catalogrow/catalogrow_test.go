package catalogrow_test

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/swampj/swampj/catalog"
	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/catalogrow"
	"github.com/swampj/swampj/ops/meta"
)

// swamp-format §2.4.2 example B: a workflow-step output.
func stepOutputMeta() *meta.Metadata {
	size := int64(124)
	return &meta.Metadata{
		ID:                "0a9b8c7d-6e5f-4a3b-8c2d-1e0f9a8b7c6d",
		Name:              "result",
		Version:           1,
		ContentType:       "application/json",
		Lifetime:          "infinite",
		GarbageCollection: meta.GarbageCollection{Duration: "30d"},
		Tags: meta.Tags{
			{Key: "type", Value: "resource"},
			{Key: "specName", Value: "result"},
			{Key: "modelName", Value: "scan-shell"},
			{Key: "source", Value: "step-output"},
			{Key: "workflow", Value: "nightly-scan"},
			{Key: "workflowId", Value: "b5e1d0c4-2f3a-4b6c-8d7e-9f0a1b2c3d4e"},
			{Key: "workflowRunId", Value: "c8a7f6e5-d4c3-4b2a-9180-7f6e5d4c3b2a"},
			{Key: "job", Value: "scan"},
			{Key: "step", Value: "run-shell"},
		},
		Owner: meta.Owner{
			OwnerType:     "model-method",
			OwnerRef:      "9e8d7c6b-5a49-4837-a625-1403f2e1d0c9",
			WorkflowID:    "b5e1d0c4-2f3a-4b6c-8d7e-9f0a1b2c3d4e",
			WorkflowRunID: "c8a7f6e5-d4c3-4b2a-9180-7f6e5d4c3b2a",
			WorkflowName:  "nightly-scan",
			JobName:       "scan",
			StepName:      "run-shell",
			Source:        "step-output",
		},
		CreatedAt: "2026-08-01T12:05:09.007Z",
		Size:      &size,
		Checksum:  "11f0be56e4128d6df51f2db29d89e18ff2afbbbf6ce9f203b3e884f04780d0fa",
	}
}

func TestFromMetaMapsEveryColumn(t *testing.T) {
	got, err := catalogrow.FromMeta("infra", "command/shell", "9e8d7c6b-5a49-4837-a625-1403f2e1d0c9", stepOutputMeta())
	if err != nil {
		t.Fatal(err)
	}
	want := catalog.Row{
		Namespace:      "infra",
		TypeNormalized: "command/shell",
		ModelID:        "9e8d7c6b-5a49-4837-a625-1403f2e1d0c9",
		DataName:       "result",
		ID:             "0a9b8c7d-6e5f-4a3b-8c2d-1e0f9a8b7c6d",
		Version:        1,
		ModelName:      "scan-shell",
		SpecName:       "result",
		DataType:       "resource",
		ContentType:    "application/json",
		Lifetime:       "infinite",
		OwnerType:      "model-method",
		Size:           124,
		CreatedAt:      "2026-08-01T12:05:09.007Z",
		Tags: `{"type":"resource","specName":"result","modelName":"scan-shell","source":"step-output",` +
			`"workflow":"nightly-scan","workflowId":"b5e1d0c4-2f3a-4b6c-8d7e-9f0a1b2c3d4e",` +
			`"workflowRunId":"c8a7f6e5-d4c3-4b2a-9180-7f6e5d4c3b2a","job":"scan","step":"run-shell"}`,
		OwnerRef:      "9e8d7c6b-5a49-4837-a625-1403f2e1d0c9",
		WorkflowRunID: "c8a7f6e5-d4c3-4b2a-9180-7f6e5d4c3b2a",
		WorkflowName:  "nightly-scan",
		JobName:       "scan",
		StepName:      "run-shell",
		Source:        "step-output",
	}
	if got != want {
		t.Fatalf("FromMeta:\n got  %+v\n want %+v", got, want)
	}

	// Written and read back unchanged.
	ctx := context.Background()
	c, err := catalog.Open(ctx, fsx.Real(), filepath.Join(t.TempDir(), ".swamp", "data", "_catalog.db"), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if err := c.UpsertNewVersion(ctx, got); err != nil {
		t.Fatal(err)
	}
	want.IsLatest = true
	if rs, err := c.Rows(ctx, "infra"); err != nil || !reflect.DeepEqual(rs, []catalog.Row{want}) {
		t.Fatalf("round trip: %+v %v", rs, err)
	}
}

func TestFromMetaDefaults(t *testing.T) {
	m := &meta.Metadata{ID: "x", Name: "n", Version: 2, CreatedAt: "2026-08-01T12:00:00Z", Streaming: true}
	got, err := catalogrow.FromMeta("", "t", "m", m)
	if err != nil {
		t.Fatal(err)
	}
	// Missing tags/owner fields are '', a missing size is 0, created_at is
	// normalised to milliseconds (swamp-format §3.4), tags of no tags is {}.
	if got.ModelName != "" || got.SpecName != "" || got.DataType != "" || got.OwnerType != "" ||
		got.Size != 0 || !got.Streaming || got.CreatedAt != "2026-08-01T12:00:00.000Z" || got.Tags != "{}" {
		t.Fatalf("defaults: %+v", got)
	}
	if _, err := catalogrow.FromMeta("", "t", "m", &meta.Metadata{Name: "n", CreatedAt: "yesterday"}); catalog.ErrorCode(err) != catalog.CodeInvalidRow {
		t.Fatalf("bad createdAt: %v", err)
	}
}
