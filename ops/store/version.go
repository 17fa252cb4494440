package store

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/meta"
)

// File names inside a version directory (swamp-format §2.3).
const (
	MetadataFileName = "metadata.yaml"
	RawFileName      = "raw"
)

// maxMetadataSize bounds how much of a metadata.yaml is read into memory. A
// real file is well under 4 KiB; anything this large is damage, not data.
const maxMetadataSize = 16 << 20

// CheckOptions says how hard ReadVersion looks.
type CheckOptions struct {
	// VerifyChecksum hashes raw (streamed, never held in memory) and
	// compares it with metadata `checksum` when that is present (swamp-format §9.22). It
	// reads every byte of every version, so it is off for scans.
	VerifyChecksum bool
}

// State sums up a version's problems.
type State int

const (
	// StateReadable: no problems; swamp reads it and gets its content.
	StateReadable State = iota
	// StateIncomplete: a write that stopped part-way, recognisable by a file
	// that is not there yet: no metadata.yaml (a streaming write in
	// progress or an allocated, never written directory), or valid metadata
	// without raw. Not readable as swamp would read it.
	StateIncomplete
	// StateDamaged: a file is there but wrong: empty, invalid, mismatched or
	// unreadable.
	StateDamaged
	// StateMissing: the version directory does not exist.
	StateMissing
)

func (s State) String() string {
	switch s {
	case StateReadable:
		return "readable"
	case StateIncomplete:
		return "incomplete"
	case StateDamaged:
		return "damaged"
	default:
		return "missing"
	}
}

// Version is one version directory as checked by ReadVersion.
type Version struct {
	Number       int64
	Dir          string
	MetadataPath string
	RawPath      string
	// Metadata is the decoded metadata.yaml, nil when it is missing or does
	// not decode. It is set even when other checks fail.
	Metadata *meta.Metadata
	// RawSize is raw's size from stat, -1 when raw is not a regular file.
	RawSize  int64
	State    State
	Problems []Problem
}

// Readable reports whether swamp would read this version and get its
// content: metadata.yaml exists, is non-empty, decodes and validates, names
// this version and this item, and raw is a regular file of the recorded size
// (and checksum, when verified).
func (v *Version) Readable() bool { return v.State == StateReadable }

// Streaming reports whether the version has raw but no metadata.yaml yet: a
// streaming write in progress, or one that stopped before finalize (swamp-format §2.6.3).
func (v *Version) Streaming() bool {
	return v.RawSize >= 0 && v.has(CodeMetadataMissing)
}

func (v *Version) has(c Code) bool {
	for _, p := range v.Problems {
		if p.Code == c {
			return true
		}
	}
	return false
}

// ReadVersion checks version v of the data item in itemDir. Problems with the
// files are not errors: they come back in Version.Problems so that a caller
// sees all of them (swamp-format §9.2). The error is non-nil only for v <= 0.
//
// Cost: one open+read of metadata.yaml and one stat of raw (plus an lstat of
// the directory when neither exists); with VerifyChecksum, one full read of
// raw.
func ReadVersion(fsys fsx.FS, itemDir string, v int64, opts CheckOptions) (*Version, error) {
	fsys = fsx.OrReal(fsys)
	if v <= 0 {
		return nil, fmt.Errorf("%w: %d", ErrInvalidVersion, v)
	}
	return readVersion(fsys, itemDir, v, opts), nil
}

