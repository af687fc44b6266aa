package control

import (
	"fmt"
	"slices"

	"github.com/sluicehq/sluice/control/api"
	"github.com/sluicehq/sluice/internal/core"
)

// contradictions lists what a manifest of a hosted kind changes that the
// kind's code cannot follow, each "field: problem": the code produces to
// the outputs its Metadata names, so a manifest leaving one out would have
// every record to it refused, and it keeps state per key on the inputs it
// reads grouped by key, so another routing would spread one key's records
// over instances. (A manifest with a renamed output and another routing
// processed 7.4 M records and produced none, silently.) Adding outputs and
// renaming input streams are allowed.
func contradictions(mf api.Manifest, kind string, base core.Metadata) []string {
	var problems []string
	if mf.Outputs != nil {
		for _, out := range base.Outputs {
			if !slices.Contains(mf.Outputs, out) {
				problems = append(problems, fmt.Sprintf("outputs: kind %q produces to %q, which the manifest leaves out, so that each of its records would be refused: "+
					"add %q to outputs, or leave outputs out to keep the kind's %v", kind, out, out, base.Outputs))
			}
		}
	}
	if mf.Inputs == nil {
		return problems
	}
	grouped := func(routing string) bool { rt, _ := core.ParseRouting(routing); return rt == core.GroupBy } // validated
	if len(mf.Inputs) == len(base.Inputs) {
		// The same inputs, perhaps renamed: each keeps its routing's kind.
		for i, in := range mf.Inputs {
			if base.Inputs[i].Routing == core.GroupBy && !grouped(in.Routing) {
				rt, _ := core.ParseRouting(in.Routing)
				problems = append(problems, fmt.Sprintf("inputs[%d].routing: kind %q reads %q grouped by key (its state is per key), and %s would spread one key's records over its instances: use group-by",
					i, kind, base.Inputs[i].Stream, rt))
			}
		}
		return problems
	}
	keyed := slices.ContainsFunc(base.Inputs, func(b core.Input) bool { return b.Routing == core.GroupBy })
	if keyed && !slices.ContainsFunc(mf.Inputs, func(m api.ManifestInput) bool { return grouped(m.Routing) }) {
		problems = append(problems, fmt.Sprintf("inputs: kind %q reads its inputs grouped by key (its state is per key), and no input of the manifest is group-by", kind))
	}
	return problems
}
