//go:build !unix

package fsx

import "errors"

// FreeBytes is not known on this platform.
func FreeBytes(string) (uint64, error) {
	return 0, errors.New("free space is not known on this platform")
}

// Writable is not known on this platform: assumed.
func Writable(string) bool { return true }

// ReadOnlyMedia is not known on this platform: assumed not.
func ReadOnlyMedia(string) bool { return false }
