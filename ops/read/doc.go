// Package read reads data items and resolves models as swamp does: OpenData,
// DataVersions and ListData (`swampj data get / versions / list`),
// ResolveModel and ResolveItem (a model by name or id), ChangedItems (what
// changed since a time). Unlike swamp, an unreadable version is named with
// what is wrong with it instead of answering "no data".
//
// CurrentVersion and ModelName are swamp's latest-lookup and a model's
// name, which package write also uses for what a new version inherits.
//
// Reading order: read.go, current.go, model.go, changed.go.
package read
