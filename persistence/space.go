package persistence

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Space is the room on the file system holding a directory.
type Space struct {
	// Free is what an unprivileged writer may still use, in bytes.
	Free uint64
	// Total is the file system's size, in bytes.
	Total uint64
}

// DiskSpace returns the room on the file system holding dir.
func DiskSpace(dir string) (Space, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return Space{}, fmt.Errorf("persistence: statfs %s: %w", dir, err)
	}
	bs := uint64(st.Bsize) //nolint:unconvert // int64 on linux, uint32 on darwin
	return Space{Free: st.Bavail * bs, Total: st.Blocks * bs}, nil
}
