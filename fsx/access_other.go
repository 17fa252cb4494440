//go:build !unix

package fsx

import "io/fs"

func ownerOf(fs.FileInfo) string { return "an owner not known on this platform" }
func currentUser() string        { return "a user not known on this platform" }
