package objstore

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Key limits, the strictest of the backends: S3 allows 1024 bytes per key,
// file systems 255 bytes per path segment.
const (
	MaxKeyLen     = 1024
	MaxSegmentLen = 255
)

// ReservedPrefix starts the names backends give their own files (the
// directory store's temporary files); no key segment may start with it.
const ReservedPrefix = ".objstore-"

// ValidateKey reports whether key is a valid object key, returning an error
// wrapping ErrInvalidKey that names the problem if not. A key is a relative
// slash-separated path of valid UTF-8: not empty, at most MaxKeyLen bytes,
// no leading or trailing slash, no empty, "." or ".." segment, no segment
// longer than MaxSegmentLen or starting with ReservedPrefix, and no
// backslash or control character. Every Store applies these rules.
func ValidateKey(key string) error {
	if key == "" {
		return fmt.Errorf("%w: empty", ErrInvalidKey)
	}
	if err := checkChars(key); err != nil {
		return fmt.Errorf("%w %q: %s", ErrInvalidKey, key, err)
	}
	for seg := range strings.SplitSeq(key, "/") {
		if err := checkSegment(seg); err != nil {
			return fmt.Errorf("%w %q: %s", ErrInvalidKey, key, err)
		}
	}
	return nil
}

// ValidatePrefix reports whether prefix can start a valid key (List's
// argument): the rules of ValidateKey, except that it may be empty or end
// in a slash, and its last segment may be any beginning of a valid one
// ("." or ".." too, which begin ".meta" and "..x").
func ValidatePrefix(prefix string) error {
	if prefix == "" {
		return nil
	}
	if err := checkChars(prefix); err != nil {
		return fmt.Errorf("%w: prefix %q: %s", ErrInvalidKey, prefix, err)
	}
	segs := strings.Split(prefix, "/")
	last := segs[len(segs)-1]
	for _, seg := range segs[:len(segs)-1] {
		if err := checkSegment(seg); err != nil {
			return fmt.Errorf("%w: prefix %q: %s", ErrInvalidKey, prefix, err)
		}
	}
	if len(last) > MaxSegmentLen {
		return fmt.Errorf("%w: prefix %q: a segment is longer than %d bytes", ErrInvalidKey, prefix, MaxSegmentLen)
	}
	if strings.HasPrefix(last, ReservedPrefix) {
		return fmt.Errorf("%w: prefix %q: a segment starts with the reserved %q", ErrInvalidKey, prefix, ReservedPrefix)
	}
	return nil
}

func checkChars(s string) error {
	if len(s) > MaxKeyLen {
		return fmt.Errorf("longer than %d bytes", MaxKeyLen)
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("not valid UTF-8")
	}
	if s[0] == '/' {
		return fmt.Errorf("starts with a slash (keys are relative)")
	}
	for _, r := range s {
		switch {
		case r < 0x20 || r == 0x7f:
			return fmt.Errorf("control character %U", r)
		case r == '\\':
			return fmt.Errorf("backslash (use slashes)")
		}
	}
	return nil
}

func checkSegment(seg string) error {
	switch {
	case seg == "":
		return fmt.Errorf("empty segment (leading, trailing or double slash)")
	case seg == "." || seg == "..":
		return fmt.Errorf("%q segment", seg)
	case len(seg) > MaxSegmentLen:
		return fmt.Errorf("a segment is longer than %d bytes", MaxSegmentLen)
	case strings.HasPrefix(seg, ReservedPrefix):
		return fmt.Errorf("a segment starts with the reserved %q", ReservedPrefix)
	}
	return nil
}
