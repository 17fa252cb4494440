// Package fsx is swampj's only door to the disk.
//
// Engine code never calls package os for anything that reads or changes the
// datastore; it goes through an FS. That gives the crash suite one place to
// stop the world after any operation (see Fault) and keeps the durable
// primitives — atomic replace, rename without replace, durable mkdir and
// cross-directory rename — written once (durable.go).
//
// Rules the primitives follow (design §2.2):
//   - temp files live in the destination directory and are created O_EXCL;
//   - a file is fsynced and closed before it is renamed into place;
//   - the parent directory is fsynced after every rename, mkdir or remove
//     that must survive a power cut (both parents for a cross-directory move);
//   - an fsync error is final: it is returned, never retried (fsyncgate);
//   - files are created FileMode (0666) and directories DirMode (0777): the
//     umask decides, as for swamp's own writes, so a group sharing a repo
//     under umask 002 can write what swampj created.
//
// What it owns: the FS interface and the real one (os.go; a nil FS anywhere
// in swampj's public API means Real, see OrReal), the durable primitives, and
// the crash tooling: Fault cuts or fails after any operation, powercut.go
// models what a power cut loses, killpoint.go kills the real binary at a
// named operation (SWAMPJ_FAILPOINT). access.go describes a refused
// permission (the file, its mode and owner, the user) for error messages.
//
// Reading order: fsx.go (FS, File), os.go (the real disk), durable.go (the
// primitives), fault.go and powercut.go (the crash suite's model), then
// package journal.
package fsx
