package migrate

// Namespace set, unset and list (swamp-format §1.5.2–§1.5.4), and the pieces
// every mutating namespace command shares with Migrate (migrate.go): the
// journal held for the whole run, open intents finished first, and the
// remove-file step that lets `unset --migrate` drop the manifest inside the
// same intent as the moves.
//
// Like swamp, set and unset move no data and take no swamp lock; unlike
// swamp, each is one journaled intent, so .swamp.yaml and the manifest
// change together or not at all, and durably.

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/swampj/swampj/ops/catalogsync"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/internal/protocol"
	"github.com/swampj/swampj/ops/report"

	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/jsfmt"
	"github.com/swampj/swampj/ops/repo"
)

// NamespaceOptions configure SetNamespace and UnsetNamespace.
type NamespaceOptions struct {
	// Common is the file system, the journal lock's timeout, the command
	// recorded as the lock holder and in the intent, and the logger (the
	// executor's step records at level Debug).
	host.Common
	// Catalog serves catalog steps of open intents finished first (nil: the
	// repo's own catalog).
	Catalog *catalogsync.Handle
	// Getenv looks up SWAMP_DATASTORE when the configuration is reloaded
	// after open intents were finished (nil: the process environment).
	Getenv func(string) string
	// Now is the clock for the manifest's registeredAt (nil: time.Now).
	Now func() time.Time
}

// SetResult is what `namespace set` did. The first four fields are swamp's
// JSON (datastore_namespace_set.ts:46-57).
type SetResult struct {
	Namespace     string `json:"namespace"`
	DatastorePath string `json:"datastorePath"`
	Warning       string `json:"warning"`
	// WarningRemedy is the action Warning advises (the CLI appends its
	// command to the warning, in text and JSON alike).
	WarningRemedy       report.Remedy          `json:"-"`
	RegistrationSkipped bool                   `json:"registrationSkipped"`
	PreviousNamespace   string                 `json:"previousNamespace,omitempty"`
	IntentID            uint64                 `json:"intentId"`
	Recovered           []report.IntentOutcome `json:"recovered,omitempty"`
}

// UnsetResult is what `namespace unset` (without --migrate) did.
type UnsetResult struct {
	PreviousNamespace string                 `json:"previousNamespace"`
	IntentID          uint64                 `json:"intentId"`
	Recovered         []report.IntentOutcome `json:"recovered,omitempty"`
}

// NamespaceEntry is one registered namespace (swamp's list JSON).
type NamespaceEntry struct {
	Namespace    string `json:"namespace"`
	RepoID       string `json:"repoId"`
	RegisteredAt string `json:"registeredAt"`
	IsCurrent    bool   `json:"isCurrent"`
}

// NamespaceListing is `namespace list` (swamp-format §1.5.4); CurrentNamespace is
// omitted when none is configured, as swamp omits it.
type NamespaceListing struct {
	Namespaces       []NamespaceEntry `json:"namespaces"`
	CurrentNamespace string           `json:"currentNamespace,omitempty"`
}

// ListNamespaceManifests lists the manifests under the datastore base and
// marks the configured namespace. Read-only.
func ListNamespaceManifests(r *repo.Repo, c host.Common) (*NamespaceListing, error) {
	fsys := c.Disk()
	if err := repo.RefuseUnknownFormat(fsys, r.Base, false, nil); err != nil {
		return nil, err
	}
	ms, err := repo.ListNamespaces(fsys, r.Base)
	if err != nil {
		return nil, err
	}
	out := &NamespaceListing{Namespaces: []NamespaceEntry{}, CurrentNamespace: r.Namespace}
	for _, m := range ms {
		out.Namespaces = append(out.Namespaces, NamespaceEntry{Namespace: m.Namespace, RepoID: m.RepoID,
			RegisteredAt: m.RegisteredAt, IsCurrent: r.Namespace != "" && m.Namespace == r.Namespace})
	}
	return out, nil
}

