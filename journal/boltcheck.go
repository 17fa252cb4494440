package journal

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"io"

	"github.com/swampj/swampj/fsx"
)

// bbolt memory-maps its file and trusts the meta page's high-water mark: a
// file cut short (a power cut during a grow, a truncated copy) makes it read
// past the end of the mapping, which is a SIGBUS that kills the process —
// not a panic anyone can recover from. checkBoltFile reads the two meta pages
// the way bbolt does and refuses a file shorter than the meta it would use
// says it is. (Layout: bbolt internal/common/page.go and meta.go, v1.5.0.)

const (
	boltMagic       = 0xED0CDAED
	boltVersion     = 2
	boltPageHeader  = 16
	boltMetaSize    = 64 // magic..checksum
	boltMinPageSize = 512
)

type boltMeta struct {
	pageSize uint32
	pgid     uint64 // high-water mark: pages [0, pgid) exist
	txid     uint64
}

func parseBoltMeta(page []byte) (boltMeta, bool) {
	if len(page) < boltPageHeader+boltMetaSize {
		return boltMeta{}, false
	}
	m := page[boltPageHeader : boltPageHeader+boltMetaSize]
	le := binary.LittleEndian
	if le.Uint32(m[0:]) != boltMagic || le.Uint32(m[4:]) != boltVersion {
		return boltMeta{}, false
	}
	h := fnv.New64a()
	_, _ = h.Write(m[:56])
	if h.Sum64() != le.Uint64(m[56:]) {
		return boltMeta{}, false
	}
	return boltMeta{pageSize: le.Uint32(m[8:]), pgid: le.Uint64(m[40:]), txid: le.Uint64(m[48:])}, true
}

// checkBoltFile returns a CorruptError when bbolt would read past the end
// of the file at path (size bytes), or when neither meta page is valid.
func checkBoltFile(fsys fsx.FS, path string, size int64) error {
	f, err := fsys.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	first := make([]byte, boltPageHeader+boltMetaSize)
	if _, err := io.ReadFull(f, first); err != nil {
		return &CorruptError{Path: path, Reason: "too short to hold a bbolt meta page"}
	}
	m0, ok0 := parseBoltMeta(first)
	var m1 boltMeta
	ok1 := false
	if ps := int64(m0.pageSize); ok0 && ps >= boltMinPageSize {
		second := make([]byte, boltPageHeader+boltMetaSize)
		if rs, isSeeker := f.(io.Seeker); isSeeker {
			if _, err := rs.Seek(ps, io.SeekStart); err == nil {
				if _, err := io.ReadFull(f, second); err == nil {
					m1, ok1 = parseBoltMeta(second)
				}
			}
		}
	}
	var use boltMeta
	switch {
	case ok0 && ok1:
		use = m0
		if m1.txid > m0.txid {
			use = m1
		}
	case ok0:
		use = m0
	case ok1:
		use = m1
	default:
		return &CorruptError{Path: path, Reason: "no valid bbolt meta page"}
	}
	if need := int64(use.pgid) * int64(use.pageSize); need > size {
		return &CorruptError{Path: path, Reason: fmt.Sprintf("file is %d bytes but its last commit needs %d (cut short)", size, need)}
	}
	return nil
}
