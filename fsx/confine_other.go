//go:build !linux

package fsx

import (
	"os"
	"path/filepath"
)

// Confined is, off Linux, the plain real disk: there is no openat2 to hold
// a path beneath a directory, and swampj's trust boundary is enforced on
// Linux only (docs/design.md, the trust boundary).
type Confined struct {
	OS
	names []string
}

// NewConfined returns the plain real disk; the roots are only recorded.
func NewConfined(roots ...string) (*Confined, error) {
	c := &Confined{}
	for _, r := range roots {
		if r != "" {
			c.names = append(c.names, filepath.Clean(r))
		}
	}
	return c, nil
}

func (c *Confined) Close() error                            { return nil }
func (c *Confined) Roots() []string                         { return append([]string(nil), c.names...) }
func (c *Confined) Owner() (uid, gid int, ok bool)          { return 0, 0, false }
func (c *Confined) openDirAt(name string) (*os.File, error) { return openDirFile(name) }
