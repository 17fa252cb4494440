// Package migrate moves a datastore's data between the shared layout and a
// namespace (`datastore namespace migrate [--reverse]`) and sets or unsets
// the namespace in .swamp.yaml. Migrate plans from the disk as it is, so a
// first run, a re-run and a resume after any failure are the same call; the
// catalog never moves; every rename is journaled before it is made and
// never replaces anything. Without Confirm it previews.
//
// SetNamespace, UnsetNamespace (PreviewUnsetNamespace says what it would
// change) and ListNamespaceManifests are the namespace commands; they read
// .swamp.yaml again before they plan, so a *repo.Repo loaded before a
// namespace change is not stale for them.
//
// Reading order: migrate.go (Migrate and its guarantees), types.go (the
// options, results and errors), migrateplan.go
// (the plan), migratecount.go and migrateobserve.go (what is where),
// nsmutation.go (the session-bound mutation migration and the namespace
// commands share), namespace.go (set, unset, list).
package migrate
