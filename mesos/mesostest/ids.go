package mesostest

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
)

// newUUID returns a random (version 4) UUID as raw bytes, the form Mesos
// uses for TaskStatus.uuid.
func newUUID() []byte {
	u := make([]byte, 16)
	if _, err := rand.Read(u); err != nil {
		// crypto/rand.Read never fails on supported platforms (Go >= 1.24).
		panic(fmt.Sprintf("mesostest: reading random bytes: %v", err))
	}
	u[6] = (u[6] & 0x0f) | 0x40
	u[8] = (u[8] & 0x3f) | 0x80
	return u
}

// formatUUID renders a 16 byte UUID in canonical 8-4-4-4-12 form, as Mesos
// renders stream IDs.
func formatUUID(u []byte) string {
	h := hex.EncodeToString(u)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// validateID applies the Mesos rules for task and agent IDs
// (common/validation.cpp validateID): non-empty, not "." or "..", no '/'
// and no NUL or whitespace-control characters.
func validateID(id string) error {
	switch {
	case id == "":
		return fmt.Errorf("ID must not be empty")
	case id == "." || id == "..":
		return fmt.Errorf("'%s' is disallowed", id)
	case strings.ContainsAny(id, "/\x00"):
		return fmt.Errorf("'/' and NUL are not allowed in ID %q", id)
	}
	for _, r := range id {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("control characters are not allowed in ID %q", id)
		}
	}
	return nil
}