// readVersion is ReadVersion for a v known to be positive. The version's
// directory was not taken from a listing (an explicit --version, or the one
// `latest` designates), so it may be a symlink: that is not a version (see
// Walk for the rule), whatever it points at.
func readVersion(fsys fsx.FS, itemDir string, v int64, opts CheckOptions) *Version {
	ver := newItemPaths(itemDir).readVersion(fsys, v, opts)
	if ver.State == StateMissing {
		return ver
	}
	if fi, err := fsys.Lstat(ver.Dir); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		what := "a symlink"
		if target, err := fsys.Readlink(ver.Dir); err == nil {
			what = fmt.Sprintf("a symlink to %q", target)
		}
		ver.Problems = append([]Problem{{Code: CodeVersionSymlink, Path: ver.Dir,
			Message: ver.label() + ": is " + what + ", not a directory; swamp's walk, its data versions and its catalog never count it as a version, so swampj does not read it either"}},
			ver.Problems...)
		ver.State = StateDamaged
	}
	return ver
}

// itemPaths is what readVersion derives from the item directory, computed
// once per item rather than once per version.
type itemPaths struct {
	dir  string
	name string // filepath.Base(filepath.Clean(dir))
	// prefix is dir plus a separator when dir is already clean (and neither
	// "", "." nor the root), so that filepath.Join(dir, n) == prefix+n for a
	// version name n (digits only); "" means use filepath.Join.
	prefix string
	// open, when set, is the item directory open for stats relative to it
	// (ScanItem); versions not from its listing are looked at by path.
	open *fsx.Dir
}

func newItemPaths(itemDir string) itemPaths {
	clean := filepath.Clean(itemDir)
	p := itemPaths{dir: itemDir, name: filepath.Base(clean)}
	if filepath.Separator == '/' && clean == itemDir && itemDir != "." && itemDir != "/" {
		p.prefix = itemDir + "/"
	}
	return p
}

// readVersion is the package readVersion with the item's paths precomputed.
// The paths it builds are filepath.Join's, byte for byte.
func (p itemPaths) readVersion(fsys fsx.FS, v int64, opts CheckOptions) *Version {
	var dir, mdPath, rawPath string
	if p.prefix != "" {
		dir = p.prefix + versionName(v)
		mdPath = dir + "/" + MetadataFileName
		rawPath = dir + "/" + RawFileName
	} else {
		dir = filepath.Join(p.dir, versionName(v))
		mdPath = filepath.Join(dir, MetadataFileName)
		rawPath = filepath.Join(dir, RawFileName)
	}
	ver := &Version{
		Number:       v,
		Dir:          dir,
		MetadataPath: mdPath,
		RawPath:      rawPath,
		RawSize:      -1,
	}
	mdUsable := ver.checkMetadata(fsys, p.name)
	var rawInfo fs.FileInfo
	var rawErr error
	if p.open != nil && p.prefix != "" {
		rawInfo, rawErr = p.open.Stat(rawPath[len(p.prefix):]) // "{v}/raw"
	} else {
		rawInfo, rawErr = fsys.Stat(rawPath)
	}
	ver.checkRaw(fsys, rawInfo, rawErr, opts)
	ver.State = stateOf(ver, mdUsable)
	if ver.has(CodeMetadataMissing) && ver.has(CodeRawMissing) {
		ver.checkDir(fsys)
	}
	return ver
}

// label starts every message, so it says which version it is about.
func (v *Version) label() string { return "version " + versionName(v.Number) }

