package protocol

// The catalog-publish step kind: the catalog half of a versioned write
// (ops/write/write.go).

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/swampj/swampj/catalog"
	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/catalogrow"
	"github.com/swampj/swampj/ops/internal/engine"
	"github.com/swampj/swampj/ops/meta"
	"github.com/swampj/swampj/ops/store"
)

// KindCatalogPublish is the catalog step of a versioned write: the
// upsert-versions change of CatalogStep, except that a row journaled with
// Size < 0 (a stream whose size was unknown at plan time) is completed from
// the published version's metadata.yaml before it is written, so recovery
// writes the same row the live run would. Observe and undo are the plain
// catalog step's.
//
// To is the data root the rows' versions live under.
const KindCatalogPublish = "catalog-publish"

func observePublish(ctx context.Context, env *engine.Env, s *journal.Step) (engine.Observation, string, error) {
	return observeCatalog(ctx, env, asCatalogStep(s, nil))
}

func undoPublish(ctx context.Context, env *engine.Env, s *journal.Step, d *engine.Dirty) error {
	return undoCatalog(ctx, env, asCatalogStep(s, nil), d)
}

// asCatalogStep is the plain catalog step this one delegates to.
func asCatalogStep(s *journal.Step, change []byte) *journal.Step {
	inner := *s
	inner.Kind = KindCatalog
	if change != nil {
		inner.Catalog = change
	}
	return &inner
}

func applyPublish(ctx context.Context, env *engine.Env, s *journal.Step, d *engine.Dirty) error {
	_, change, err := completedChange(env, s)
	if err != nil {
		return err
	}
	return applyCatalog(ctx, env, asCatalogStep(s, change), d)
}

// applyPublishBelow is applyPublish for a write a later one was published
// on top of (engine.Kind.ApplyBelow): its rows go in below the later
// version, whose row keeps the latest flags (catalog.UpsertVersionsBelow).
//
// Only when a later intent this recovery drives next writes a row of each
// of these items (a write handle's parked intents of one item, whose rows
// one power cut took together): that intent's row then takes the flags.
// Otherwise the later version was written by someone else (swamp), whose
// row may be missing too, and the catalog is left to a rebuild.
func applyPublishBelow(ctx context.Context, env *engine.Env, s *journal.Step, _ *engine.Dirty) error {
	ch, _, err := completedChange(env, s)
	if err != nil {
		return err
	}
	if ch.Op != "upsert-versions" {
		return fmt.Errorf("catalog-publish step holds a %q change", ch.Op)
	}
	later := laterRows(env.Later)
	for _, r := range ch.Rows {
		if !later[r.Key()] {
			return fmt.Errorf("a later version of %s/%s/%s was published on top of this intent's version %d, and no intent recovered after this one writes its catalog row",
				r.TypeNormalized, r.ModelID, r.DataName, r.Version)
		}
	}
	c, err := CatalogOf(ctx, env)
	if err != nil {
		return err
	}
	return c.UpsertVersionsBelow(ctx, ch.Rows)
}

// completedChange is the step's change with every row of unknown size
// completed from its published version (and, if any was, the change
// encoded again; nil otherwise).
func completedChange(env *engine.Env, s *journal.Step) (*CatalogChange, []byte, error) {
	ch, err := DecodeChange(s)
	if err != nil {
		return ch, nil, err
	}
	completed := false
	for i, row := range ch.Rows {
		if row.Size >= 0 {
			continue
		}
		full, err := publishedRow(env.FS, s.To, row)
		if err != nil {
			return ch, nil, err
		}
		ch.Rows[i], completed = full, true
	}
	var change []byte
	if completed {
		if change, err = json.Marshal(ch); err != nil {
			return ch, nil, err
		}
	}
	return ch, change, nil
}

// preparePublish runs the catalog transaction of a publish up to its
// COMMIT, when every row is known from the journal (a stream's row waits
// for the published metadata, so it is not prepared).
func preparePublish(ctx context.Context, env *engine.Env, s *journal.Step) (engine.Prepared, bool, error) {
	ch, err := DecodeChange(s)
	if err != nil || ch.Op != "upsert-versions" {
		return nil, false, err
	}
	for _, row := range ch.Rows {
		if row.Size < 0 {
			return nil, false, nil
		}
	}
	c, err := CatalogOf(ctx, env)
	if err != nil {
		return nil, false, err
	}
	p, err := c.PrepareUpsertVersions(ctx, ch.Rows)
	if err != nil {
		return nil, false, err
	}
	return p, true, nil
}

// publishedRow builds a row from the metadata.yaml of the version it names,
// under dataRoot. The stage step has verified that version before (its
// metadata and raw agree), so the row is exactly what the live run wrote.
func publishedRow(fsys fsx.FS, dataRoot string, row catalog.Row) (catalog.Row, error) {
	dir := filepath.Join(dataRoot, filepath.FromSlash(row.TypeNormalized), row.ModelID, row.DataName, strconv.FormatInt(row.Version, 10))
	data, err := fsys.ReadFile(filepath.Join(dir, store.MetadataFileName))
	if err != nil {
		return row, fmt.Errorf("reading the published version for its catalog row: %w", err)
	}
	m, err := meta.Decode(data)
	if err != nil {
		return row, fmt.Errorf("%s: %w", filepath.Join(dir, store.MetadataFileName), err)
	}
	if m.ID != row.ID || m.Version != row.Version {
		return row, fmt.Errorf("%s holds version %d id %s, the journal planned version %d id %s",
			dir, m.Version, m.ID, row.Version, row.ID)
	}
	return catalogrow.FromMeta(row.Namespace, row.TypeNormalized, row.ModelID, m)
}

// laterRows are the items whose rows the catalog-publish steps of the
// given intents write.
func laterRows(later []*journal.Intent) map[catalog.ItemKey]bool {
	keys := map[catalog.ItemKey]bool{}
	for _, in := range later {
		for i := range in.Steps {
			if in.Steps[i].Kind != KindCatalogPublish {
				continue
			}
			if ch, err := DecodeChange(&in.Steps[i]); err == nil {
				for _, r := range ch.Rows {
					keys[r.Key()] = true
				}
			}
		}
	}
	return keys
}
