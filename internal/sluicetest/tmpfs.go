package sluicetest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// Tmpfs mounts a tmpfs of size bytes on a new temporary directory and
// returns it; the test's cleanup unmounts it. It needs root (or
// CAP_SYS_ADMIN), as in make test; without, the test fails saying so
// rather than skipping, so a disk-full test never passes untried.
func Tmpfs(t testing.TB, size int64) string {
	t.Helper()
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d", size)); err != nil {
		t.Fatalf("mount a %d-byte tmpfs on %s: %v (the disk-full tests need root or CAP_SYS_ADMIN to mount a small file system)", size, dir, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount tmpfs %s: %v", dir, err)
		}
	})
	return dir
}

// FillDisk writes a file named filler in dir until the file system has
// no more than leave bytes free (0: until it is full), and returns the
// file's path: removing it frees the space again.
func FillDisk(t testing.TB, dir string, leave uint64) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatalf("fill %s: %v", dir, err)
	}
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for {
		var st unix.Statfs_t
		if err := unix.Statfs(dir, &st); err != nil {
			t.Fatalf("fill %s: statfs: %v", dir, err)
		}
		free := st.Bavail * uint64(st.Bsize) //nolint:unconvert // int64 on linux
		if free <= leave {
			return path
		}
		n := min(uint64(len(chunk)), free-leave)
		if _, err := f.Write(chunk[:n]); err != nil {
			if errors.Is(err, unix.ENOSPC) || strings.Contains(err.Error(), "no space") {
				return path
			}
			t.Fatalf("fill %s: %v", dir, err)
		}
	}
}
