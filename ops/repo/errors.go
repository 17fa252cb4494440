package repo

import (
	"fmt"
	"path/filepath"

	"github.com/swampj/swampj"
)

// Sentinel errors. Every error this package returns that falls in one of
// these classes satisfies errors.Is against the sentinel, and its message
// says what happened and what to do about it.
var (
	// ErrNotARepo: no .swamp.yaml where one was expected.
	ErrNotARepo error = swampj.NewError("not_a_repo", "not inside a swamp repo")
	// ErrConfig: .swamp.yaml (or SWAMP_DATASTORE) cannot be used as written.
	ErrConfig error = swampj.NewError("config_invalid", "invalid swamp configuration")
	// ErrUnsupportedDatastore: the datastore is not a filesystem datastore.
	ErrUnsupportedDatastore error = swampj.NewError("unsupported_datastore", "unsupported datastore type")
	// ErrInvalidNamespace: a namespace slug fails swamp's rule (swamp-format §1.5).
	ErrInvalidNamespace error = swampj.NewError("invalid_namespace", "invalid namespace")
	// ErrInvalidAddress: a TYPE/MODEL_ID/DATA_NAME address is malformed.
	ErrInvalidAddress error = swampj.NewError("invalid_address", "invalid data address")
	// ErrOutsideDataRoot: a path would leave the data root (symlink escape).
	ErrOutsideDataRoot error = swampj.NewError("outside_data_root", "path leaves the data root")
	// ErrManifest: a namespace manifest exists but cannot be read.
	ErrManifest error = swampj.NewError("manifest_unreadable", "unreadable namespace manifest")
)

// ConfigError is a problem with the repo configuration. Path is the file
// (or "SWAMP_DATASTORE") the problem comes from; Field the offending key,
// when there is one.
type ConfigError struct {
	Path  string
	Field string
	Msg   string
	Err   error // underlying cause (a YAML parse error), may be nil
}

func (e *ConfigError) Error() string {
	where := e.Path
	if e.Field != "" {
		where += ": " + e.Field
	}
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", where, e.Msg, e.Err)
	}
	return where + ": " + e.Msg
}

func (e *ConfigError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrConfig, e.Err}
	}
	return []error{ErrConfig}
}

// UnsupportedDatastoreError reports a datastore type swampj cannot operate
// on. Type is the type as configured; Resolved is swamp's remapped name
// (legacy "s3" becomes "@swamp/s3-datastore").
type UnsupportedDatastoreError struct {
	Source   string // the .swamp.yaml path, or "SWAMP_DATASTORE"
	Type     string
	Resolved string
}

func (e *UnsupportedDatastoreError) Error() string {
	t := fmt.Sprintf("%q", e.Type)
	if e.Resolved != "" && e.Resolved != e.Type {
		t += fmt.Sprintf(" (swamp reads it as %q)", e.Resolved)
	}
	// Pointing SWAMP_DATASTORE=filesystem: at an extension's cache is no
	// way round this: a version written there is neither under the bucket's
	// lock nor recorded in the cache's sync state, so swamp's next push
	// either skips it or uploads it unlocked over another checkout's write.
	return fmt.Sprintf("%s: datastore type %s: swampj writes filesystem datastores only, never a remote (extension) one: its data lives in "+
		"the bucket, and swamp's local cache of it is changed only under the bucket's lock and recorded for swamp's next push",
		e.Source, t)
}

func (e *UnsupportedDatastoreError) Unwrap() error { return ErrUnsupportedDatastore }

// NamespaceError is a slug that swamp would refuse.
type NamespaceError struct {
	Slug string
	Msg  string // swamp's message (swamp-format §1.5), verbatim in substance
}

func (e *NamespaceError) Error() string { return e.Msg }
func (e *NamespaceError) Unwrap() error { return ErrInvalidNamespace }

// AddressError is a malformed data address.
type AddressError struct {
	Input string
	Msg   string
}