// checkMetadata reads metadata.yaml, decodes it, and checks it describes
// this version of the item named itemName. It reports whether the metadata
// can be used.
func (v *Version) checkMetadata(fsys fsx.FS, itemName string) bool {
	bp := metadataBuffers.Get().(*[]byte)
	data, err := readRegularFile(fsys, v.MetadataPath, maxMetadataSize, (*bp)[:0])
	defer func() {
		// Decode copies what it keeps, so the buffer is free again; one
		// that grew past a normal file is left to the collector.
		if cap(data) <= metadataBufferKeep {
			*bp = data[:0]
		}
		metadataBuffers.Put(bp)
	}()
	switch {
	case isAbsent(err):
		v.add(CodeMetadataMissing, v.MetadataPath, v.label()+": metadata.yaml does not exist", nil)
		return false
	case errors.Is(err, errNotRegular):
		v.add(CodeMetadataNotRegular, v.MetadataPath, v.label()+": metadata.yaml is not a regular file", nil)
		return false
	case errors.Is(err, errTooLarge):
		v.add(CodeMetadataInvalid, v.MetadataPath, fmt.Sprintf("%s: metadata.yaml is larger than %d bytes", v.label(), maxMetadataSize), nil)
		return false
	case err != nil:
		v.add(CodeMetadataUnreadable, v.MetadataPath, v.label()+": cannot read metadata.yaml: "+err.Error(), err)
		return false
	}

	md, err := meta.Decode(data)
	var invalid *meta.InvalidError
	switch {
	case errors.Is(err, meta.ErrEmpty) && len(data) == 0:
		v.add(CodeMetadataEmpty, v.MetadataPath, v.label()+": metadata.yaml is zero bytes", nil)
		return false
	case errors.Is(err, meta.ErrEmpty):
		v.add(CodeMetadataEmpty, v.MetadataPath, v.label()+": metadata.yaml holds only whitespace", nil)
		return false
	case errors.As(err, &invalid):
		v.add(CodeMetadataInvalid, v.MetadataPath, v.label()+": "+invalid.Error(), nil) // "metadata.yaml: field …"
		return false
	case err != nil:
		v.add(CodeMetadataInvalid, v.MetadataPath, v.label()+": metadata.yaml: "+err.Error(), nil)
		return false
	}

	v.Metadata = md
	usable := true
	if md.Version != v.Number {
		usable = false
		v.add(CodeVersionMismatch, v.MetadataPath, fmt.Sprintf("%s: metadata.yaml says version %d", v.label(), md.Version), nil)
	}
	if md.Name != itemName {
		usable = false
		v.add(CodeNameMismatch, v.MetadataPath,
			fmt.Sprintf("%s: metadata.yaml says name %q, the directory is %q", v.label(), md.Name, itemName), nil)
	}
	return usable
}

// checkRaw compares raw's stat (info, err) with the metadata. It runs even
// when the metadata cannot be used, so that an empty raw is reported beside
// an empty metadata.yaml (#3955 empties both).
func (v *Version) checkRaw(fsys fsx.FS, info fs.FileInfo, err error, opts CheckOptions) {
	switch {
	case isAbsent(err):
		v.add(CodeRawMissing, v.RawPath, v.label()+": raw does not exist", nil)
		return
	case err != nil:
		v.add(CodeRawUnreadable, v.RawPath, v.label()+": cannot stat raw: "+err.Error(), err)
		return
	case !info.Mode().IsRegular():
		v.add(CodeRawNotRegular, v.RawPath, v.label()+": raw is not a regular file", nil)
		return
	}
	v.RawSize = info.Size()

	md := v.Metadata
	switch {
	case md == nil:
		// Nothing says what raw should be; a zero-byte raw beside broken
		// metadata is still worth saying. Beside no metadata at all it is
		// a streaming write that has just begun.
		if v.RawSize == 0 && !v.has(CodeMetadataMissing) {
			v.add(CodeRawEmpty, v.RawPath, v.label()+": raw is zero bytes", nil)
		}
	case md.Size != nil && *md.Size != v.RawSize && v.RawSize == 0:
		v.add(CodeRawEmptyMismatch, v.RawPath, fmt.Sprintf("%s: raw is zero bytes, metadata.yaml says %d", v.label(), *md.Size), nil)
	case md.Size != nil && *md.Size != v.RawSize:
		v.add(CodeSizeMismatch, v.RawPath, fmt.Sprintf("%s: raw is %d bytes, metadata.yaml says %d", v.label(), v.RawSize, *md.Size), nil)
	case opts.VerifyChecksum && md.Checksum != "":
		sum, err := HashFile(fsys, v.RawPath)
		if err != nil {
			v.add(CodeRawUnreadable, v.RawPath, v.label()+": cannot read raw: "+err.Error(), err)
		} else if !strings.EqualFold(sum, md.Checksum) {
			v.add(CodeChecksumMismatch, v.RawPath, fmt.Sprintf("%s: raw has SHA-256 %s, metadata.yaml says %s", v.label(), sum, md.Checksum), nil)
		}
	}
}

