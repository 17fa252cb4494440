//go:build unix

package fsx

import (
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"strconv"
	"strings"
	"syscall"
)

// ownerOf is "name:group (uid N, gid N)" of a file (the numbers alone
// when the names are not known here).
func ownerOf(fi fs.FileInfo) string {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "an unknown owner"
	}
	return fmt.Sprintf("%s:%s (uid %d, gid %d)", userName(int(st.Uid)), groupName(int(st.Gid)), st.Uid, st.Gid)
}

// currentUser is "name (uid N, gid N, groups a, b)" of this process.
func currentUser() string {
	uid, gid := os.Geteuid(), os.Getegid()
	var names []string
	if groups, err := os.Getgroups(); err == nil {
		for _, g := range groups {
			names = append(names, groupName(g))
		}
	}
	s := fmt.Sprintf("%s (uid %d, gid %d", userName(uid), uid, gid)
	if len(names) > 0 {
		s += ", groups " + strings.Join(names, ", ")
	}
	return s + ")"
}

func userName(uid int) string {
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		return u.Username
	}
	return strconv.Itoa(uid)
}

func groupName(gid int) string {
	if g, err := user.LookupGroupId(strconv.Itoa(gid)); err == nil {
		return g.Name
	}
	return strconv.Itoa(gid)
}
