package ysb

import (
	"regexp"
	"testing"
)

func TestUUIDShape(t *testing.T) {
	re := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	if got := uuid(0x0123456789abcdef, 0xfedcba9876543210); got != "01234567-89ab-cdef-fedc-ba9876543210" {
		t.Fatalf("got %s", got)
	}
	for i := range uint64(100) {
		if u := uuid(mix(1, i), mix(2, i)); !re.MatchString(u) {
			t.Fatalf("%q is not UUID-shaped", u)
		}
	}
}
