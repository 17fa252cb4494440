// Package write writes data versions the way swamp lays them out, so that
// a crash at any point leaves every item's `latest` naming a readable
// version: WriteVersions writes one or many versions under one journaled
// intent. Each version is staged in a hidden directory, fsynced, published
// by a rename that replaces nothing, and only then named by `latest` and
// the catalog; a write that stops part way is finished or rolled back by
// recovery (ops.Recover), deciding from the disk.
//
// What a version inherits (owner, model name, spec name) is swamp's rule,
// read from the item's current version (read.CurrentVersion); a write that
// swamp would refuse is refused before anything is journaled.
//
// Reading order: write.go (WriteVersions and its guarantees), handle.go (a
// repo held open for writing: Open, group commit), types.go (its
// options, inputs, results and errors), writeprepare.go (inputs and locks), writeplan.go
// (the intent and its steps), writedefaults.go (what a version inherits).
package write
