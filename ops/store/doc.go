// Package store is the read side of swamp's filesystem data layout
// (swamp-format §2): which directories are versions, what the `latest`
// pointer designates, whether a version can be read, and which data items a
// data root holds.
//
// It exists because of issue #3955: an unclean shutdown left zero-byte
// versions as latest and nothing noticed. Everything here therefore reports
// damage instead of hiding it — a version is judged file by file and every
// finding comes back as a Problem with a stable Code — and, unlike swamp's own
// walk, one bad file never hides the rest of its model (swamp-format §9.2).
//
// Reading order:
//
//	parse.go     swamp's lenient number rules (JavaScript parseInt, swamp-format §2.5, §2.7.1)
//	versions.go  VersionDirs and ListVersions: which directories are versions
//	latest.go    ReadLatest: the `latest` pointer, its legacy symlink and fallback
//	problem.go   Problem and its codes
//	errors.go    ErrInvalidVersion, UnreadableError
//	version.go   ReadVersion: one version checked file by file
//	content.go   ReadContent: a version's raw bytes, refused when unreadable
//	walk.go      Walk and FindItems: every data item under a data root (swamp-format §2.7.3)
//	scan.go      ScanItem: one item's pointer, versions and findings
//
// Every disk access goes through fsx.FS. Nothing in this package writes; the
// write protocol builds on these functions (it allocates above every
// VersionDirs entry, and moves damage into QuarantineDirName).
package store