// SetNamespace is `namespace set SLUG`: one intent that creates {base}/{slug}
// if missing, rewrites .swamp.yaml (swampyaml.EditNamespace) and writes the
// manifest {base}/{slug}/.namespace.json. It moves no data.
func SetNamespace(ctx context.Context, r *repo.Repo, slug string, opts NamespaceOptions) (*SetResult, error) {
	fsys := opts.Disk()
	if err := repo.ValidateNamespace(slug); err != nil {
		return nil, err
	}
	if repo.IsReservedNamespace(slug) {
		return nil, &ReservedNamespaceError{Slug: slug}
	}
	if err := checkNamespaceCommandAllowed(fsys, r); err != nil {
		return nil, err
	}
	run, err := startMutation(ctx, fsys, r, opts.Common, opts.Catalog.Opener(), opts.Getenv)
	if err != nil {
		return nil, err
	}
	defer run.close()
	r = run.repo
	if err := checkNamespaceCommandAllowed(fsys, r); err != nil {
		return nil, err
	}
	if r.Namespace == slug {
		if len(run.recovered) > 0 {
			// Re-running an interrupted set: finishing it was the whole job.
			return &SetResult{Namespace: slug, DatastorePath: r.Base, Recovered: run.recovered}, run.finish()
		}
		return nil, &AlreadySetError{Slug: slug}
	}
	repoID := r.RepoID
	if repoID == "" {
		repoID = jsfmt.RandomUUID() // swamp generates one and does not persist it either
	}
	m, found, err := repo.ReadManifest(fsys, r.Base, slug)
	if err != nil {
		return nil, err
	}
	if found && m.RepoID != "" && m.RepoID != repoID {
		return nil, &NamespaceTakenError{Slug: slug, RepoID: m.RepoID}
	}

	nsDir := filepath.Join(r.Base, slug)
	var steps []journal.Step
	exists, err := topLevelDir(fsys, r.Base, nsDir)
	if err != nil {
		return nil, err
	}
	if !exists {
		steps = append(steps, journal.Step{Kind: protocol.KindMkdir, Path: nsDir, Note: "namespace directory"})
	}
	yamlStep, err := configEditStep(fsys, r, slug)
	if err != nil {
		return nil, err
	}
	steps = append(steps, yamlStep)
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	manifest := repo.ManifestPath(r.Base, slug)
	old, oldExists, err := readIfExists(fsys, manifest)
	if err != nil {
		return nil, err
	}
	steps = append(steps, journal.Step{Kind: protocol.KindWrite, Path: manifest, Data: repo.WriteManifestBytes(slug, repoID, now()),
		OldData: old, OldExists: oldExists, Note: "namespace manifest"})

	in := &journal.Intent{Kind: "namespace-set", Summary: fmt.Sprintf("set namespace %q", slug), Repo: r.Dir, Steps: steps}
	if _, err := run.execute(ctx, in, nil, nil); err != nil {
		return nil, err
	}
	res := &SetResult{Namespace: slug, DatastorePath: r.Base, PreviousNamespace: r.Namespace, IntentID: in.ID, Recovered: run.recovered,
		Warning: fmt.Sprintf("Existing data was not moved: it stays at the un-namespaced paths under %s. "+
			"The namespace migration moves it into %s.", r.Base, nsDir), WarningRemedy: report.RemedyMigrate}
	if r.Namespace != "" {
		res.Warning += fmt.Sprintf(" The manifest of the previous namespace %q is left in place.", r.Namespace)
	}
	return res, run.finish()
}

// UnsetNamespace is `namespace unset` without --migrate (swamp-format §1.5.3): only the
// namespace key leaves .swamp.yaml; data and manifest stay where they are.
func UnsetNamespace(ctx context.Context, r *repo.Repo, opts NamespaceOptions) (*UnsetResult, error) {
	fsys := opts.Disk()
	if r.EnvOverride {
		return nil, &EnvOverrideError{}
	}
	run, err := startMutation(ctx, fsys, r, opts.Common, opts.Catalog.Opener(), opts.Getenv)
	if err != nil {
		return nil, err
	}
	defer run.close()
	r = run.repo
	if r.EnvOverride {
		return nil, &EnvOverrideError{}
	}
	if r.Namespace == "" {
		if len(run.recovered) > 0 {
			// Re-running an interrupted unset: finishing it was the whole job.
			return &UnsetResult{Recovered: run.recovered}, run.finish()
		}
		return nil, &NoNamespaceError{Msg: "No namespace is currently configured. Nothing to unset."}
	}
	if err := refuseSeveralNamespaces(fsys, r); err != nil {
		return nil, err
	}
	yamlStep, err := configEditStep(fsys, r, "")
	if err != nil {
		return nil, err
	}
	in := &journal.Intent{Kind: "namespace-unset", Summary: fmt.Sprintf("unset namespace %q", r.Namespace), Repo: r.Dir,
		Steps: []journal.Step{yamlStep}}
	if _, err := run.execute(ctx, in, nil, nil); err != nil {
		return nil, err
	}
	return &UnsetResult{PreviousNamespace: r.Namespace, IntentID: in.ID, Recovered: run.recovered}, run.finish()
}

// UnsetPreview is what UnsetNamespace would change, read from the disk as
// it is now, without the journal lock and without writing anything.
type UnsetPreview struct {
	Namespace  string `json:"namespace"`  // the namespace .swamp.yaml names now
	ConfigPath string `json:"configPath"` // the file the namespace is removed from
	// DataPath is where the namespace's data is; unsetting alone leaves it
	// (and the manifest) there.
	DataPath string `json:"dataPath"`
	Preview  bool   `json:"preview"` // always true: nothing was changed
}

// PreviewUnsetNamespace says what UnsetNamespace would do to r, refusing
// what it would refuse (an environment override, no namespace, several
// namespaces under the base). An interrupted change in the journal is not
// looked at: UnsetNamespace finishes it first.
func PreviewUnsetNamespace(r *repo.Repo, c host.Common) (*UnsetPreview, error) {
	fsys := c.Disk()
	if r.EnvOverride {
		return nil, &EnvOverrideError{}
	}
	if r.Namespace == "" {
		return nil, &NoNamespaceError{Msg: "No namespace is currently configured. Nothing to unset."}
	}
	if err := refuseSeveralNamespaces(fsys, r); err != nil {
		return nil, err
	}
	return &UnsetPreview{Namespace: r.Namespace, ConfigPath: r.ConfigPath, DataPath: r.DatastorePath(), Preview: true}, nil
}
