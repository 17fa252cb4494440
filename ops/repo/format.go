package repo

// The datastore format marker (swamp-format §13.1). Later versions of
// swamp may keep a file datastore-format.json at the root of a filesystem
// datastore ({base}, outside every namespace) naming the layout the
// datastore is written in. swamp at 06b6147 knows nothing of it and no swamp
// version writes one yet; a later swamp that finds one it cannot read
// refuses the datastore before any lock, pull, push or write, so that an
// older binary never migrates, writes or repairs a layout it does not know.
// swampj follows the same rule, from the same source files
// (src/domain/datastore/datastore_format.ts,
// src/infrastructure/persistence/datastore_format_marker_reader.ts), with
// one difference: swamp skips a marker it cannot read (EACCES), and swampj
// refuses to change such a datastore (read-only commands may go on after
// saying so), because skipping is a guess in the unsafe direction.
//
// No swampj command creates, changes, moves or deletes the marker.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/swampj/swampj"
	"github.com/swampj/swampj/fsx"
)

const (
	// FormatMarkerName is the marker's file name at the datastore root
	// (DATASTORE_FORMAT_MARKER_FILE).
	FormatMarkerName = "datastore-format.json"
	// FormatMarkerMaxBytes is the largest marker accepted; anything bigger
	// is not a marker (DATASTORE_FORMAT_MARKER_MAX_BYTES).
	FormatMarkerMaxBytes = 64 * 1024
	// UnmarkedFormat is the format of a datastore without a marker: the
	// layout docs/swamp-format.md describes (UNMARKED_DATASTORE_FORMAT).
	UnmarkedFormat = 2
	// maxWrittenByShown caps the marker's writtenBy in messages.
	maxWrittenByShown = 64
)

// SupportedFormats are the datastore formats swampj reads and writes
// (SUPPORTED_DATASTORE_FORMATS).
var SupportedFormats = []int64{2}

// FormatMarkerPath is where the marker of the datastore at base lives:
// {base}/datastore-format.json, base being the un-namespaced datastore
// path (config.path).
func FormatMarkerPath(base string) string { return filepath.Join(base, FormatMarkerName) }

// FormatMarker is a parsed marker. Unknown keys are ignored, as swamp
// ignores them, so that later writers can add fields.
type FormatMarker struct {
	// Format is the format the datastore is written in (required).
	Format int64
	// MinReaderFormat is the oldest reader format that can read it; 0 when
	// the marker has none, which means Format.
	MinReaderFormat int64
	// WrittenBy is the swamp version that wrote the marker ("" if absent).
	WrittenBy string
}

// Required is the reader format the marker requires: minReaderFormat, or
// format when it has none.
func (m FormatMarker) Required() int64 {
	if m.MinReaderFormat != 0 {
		return m.MinReaderFormat
	}
	return m.Format
}

// DatastoreFormat is what CheckDatastoreFormat found at a datastore.
type DatastoreFormat struct {
	// MarkerPath is where the marker is (or would be).
	MarkerPath string
	// Marker is the parsed marker; nil when there is none.
	Marker *FormatMarker
	// Format is the datastore's format: the marker's, or UnmarkedFormat.
	Format int64
}

// CheckDatastoreFormat reads the format marker of the filesystem
// datastore at base (the un-namespaced datastore path) and refuses a
// datastore swampj cannot safely use, exactly as swamp's
// assertSupportedDatastoreFormat does, before anything is locked, opened
// or written. It only reads (an lstat and at most one read of the marker).
//
//   - No marker (or base is not a directory): format 2, nil error.
//   - A marker whose minReaderFormat, or format when it has none, is above
//     2: a *FormatUnsupportedError. format 5 with minReaderFormat 2 is
//     accepted.
//   - Something at the marker's path that is not a marker: not a regular
//     file (a directory, a symlink, a FIFO), larger than 64 KiB, not UTF-8,
//     not JSON, not a JSON object, format missing or not a safe integer
//     ≥ 1, minReaderFormat present but not one, writtenBy present but not
//     a string: a *FormatMarkerInvalidError.
//   - A marker that exists but cannot be read (EACCES, EIO): a
//     *FormatMarkerUnreadableError. swamp skips the check then; a command
//     that writes must refuse, a read-only one may report it and go on.
//
// fsys nil is the real disk.
func CheckDatastoreFormat(fsys fsx.FS, base string) (DatastoreFormat, error) {
	fsys = fsx.OrReal(fsys)
	path := FormatMarkerPath(base)
	found := DatastoreFormat{MarkerPath: path, Format: UnmarkedFormat}
	fi, err := fsys.Lstat(path)
	switch {
	case err == nil:
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		// A datastore path that is a file, or missing a parent, has no
		// marker under it; whatever uses the path reports that itself.
		return found, nil
	default:
		return found, &FormatMarkerUnreadableError{Path: path, Err: err}
	}
	if !fi.Mode().IsRegular() {
		return found, &FormatMarkerInvalidError{Path: path, Reason: "not a regular file (" + fileKind(fi.Mode()) + ")"}
	}
	if fi.Size() > FormatMarkerMaxBytes {
		return found, &FormatMarkerInvalidError{Path: path, Reason: fmt.Sprintf("%d bytes, larger than %d bytes", fi.Size(), FormatMarkerMaxBytes)}
	}
	data, err := fsys.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return found, nil // removed between the lstat and the read
		}
		return found, &FormatMarkerUnreadableError{Path: path, Err: err}
	}
	m, err := ParseFormatMarker(data, path)
	if err != nil {
		return found, err
	}
	found.Marker, found.Format = &m, m.Format
	if m.Required() > maxSupportedFormat() {
		return found, &FormatUnsupportedError{Path: path, Marker: m, Supported: append([]int64(nil), SupportedFormats...)}
	}
	return found, nil
}

