package store

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"strings"

	"github.com/swampj/swampj/fsx"
)

// ReadContent opens the raw content of version v for `data get`. The version
// is checked first (ReadVersion without hashing); one that is not readable is
// an *UnreadableError listing why, never an empty stream.
//
// The size is checked again on the open handle, so a raw replaced between
// the check and the open is caught. When metadata records a checksum, the
// returned file hashes what it serves and, instead of io.EOF, returns an
// *UnreadableError (CodeChecksumMismatch) at the end if the bytes are not the
// recorded ones: a crash can leave a file of the right length full of zeros,
// which no size check sees. A caller that stops before EOF gets no such check.
func ReadContent(fsys fsx.FS, itemDir string, v int64) (fsx.File, *Version, error) {
	ver, err := ReadVersion(fsys, itemDir, v, CheckOptions{})
	if err != nil {
		return nil, nil, err
	}
	if !ver.Readable() {
		return nil, ver, &UnreadableError{Path: ver.Dir, Problems: ver.Problems}
	}
	f, err := fsys.Open(ver.RawPath)
	if err != nil {
		code := CodeRawUnreadable
		if isAbsent(err) {
			code = CodeRawMissing
		}
		return nil, ver, ver.unreadable(code, ver.label()+": cannot open raw: "+err.Error(), err)
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, ver, ver.unreadable(CodeRawUnreadable, ver.label()+": cannot stat raw: "+err.Error(), err)
	}
	if want := ver.Metadata.Size; want != nil && info.Size() != *want {
		f.Close()
		return nil, ver, ver.unreadable(CodeSizeMismatch,
			fmt.Sprintf("%s: raw is %d bytes, metadata.yaml says %d", ver.label(), info.Size(), *want), nil)
	}
	if ver.Metadata.Checksum == "" {
		return f, ver, nil
	}
	return &verifyingFile{File: f, ver: ver, h: sha256.New()}, ver, nil
}

// verifyingFile hashes what is read and checks it against the metadata
// checksum when the reader reaches EOF.
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
				fmt.Sprintf("%s: raw has SHA-256 %s, metadata.yaml says %s", f.ver.label(), sum, want), nil)
		}
	}
	return n, err
}

// unreadable is the error for a problem with raw found while serving it.
func (v *Version) unreadable(code Code, msg string, err error) *UnreadableError {
	return &UnreadableError{Path: v.Dir, Problems: []Problem{{Code: code, Path: v.RawPath, Message: msg, Err: err}}}
}
