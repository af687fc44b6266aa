package sdk_test

import (
	"fmt"

	"github.com/sluicehq/sluice/sdk"
)

// A connector checks the names in its configuration as the runtime will,
// and names the field at fault.
func ExampleValidName() {
	for _, stream := range []string{"clicks", "clicks.deadletter", "..", "-v", "a/b"} {
		if err := sdk.ValidName(stream); err != nil {
			fmt.Printf("Stream: %v\n", err)
			continue
		}
		fmt.Printf("Stream %q is fine\n", stream)
	}
	// Output:
	// Stream "clicks" is fine
	// Stream "clicks.deadletter" is fine
	// Stream: ".." starts with '.': start with a letter or a digit (names are used as URL path segments, file names and command-line arguments)
	// Stream: "-v" starts with '-': start with a letter or a digit (names are used as URL path segments, file names and command-line arguments)
	// Stream: "a/b" has '/': use letters, digits, '-', '_' and '.'
}