// checkDir runs when neither file exists: it tells an empty directory (an
// allocated version never written) from no directory, or from a file where
// the directory should be.
func (v *Version) checkDir(fsys fsx.FS) {
	info, err := fsys.Lstat(v.Dir)
	switch {
	case isAbsent(err):
		v.Problems = []Problem{{Code: CodeVersionMissing, Path: v.Dir, Message: v.label() + ": directory does not exist"}}
		v.State = StateMissing
	case err == nil && !info.IsDir():
		v.Problems = []Problem{{Code: CodeVersionNotDir, Path: v.Dir, Message: v.label() + ": is not a directory"}}
		v.State = StateDamaged
	}
}

// stateOf sums up the problems: a missing file is an interrupted write
// (Incomplete), anything present but wrong is damage.
func stateOf(ver *Version, mdUsable bool) State {
	if len(ver.Problems) == 0 {
		return StateReadable
	}
	if ver.has(CodeMetadataMissing) {
		return StateIncomplete
	}
	if mdUsable && len(ver.Problems) == 1 && ver.has(CodeRawMissing) {
		return StateIncomplete
	}
	return StateDamaged
}

func (v *Version) add(code Code, path, msg string, err error) {
	v.Problems = append(v.Problems, Problem{Code: code, Path: path, Message: msg, Err: err})
}

// isAbsent reports an error meaning "no such file": ENOENT, or ENOTDIR when
// a path component is a file (a file where a version directory should be).
func isAbsent(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

var (
	errNotRegular = errors.New("not a regular file")
	errTooLarge   = errors.New("file too large")
)

// metadataBuffers are checkMetadata's read buffers: a scan reads every
// metadata.yaml of the data root, and a fresh buffer per file was a tenth
// of the doctor's garbage.
var metadataBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}

// metadataBufferKeep bounds the buffers kept for reuse.
const metadataBufferKeep = 64 << 10

// readRegularFile reads a small file into buf (grown when too small),
// refusing anything that stat (through symlinks) does not call a regular
// file. It costs what os.ReadFile costs: open, fstat, read, close.
func readRegularFile(fsys fsx.FS, path string, limit int64, buf []byte) ([]byte, error) {
	f, err := fsys.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, errNotRegular
	}
	if info.Size() > limit {
		return nil, errTooLarge
	}
	// Room for one byte more than stat says, so the EOF read needs no
	// reallocation; the limit is checked again while reading in case the
	// file grows.
	if want := int(info.Size()) + 1; cap(buf) < want {
		buf = make([]byte, 0, want)
	}
	buf = buf[:0]
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > limit {
			return nil, errTooLarge
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// hashBuffers are HashFile's read buffers. io.Copy would allocate 32 KiB
// per file (an *os.File hides the buffer behind WriteTo), which over a
// doctor --verify-checksums of 100,000 small raws is gigabytes of garbage.
var hashBuffers = sync.Pool{New: func() any { b := make([]byte, 128<<10); return &b }}

// HashFile returns the lowercase hex SHA-256 of a file, streaming it (raw
// can be gigabytes).
func HashFile(fsys fsx.FS, path string) (string, error) {
	fsys = fsx.OrReal(fsys)
	f, err := fsys.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	buf := hashBuffers.Get().(*[]byte)
	defer hashBuffers.Put(buf)
	h := sha256.New()
	for {
		n, err := f.Read(*buf)
		h.Write((*buf)[:n])
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", err
		}
	}
	var sum [sha256.Size]byte
	return hex.EncodeToString(h.Sum(sum[:0])), nil
}
