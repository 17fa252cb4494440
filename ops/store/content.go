package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"strings"

	"github.com/swampj/swampj/fsx"
)

// ReadContent is ReadContentContext without a context.
func ReadContent(fsys fsx.FS, itemDir string, v int64) (fsx.File, *Version, error) {
	fsys = fsx.OrReal(fsys)
	return ReadContentContext(context.Background(), fsys, itemDir, v)
}

// ReadContentContext opens the raw content of version v for `data get`. The
// version is checked first (ReadVersion without hashing); one that is not
// readable is an *UnreadableError listing why, never an empty stream.
//
// The size is checked again on the open handle, so a raw replaced between
// the check and the open is caught. When metadata records a checksum, raw is
// hashed through the open handle before anything is returned: bytes that
// fail their checksum are never handed out (a crash can leave a file of the
// right length full of zeros, which no size check sees). A mismatch is an
// *UnreadableError with CodeChecksumMismatch naming raw. Hashing reads the
// whole file, so a large raw is read twice; ctx ends the hashing early.
//
// The file returned then rewinds and hashes again what it serves and,
// instead of io.EOF, returns an *UnreadableError at the end if the bytes
// changed after they were verified (a writer bypassing swamp's locks); a
// caller that stops before EOF gets no such second check.
func ReadContentContext(ctx context.Context, fsys fsx.FS, itemDir string, v int64) (fsx.File, *Version, error) {
	fsys = fsx.OrReal(fsys)
	ver, err := ReadVersion(fsys, itemDir, v, CheckOptions{})
	if err != nil {
		return nil, nil, err
	}
	if !ver.Readable() {
		return nil, ver, &UnreadableError{Path: ver.Dir, Problems: ver.Problems}
	}
	f, err := openRaw(fsys, ver)
	if err != nil {
		return nil, ver, err
	}
	if ver.Metadata.Checksum == "" {
		return f, ver, nil
	}
	sum, err := hashReader(ctx, f)
	if err != nil {
		f.Close()
		if ctx.Err() != nil {
			return nil, ver, ctx.Err()
		}
		return nil, ver, ver.unreadable(CodeRawUnreadable, ver.label()+": cannot read raw: "+err.Error(), err)
	}
	if want := ver.Metadata.Checksum; !strings.EqualFold(sum, want) {
		f.Close()
		return nil, ver, ver.unreadable(CodeChecksumMismatch,
			fmt.Sprintf("%s: raw has SHA-256 %s, metadata.yaml says %s; none of it was served", ver.label(), sum, want), nil)
	}
	if sk, ok := f.(io.Seeker); ok {
		if _, err = sk.Seek(0, io.SeekStart); err != nil {
			f.Close()
			return nil, ver, ver.unreadable(CodeRawUnreadable, ver.label()+": cannot rewind raw: "+err.Error(), err)
		}
	} else {
		f.Close()
		if f, err = openRaw(fsys, ver); err != nil {
			return nil, ver, err
		}
	}
	return &verifyingFile{File: f, ver: ver, h: sha256.New()}, ver, nil
}

// openRaw opens raw and checks its size on the handle against the metadata.
func openRaw(fsys fsx.FS, ver *Version) (fsx.File, error) {
	f, err := fsys.Open(ver.RawPath)
	if err != nil {
		code := CodeRawUnreadable
		if isAbsent(err) {
			code = CodeRawMissing
		}
		return nil, ver.unreadable(code, ver.label()+": cannot open raw: "+err.Error(), err)
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, ver.unreadable(CodeRawUnreadable, ver.label()+": cannot stat raw: "+err.Error(), err)
	}
	if want := ver.Metadata.Size; want != nil && info.Size() != *want {
		f.Close()
		return nil, ver.unreadable(CodeSizeMismatch,
			fmt.Sprintf("%s: raw is %d bytes, metadata.yaml says %d", ver.label(), info.Size(), *want), nil)
	}
	return f, nil
}

// hashReader is the lowercase hex SHA-256 of r, read to EOF in 1 MiB steps
// so that ctx can end it between them.
func hashReader(ctx context.Context, r io.Reader) (string, error) {
	h := sha256.New()
	buf := make([]byte, 1<<20)
	for {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		n, err := r.Read(buf)
		h.Write(buf[:n])
		if err == io.EOF {
			return hex.EncodeToString(h.Sum(nil)), nil
		}
		if err != nil {
			return "", err
		}
	}
}

// verifyingFile hashes what is read and checks it against the metadata
// checksum when the reader reaches EOF: the bytes were verified before the
// first was served, so a mismatch here means raw changed since.
type verifyingFile struct {
	fsx.File
	ver *Version
	h   hash.Hash
}

func (f *verifyingFile) Read(p []byte) (int, error) {
	n, err := f.File.Read(p)
	f.h.Write(p[:n])
	if err == io.EOF {
		sum := hex.EncodeToString(f.h.Sum(nil))
		if want := f.ver.Metadata.Checksum; !strings.EqualFold(sum, want) {
			return n, f.ver.unreadable(CodeChecksumMismatch,
				fmt.Sprintf("%s: raw changed while it was served: it now has SHA-256 %s, metadata.yaml says %s", f.ver.label(), sum, want), nil)
		}
	}
	return n, err
}

// unreadable is the error for a problem with raw found while serving it.
func (v *Version) unreadable(code Code, msg string, err error) *UnreadableError {
	return &UnreadableError{Path: v.Dir, Problems: []Problem{{Code: code, Path: v.RawPath, Message: msg, Err: err}}}
}
