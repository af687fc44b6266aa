package objstore

import (
	"errors"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestValidateKey(t *testing.T) {
	for _, tc := range []struct {
		key  string
		want string // "" for valid, else a part of the message
	}{
		{"a", ""},
		{"ckpt/000042/000123.sst", ""},
		{"..x/.hidden/y..", ""},
		{"sp ace/ünï+%20", ""},
		{strings.Repeat("s", MaxSegmentLen), ""},
		{"", "empty"},
		{"/a", "starts with a slash"},
		{"a/", "empty segment"},
		{"a//b", "empty segment"},
		{".", `"." segment`},
		{"a/./b", `"." segment`},
		{"..", `".." segment`},
		{"a/../b", `".." segment`},
		{"a\\b", "backslash"},
		{"a\x00b", "control character"},
		{"a\tb", "control character"},
		{"a\x7fb", "control character"},
		{"\xc3", "not valid UTF-8"},
		{strings.Repeat("s", MaxSegmentLen+1), "longer than 255"},
		{strings.Repeat("ab/", 400), "longer than 1024"},
		{ReservedPrefix + "tmp-1", "reserved"},
		{"a/" + ReservedPrefix, "reserved"},
	} {
		err := ValidateKey(tc.key)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("ValidateKey(%q): got %v, want nil", tc.key, err)
		case tc.want != "" && (!errors.Is(err, ErrInvalidKey) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("ValidateKey(%q): got %v, want ErrInvalidKey saying %q", tc.key, err, tc.want)
		case tc.want != "" && !strings.HasPrefix(err.Error(), "objstore: invalid key"):
			t.Errorf("ValidateKey(%q): got %q, want the message to start with the package", tc.key, err)
		}
	}
}

func TestValidatePrefix(t *testing.T) {
	for _, tc := range []struct {
		prefix string
		ok     bool
	}{
		{"", true}, {"a", true}, {"a/", true}, {"a/b", true}, {".", true}, {"..", true}, {"a/.", true}, {"ckpt/00", true},
		{"/", false}, {"/a", false}, {"a//", false}, {"../", false}, {"a/./", false}, {"\\", false}, {"x\x00", false},
		{ReservedPrefix, false}, {"a/" + ReservedPrefix + "x/", false},
	} {
		err := ValidatePrefix(tc.prefix)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrInvalidKey)) {
			t.Errorf("ValidatePrefix(%q): got %v, want ok=%v", tc.prefix, err, tc.ok)
		}
	}
}

// FuzzValidateKey checks that a key accepted is safe to use as a path
// below a root, and that every beginning of it is an accepted prefix.
func FuzzValidateKey(f *testing.F) {
	for _, s := range []string{"a", "a/b", "../a", "a/..", "..a/b", "/a", "a//b", "ü/ä", ".objstore-x", "a\\b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		if ValidateKey(key) != nil {
			return
		}
		if path.Clean(key) != key || path.IsAbs(key) || key == ".." || strings.HasPrefix(key, "../") {
			t.Fatalf("accepted key %q is not a clean relative path", key)
		}
		root := "/root/store"
		if p := filepath.Join(root, filepath.FromSlash(key)); !strings.HasPrefix(p, root+"/") {
			t.Fatalf("accepted key %q escapes the root: %s", key, p)
		}
		for i := range len(key) + 1 {
			if utf8.ValidString(key[:i]) {
				if err := ValidatePrefix(key[:i]); err != nil {
					t.Fatalf("prefix %q of accepted key %q rejected: %v", key[:i], key, err)
				}
			}
		}
	})
}
