// Package catalog keeps swamp's SQLite catalog ({repo}/.swamp/data/_catalog.db,
// swamp-format §3) true to the disk without ever destroying what swamp owns.
//
// Reading order:
//
//   - schema.go: swamp's exact DDL (swamp-format §3.3) and how an existing file is
//     classified (ours, half-created, foreign).
//   - open.go: Open — connection settings (swamp-format §3.2, design §2.3), file
//     checks, creation of a missing catalog, report (read-only) mode.
//   - create.go: a new catalog is built under a temp name and linked in
//     complete, so a crash never leaves a half-created one; a rebuild from
//     nothing builds it there with its rows (CreateBuilt).
//   - quarantine.go: a damaged catalog is moved aside with its sidecars as one
//     unit (swamp-format §9.4); nothing is ever deleted.
//   - row.go: Row and ItemKey, the table's columns (swamp-format §3.4); rows are built
//     from metadata above this package (ops/catalogrow).
//   - latest.go: which row carries is_latest / is_step_latest (swamp-format §3.5, §11).
//   - write.go: write-through operations, one IMMEDIATE transaction each (swamp-format §3.6).
//   - read.go: readers (rowid order, swamp-format §3.11).
//   - diff.go: Diff and Apply, the reconciliation behind `swampj catalog
//     verify` and `swampj catalog rebuild` (swamp-format §3.7).
//   - errors.go: typed errors with stable codes.
//
// What the package guarantees:
//
//   - It never drops a table, never deletes a catalog file or sidecar (only
//     its own temp files of a creation whose process died, which never
//     held a row), and
//     never changes a catalog whose schema it does not recognise (unlike swamp,
//     which drops any catalog whose schema_version is not "4", swamp-format §3.3).
//   - Every write is one BEGIN IMMEDIATE transaction committed with
//     synchronous=FULL, preceded by an fsx failpoint so the crash suite can cut
//     right before the commit. A write that fails leaves the previous catalog.
//     The one exception is a catalog built aside (create.go): nobody can open
//     its temp file, so it is written without a journal or a sync per commit
//     and fsynced once, complete, before its name is linked in.
//   - The catalog file is never opened with package os; file-level checks go
//     through fsx and happen before SQLite opens the file
//     (design §2.3, POSIX-lock hazard).
//
// What it does not guarantee: that the rows are true to the disk. Only the
// caller can walk the data tree; Diff/Apply reconcile against that walk.
package catalog
