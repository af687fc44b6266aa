package manifest_test

import (
	"errors"
	"fmt"

	"github.com/sluicehq/sluice/manifest"
)

func ExampleParse() {
	ms, err := manifest.Parse([]byte(`
name: count
instances: 4
inputs:
  - stream: words
    routing: group-by
outputs: [counts]
---
name: top
inputs: [{stream: counts}]
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range ms {
		fmt.Println(m.Name, m.Instances, m.Inputs, m.Outputs)
	}
	// Output:
	// count 4 [{words group-by}] [counts]
	// top 0 [{counts }] []
}

func ExampleValidate() {
	ms, err := manifest.Parse([]byte(`
name: count
instances: 8
keyGroups: 4
inputs:
  - stream: words
    routing: hash
restart:
  window: 5 minutes
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	var ve *manifest.ValidationError
	if errors.As(manifest.Validate(ms[0]), &ve) {
		for _, line := range ve.Lines() {
			fmt.Println(line)
		}
	}
	// Output:
	// instances: must be ≤ keyGroups (4), got 8
	// inputs[0].routing: unknown routing "hash": want shuffle, round-robin, group-by or broadcast
	// restart.window: bad duration "5 minutes": unknown unit " minutes"; want a number and a unit (ns, us, ms, s, m, h), such as "30s" or "1h30m"
}

func ExampleParse_unknownField() {
	_, err := manifest.Parse([]byte("name: count\ninstnaces: 4\n"))
	fmt.Println(err)
	// Output:
	// manifest: line 2: unknown field "instnaces" (did you mean "instances"?)
}
