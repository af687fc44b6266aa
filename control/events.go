package control

import (
	"slices"
	"time"

	"github.com/sluicehq/sluice/actors/status"
	"github.com/sluicehq/sluice/control/api"
)

// consoleEvents is how many events the console's timeline shows.
const consoleEvents = 100

// sameEventWithin is how close in time two nodes' accounts of one event
// (a member lost, seen by each survivor) are taken for one.
const sameEventWithin = 10 * time.Second

// events converts a node's cluster events for its status.
func events(es []status.Event) []api.Event {
	out := make([]api.Event, len(es))
	for i, e := range es {
		out[i] = api.Event{Time: e.Time, Node: e.Node, What: string(e.What), Operator: e.Operator, Peer: e.Peer,
			Checkpoint: e.Checkpoint, Detail: e.Detail}
	}
	return out
}

// timeline merges the events of every node that answered into the
// console's timeline, newest first: one entry for what several nodes
// report alike within sameEventWithin (each survivor sees a member lost),
// naming every node that saw it; at most consoleEvents entries.
func timeline(v view) []api.ConsoleEvent {
	var all []api.Event
	for _, st := range v.nodes {
		all = append(all, st.Events...)
	}
	slices.SortStableFunc(all, func(a, b api.Event) int { return a.Time.Compare(b.Time) })
	var out []api.ConsoleEvent
	open := map[api.Event]int{} // an event without Time and Node → its entry in out
	for _, e := range all {
		k := e
		k.Time, k.Node = time.Time{}, ""
		if i, ok := open[k]; ok && e.Time.Sub(out[i].Time) <= sameEventWithin {
			if !slices.Contains(out[i].Nodes, e.Node) {
				out[i].Nodes = append(out[i].Nodes, e.Node)
			}
			continue
		}
		open[k] = len(out)
		out = append(out, api.ConsoleEvent{Time: e.Time, Nodes: []string{e.Node}, What: e.What, Operator: e.Operator,
			Peer: e.Peer, Checkpoint: e.Checkpoint, Detail: e.Detail})
	}
	slices.Reverse(out)
	if len(out) > consoleEvents {
		out = out[:consoleEvents]
	}
	return out
}
