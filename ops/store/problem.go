package store

// Code names a kind of problem. Codes are stable: the doctor prints them, the
// CLI's JSON carries them, and repair decides from them what it may fix.
type Code string

// Problems with one version's files (ReadVersion).
const (
	// CodeVersionMissing: the version directory does not exist (a `latest`
	// naming a version that is gone).
	CodeVersionMissing Code = "version_missing"
	// CodeVersionNotDir: a file (or other non-directory) has the version's
	// name.
	CodeVersionNotDir Code = "version_not_directory"
	// CodeVersionSymlink: a symlink has the version's name. swamp's walk
	// never descends it and its listVersions (data versions, the catalog
	// backfill, version allocation) skips it, although its single-item read
	// follows it; swampj does not count it as a version anywhere (Walk).
	CodeVersionSymlink Code = "version_symlink"
	// CodeMetadataMissing: no metadata.yaml. A streaming write in progress,
	// or one that stopped before finalize (swamp-format §2.6.3), or a version directory
	// allocated and never written (swamp-format §2.6.2 step 4). swamp reads it as "no
	// data" (swamp-format §2.7.3).
	CodeMetadataMissing Code = "metadata_missing"
	// CodeMetadataEmpty: metadata.yaml is zero bytes or only whitespace, the
	// signature of issue #3955. swamp fails on it, hiding the whole model
	// from its walk when this is the latest version (swamp-format §9.2).
	CodeMetadataEmpty Code = "metadata_empty"
	// CodeMetadataInvalid: metadata.yaml is not YAML swamp accepts, or fails
	// swamp's schema (swamp-format §2.4), or is implausibly large.
	CodeMetadataInvalid Code = "metadata_invalid"
	// CodeMetadataNotRegular: metadata.yaml is a directory or a special
	// file (the walk's classifier requires a regular file, swamp-format §2.7.3).
	CodeMetadataNotRegular Code = "metadata_not_regular"
	// CodeMetadataUnreadable: reading metadata.yaml failed (permission, I/O).
	// It says nothing about the bytes: repair must not act on it alone.
	CodeMetadataUnreadable Code = "metadata_unreadable"
	// CodeVersionMismatch: metadata `version` differs from the directory
	// number.
	CodeVersionMismatch Code = "version_mismatch"
	// CodeNameMismatch: metadata `name` differs from the data-name directory.
	CodeNameMismatch Code = "name_mismatch"
	// CodeRawMissing: no raw file (a crash between writing metadata.yaml and
	// raw, swamp-format §2.6.2 crash windows).
	CodeRawMissing Code = "raw_missing"
	// CodeRawNotRegular: raw is a directory or a special file.
	CodeRawNotRegular Code = "raw_not_regular"
	// CodeRawUnreadable: stat or read of raw failed (permission, I/O). Like
	// CodeMetadataUnreadable it is not proof of damage.
	CodeRawUnreadable Code = "raw_unreadable"
	// CodeRawEmpty: raw is zero bytes and metadata.yaml cannot say whether
	// that is right (it is missing or unusable). Reported beside the
	// metadata problem so that #3955's "both files empty" shows as such.
	CodeRawEmpty Code = "raw_empty"
	// CodeRawEmptyMismatch: raw is zero bytes but metadata `size` is not 0,
	// the other half of #3955.
	CodeRawEmptyMismatch Code = "raw_empty_mismatch"
	// CodeSizeMismatch: raw's size differs from metadata `size` (and is not
	// zero).
	CodeSizeMismatch Code = "size_mismatch"
	// CodeChecksumMismatch: raw's SHA-256 differs from metadata `checksum`.
	// Only checked with CheckOptions.VerifyChecksum.
	CodeChecksumMismatch Code = "checksum_mismatch"
)

// Problems with a data item as a whole (ScanItem).
const (
	// CodeLatestMissing: no `latest` entry although versions exist; swamp
	// falls back to the highest version directory (swamp-format §2.5). A writer's update
	// passes through this state for an instant, so it may be transient.
	CodeLatestMissing Code = "latest_missing"
	// CodeLatestEmpty: `latest` is zero bytes or only whitespace; swamp falls
	// back to the highest version directory.
	CodeLatestEmpty Code = "latest_empty"
	// CodeLatestUnparsable: `latest` exists but neither its text nor a
	// symlink target starts with digits; swamp falls back.
	CodeLatestUnparsable Code = "latest_unparsable"
	// CodeLatestInvalid: `latest` parses to a number that is not a version
	// (0 or negative); swamp uses it and finds no data.
	CodeLatestInvalid Code = "latest_invalid"
	// CodeLatestNotFound: the version `latest` designates has no directory.
	// swamp reports no data for the item and does not fall back (swamp-format §2.7.3).
	CodeLatestNotFound Code = "latest_not_found"
	// CodeLatestUnreadable: the version `latest` designates exists but is not
	// readable; its own problems say why. This is what #3955 left behind.
	CodeLatestUnreadable Code = "latest_unreadable"
	// CodeNonCanonicalVersionDir: a directory such as "2-old" or "007" that
	// swamp counts as a version number but never reads as one (swamp-format §9.7).
	CodeNonCanonicalVersionDir Code = "noncanonical_version_dir"
	// CodeVersionDirBeyondMax: a directory named by a number beyond
	// MaxVersion ("99999999999999999999999"): swamp counts it as a version
	// it cannot read exactly, takes it for the highest when `latest` falls
	// back, and fails its next write of the item. Never a version swampj
	// reads; the doctor's repair moves it to quarantine.
	CodeVersionDirBeyondMax Code = "version_dir_beyond_max"
	// CodeNoVersions: the item directory holds no version and no `latest`.
	CodeNoVersions Code = "no_versions"
)

// Problem is one finding about one file or directory.
type Problem struct {
	Code Code
	// Path is the file or directory the problem is about.
	Path string
	// Message says, for a person, what is wrong with which file.
	Message string
	// Err is the underlying error for the *_unreadable codes, nil otherwise.
	Err error
}

func (p Problem) String() string { return p.Path + ": " + p.Message }