func (e *AddressError) Error() string {
	return fmt.Sprintf("invalid data address %q: %s (expected TYPE/MODEL_ID/DATA_NAME, e.g. @acme/scanner/0f8e2b1a/result)", e.Input, e.Msg)
}
func (e *AddressError) Unwrap() error { return ErrInvalidAddress }

// OutsideDataRootError: Path, once its existing part has been resolved
// through symlinks (Resolved), is not below the resolved data root.
type OutsideDataRootError struct {
	Path     string
	Resolved string
	Root     string
}

func (e *OutsideDataRootError) Error() string {
	return fmt.Sprintf("refusing %s: it resolves to %s, outside the data root %s (a symlink inside the data tree points elsewhere); "+
		"remove or fix the symlink", e.Path, e.Resolved, e.Root)
}
func (e *OutsideDataRootError) Unwrap() error { return ErrOutsideDataRoot }

// ManifestError: a .namespace.json that exists but cannot be read or parsed.
// swamp's namespace listing throws on such a file too (swamp-format §9.21).
type ManifestError struct {
	Path string
	Err  error
}

func (e *ManifestError) Error() string {
	return fmt.Sprintf("namespace manifest %s cannot be read: %v; fix or remove the file (swamp itself fails on it too)", e.Path, e.Err)
}
func (e *ManifestError) Unwrap() []error { return []error{ErrManifest, e.Err} }

// Code is ErrManifest's, or the code of a failure of the system below
// when that caused it (an I/O error).
func (e *ManifestError) Code() string {
	return swampj.CodeOr(swampj.SystemFailure(e.Err), ErrManifest.(swampj.Coded).Code())
}

func (e *ManifestError) Class() swampj.Class {
	return swampj.ClassOr(swampj.SystemFailure(e.Err), swampj.ClassFailed)
}

// NotARepoError: a directory named as a repo's root is not one. It
// matches ErrNotARepo.
type NotARepoError struct {
	Dir    string // the path named, made absolute
	Reason string // "does not exist", "is not a directory", "holds no .swamp.yaml"
}

func (e *NotARepoError) Error() string {
	return fmt.Sprintf("not a swamp repo: %s %s", e.Dir, e.Reason)
}

// Is makes errors.Is(err, ErrNotARepo) hold.
func (e *NotARepoError) Is(target error) bool { return target == ErrNotARepo }

// Code is the stable error code.
func (e *NotARepoError) Code() string        { return "not_a_repo" }
func (e *NotARepoError) Class() swampj.Class { return swampj.ClassFailed }

// ConfigLostError: dir holds swampj's journal but no .swamp.yaml. It is a
// swamp repo whose configuration file is gone (ALICE's rename that left
// neither name, when .swamp.yaml was being replaced, leaves exactly this);
// without the file no command can know its datastore or namespace. An
// interrupted intent in the journal may hold the file's content: recovery
// restores it from there.
type ConfigLostError struct {
	Dir     string // the repo root: where .swamp.yaml should be
	Journal string // the journal found there
	// Cause, when set, is why recovery could not restore the file.
	Cause error
	// Recovered: recovery ran and left no intent that writes the file.
	Recovered bool
}

func (e *ConfigLostError) Error() string {
	msg := fmt.Sprintf("%s is missing, but %s holds swampj's journal: this is a swamp repo whose %s is lost (a crash while it was being replaced can leave this)",
		filepath.Join(e.Dir, ConfigFileName), e.Journal, ConfigFileName)
	switch {
	case e.Cause != nil:
		msg += fmt.Sprintf("; recovering the journal did not bring it back: %v", e.Cause)
	case e.Recovered:
		msg += "; the journal holds no unfinished change to it, so its content is not known here: restore it from a backup or a copy of the repo"
	default:
		msg += "; recovering the journal restores it if an interrupted change to it is there"
	}
	return msg
}

func (e *ConfigLostError) Unwrap() error { return e.Cause }

// Code is the stable error code.
func (e *ConfigLostError) Code() string        { return "config_lost" }
func (e *ConfigLostError) Class() swampj.Class { return swampj.ClassFailed }