// CheckFormat is CheckDatastoreFormat for the repo's datastore base.
func (r *Repo) CheckFormat(fsys fsx.FS) (DatastoreFormat, error) {
	return CheckDatastoreFormat(fsys, r.Base)
}

// CheckRepoFormat is CheckDatastoreFormat for the repo at dir, for entry
// points that must check before they have (or can have) a loaded Repo —
// recovery and the journal commands, which work on a repo whose
// .swamp.yaml is lost or unusable too: the base is the one Load resolves
// (env as for Load: nil is the process environment), or the default
// {dir}/.swamp when the configuration cannot be loaded (the command
// reports that itself).
func CheckRepoFormat(fsys fsx.FS, dir string, env func(string) string) (DatastoreFormat, error) {
	fsys = fsx.OrReal(fsys)
	if r, err := Load(fsys, dir, env); err == nil {
		return CheckDatastoreFormat(fsys, r.Base)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return DatastoreFormat{}, fmt.Errorf("resolving %s: %w", dir, err)
	}
	return CheckDatastoreFormat(fsys, filepath.Join(abs, LocalDirName))
}

func maxSupportedFormat() int64 {
	m := int64(UnmarkedFormat)
	for _, f := range SupportedFormats {
		m = max(m, f)
	}
	return m
}

func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "not a plain file"
}

// ParseFormatMarker parses marker bytes as swamp's
// parseDatastoreFormatMarker does: at most 64 KiB of UTF-8 (a leading byte
// order mark is dropped, as TextDecoder drops it), one JSON object (a
// repeated key: the last one counts, as in JSON.parse), format a safe
// integer ≥ 1, minReaderFormat absent or the same, writtenBy absent or a
// string. source names the marker in the error (a
// *FormatMarkerInvalidError).
func ParseFormatMarker(data []byte, source string) (FormatMarker, error) {
	bad := func(reason string) (FormatMarker, error) {
		return FormatMarker{}, &FormatMarkerInvalidError{Path: source, Reason: reason}
	}
	if len(data) > FormatMarkerMaxBytes {
		return bad(fmt.Sprintf("%d bytes, larger than %d bytes", len(data), FormatMarkerMaxBytes))
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	if !utf8.Valid(data) {
		return bad("not valid JSON: not UTF-8")
	}
	if !json.Valid(data) {
		return bad("not valid JSON")
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil || fields == nil {
		return bad("not a JSON object")
	}
	var m FormatMarker
	raw, ok := fields["format"]
	if !ok {
		return bad("format must be a positive integer")
	}
	if m.Format, ok = formatNumber(raw); !ok {
		return bad("format must be a positive integer")
	}
	if raw, ok := fields["minReaderFormat"]; ok {
		if m.MinReaderFormat, ok = formatNumber(raw); !ok {
			return bad("minReaderFormat must be a positive integer")
		}
	}
	if raw, ok := fields["writtenBy"]; ok {
		if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &m.WrittenBy) != nil {
			return bad("writtenBy must be a string")
		}
	}
	return m, nil
}

// formatNumber is isFormatNumber: a JSON number whose value, read as a
// JavaScript number (an IEEE double, so 2.0 and 3e0 are integers, and
// 1e400 is Infinity), is a safe integer ≥ 1.
func formatNumber(raw json.RawMessage) (int64, bool) {
	s := string(raw)
	if s == "" || !(s[0] == '-' || s[0] >= '0' && s[0] <= '9') {
		return 0, false // a string, bool, null, object or array
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, false
	}
	const maxSafe = 1<<53 - 1
	if math.IsInf(f, 0) || f != math.Trunc(f) || f < 1 || f > maxSafe {
		return 0, false
	}
	return int64(f), true
}

// shownWrittenBy is displayWrittenBy: the marker comes from the datastore,
// so control characters are dropped before it reaches a terminal, and its
// length is capped.
func shownWrittenBy(s string) string {
	s = strings.TrimSpace(strings.Map(func(r rune) rune {
		if r <= 0x1f || r >= 0x7f && r <= 0x9f {
			return -1
		}
		return r
	}, s))
	if utf8.RuneCountInString(s) > maxWrittenByShown {
		s = string([]rune(s)[:maxWrittenByShown]) + "…"
	}
	return s
}

// Codes of the format errors, as swamp names them
// (DATASTORE_FORMAT_UNSUPPORTED_CODE, DATASTORE_FORMAT_MARKER_INVALID_CODE);
// the third is swampj's own.
const (
	CodeFormatUnsupported       = "datastore_format_unsupported"
	CodeFormatMarkerInvalid     = "datastore_format_marker_invalid"
	CodeFormatMarkerUnreadable  = "datastore_format_marker_unreadable"
	nothingChanged              = "Nothing was changed."
	notUsedUnknownFormatMessage = "swampj will not use a datastore whose format it cannot determine"
)

// ErrDatastoreFormat is matched (errors.Is) by the three format errors: the
// datastore is refused because of its format marker, before anything was
// locked, opened or written.
var ErrDatastoreFormat = errors.New("datastore format refused")

// FormatUnsupportedError: the marker requires a reader newer than swampj
// (code datastore_format_unsupported).
type FormatUnsupportedError struct {
	Path      string // the marker file
	Marker    FormatMarker
	Supported []int64
}

func (e *FormatUnsupportedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "the datastore format marker %s says this datastore uses format %d", e.Path, e.Marker.Format)
	if w := shownWrittenBy(e.Marker.WrittenBy); w != "" {
		fmt.Fprintf(&b, " (written by swamp %s)", w)
	}
	if req := e.Marker.Required(); req != e.Marker.Format {
		fmt.Fprintf(&b, "; reading it needs format %d support", req)
	}
	sup := make([]string, len(e.Supported))
	for i, f := range e.Supported {
		sup[i] = strconv.FormatInt(f, 10)
	}
	fmt.Fprintf(&b, ". swampj supports format %s only and will not read, write, migrate or repair a layout it does not know; "+
		"use a swamp that supports format %d. %s", strings.Join(sup, ", "), e.Marker.Required(), nothingChanged)
	return b.String()
}

