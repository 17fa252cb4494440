//go:build !linux

package fsx

import (
	"io/fs"
	"os"
	"path/filepath"
)

const statAtSupported = false

func statAt(_ int, name, rel string) (fs.FileInfo, error) {
	return os.Stat(filepath.Join(name, rel))
}

func openDirFile(name string) (*os.File, error) { return os.Open(name) }

func readFileAt(_ int, name, rel string) ([]byte, error) {
	return os.ReadFile(filepath.Join(name, rel))
}

func (OS) openDirAt(name string) (*os.File, error) { return openDirFile(name) }

func statBeneath(fsys FS, _ int, name, rel string) (fs.FileInfo, error) {
	return fsys.Stat(filepath.Join(name, rel))
}

func readFileBeneath(fsys FS, _ int, name, rel string) ([]byte, error) {
	return fsys.ReadFile(filepath.Join(name, rel))
}