func (e *FormatUnsupportedError) Unwrap() error { return ErrDatastoreFormat }

// Code is the stable error code.
func (*FormatUnsupportedError) Code() string        { return CodeFormatUnsupported }
func (*FormatUnsupportedError) Class() swampj.Class { return swampj.ClassFormatRefused }

// FormatMarkerInvalidError: something is at the marker's path that is not a
// marker (code datastore_format_marker_invalid). Treating it as format 2
// would be the unsafe direction.
type FormatMarkerInvalidError struct {
	Path   string
	Reason string
}

func (e *FormatMarkerInvalidError) Error() string {
	return fmt.Sprintf("the datastore format marker %s is not a valid format marker (%s); %s. "+
		"Restore the marker the datastore was written with (never delete it). %s", e.Path, e.Reason, notUsedUnknownFormatMessage, nothingChanged)
}

func (e *FormatMarkerInvalidError) Unwrap() error { return ErrDatastoreFormat }

// Code is the stable error code.
func (*FormatMarkerInvalidError) Code() string        { return CodeFormatMarkerInvalid }
func (*FormatMarkerInvalidError) Class() swampj.Class { return swampj.ClassFormatRefused }

// FormatMarkerUnreadableError: the marker exists but cannot be read
// (code datastore_format_marker_unreadable). swamp skips its check then;
// swampj refuses to change the datastore, and a read-only command may go
// on after reporting Warning().
type FormatMarkerUnreadableError struct {
	Path string
	Err  error
}

func (e *FormatMarkerUnreadableError) Error() string {
	return fmt.Sprintf("the datastore format marker %s cannot be read: %v; the datastore's format is unknown, so swampj will not change it "+
		"(swamp itself skips an unreadable marker). Make the file readable. %s", e.Path, e.Err, nothingChanged)
}

func (e *FormatMarkerUnreadableError) Unwrap() []error { return []error{ErrDatastoreFormat, e.Err} }

// Code is the stable error code.
func (*FormatMarkerUnreadableError) Code() string        { return CodeFormatMarkerUnreadable }
func (*FormatMarkerUnreadableError) Class() swampj.Class { return swampj.ClassFormatRefused }

// Warning is what a read-only command reports before it goes on.
func (e *FormatMarkerUnreadableError) Warning() string {
	return fmt.Sprintf("the datastore format marker %s cannot be read (%v): its format is not known; reading on as format %d, changing nothing",
		e.Path, e.Err, UnmarkedFormat)
}

// RefuseUnknownFormat is the check every entry point of swampj runs first,
// before any lock, journal open or write: CheckDatastoreFormat on the
// datastore at base, with the one difference between the two kinds of
// command. One that changes the datastore (changes) refuses every format
// error; one that only reads goes on past an unreadable marker after
// passing its Warning() to warn (nil drops it), and refuses the rest.
// fsys nil is the real disk.
func RefuseUnknownFormat(fsys fsx.FS, base string, changes bool, warn func(string)) error {
	_, err := CheckDatastoreFormat(fsys, base)
	var unreadable *FormatMarkerUnreadableError
	if !changes && errors.As(err, &unreadable) {
		if warn != nil {
			warn(unreadable.Warning())
		}
		return nil
	}
	return err
}
