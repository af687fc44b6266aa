package control

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/control/api"
	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/topology"
)

// Streams returns every stream of t: who produces it, who reads it with
// which routing, and whether it dangles, with the counts of records that
// found no reader (counts, summed over nodes). Dead-letter streams appear
// when some operator reads them or some of their records were dropped.
func Streams(t topology.Topology, counts []api.StreamCount) []api.StreamView {
	byName := map[string]*api.StreamView{}
	get := func(name string) *api.StreamView {
		sv := byName[name]
		if sv == nil {
			sv = &api.StreamView{Name: name, Producers: []string{}, Consumers: []api.StreamReader{}}
			byName[name] = sv
		}
		return sv
	}
	for _, spec := range t.Operators {
		for _, out := range spec.Meta.Outputs {
			sv := get(out)
			sv.Producers = append(sv.Producers, spec.Meta.Name)
		}
		for _, in := range spec.Meta.Inputs {
			sv := get(in.Stream)
			sv.Consumers = append(sv.Consumers, api.StreamReader{Operator: spec.Meta.Name, Routing: in.Routing})
		}
	}
	for _, c := range counts {
		if c.Dropped == 0 && c.Held == 0 {
			continue
		}
		sv := get(c.Stream)
		sv.Dropped += c.Dropped
		sv.Held += c.Held
	}
	// A dead-letter stream has its operator as producer.
	for _, spec := range t.Operators {
		if sv := byName[core.DeadLetterStream(spec.Meta.Name)]; sv != nil {
			sv.Producers = append(sv.Producers, spec.Meta.Name)
		}
	}
	out := make([]api.StreamView, 0, len(byName))
	for _, sv := range byName {
		sv.NoProducer = len(sv.Producers) == 0
		sv.NoConsumer = len(sv.Consumers) == 0
		out = append(out, *sv)
	}
	slices.SortFunc(out, func(a, b api.StreamView) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// GraphText renders t as lines "producer → stream (routing) → consumer",
// marking streams with no producer or no consumer and saying how many
// records found no reader.
func GraphText(t topology.Topology, streams []api.StreamView) string {
	var b strings.Builder
	fmt.Fprintf(&b, "topology version %d: %d operators\n", t.Version, len(t.Operators))
	for _, sv := range streams {
		producers := strings.Join(sv.Producers, ", ")
		if sv.NoProducer {
			producers = "(no producer)"
		}
		var readers []string
		for _, c := range sv.Consumers {
			readers = append(readers, fmt.Sprintf("%s [%s]", c.Operator, c.Routing))
		}
		consumers := strings.Join(readers, ", ")
		if sv.NoConsumer {
			consumers = "(no consumer)"
		}
		if u := unread(sv); u != "" {
			consumers += "  [" + u + "]"
		}
		fmt.Fprintf(&b, "%s → %s → %s\n", producers, sv.Name, consumers)
	}
	for _, spec := range t.Operators {
		if len(spec.Meta.Inputs) == 0 && len(spec.Meta.Outputs) == 0 {
			fmt.Fprintf(&b, "%s (no inputs, no outputs)\n", spec.Meta.Name)
		}
	}
	return b.String()
}

// unread describes the records of sv that found no reader, or is "".
func unread(sv api.StreamView) string {
	var parts []string
	if sv.Dropped > 0 {
		parts = append(parts, fmt.Sprintf("%d dropped", sv.Dropped))
	}
	if sv.Held > 0 {
		parts = append(parts, fmt.Sprintf("%d held", sv.Held))
	}
	if len(parts) == 0 {
		return ""
	}
	return "no reader: " + strings.Join(parts, ", ")
}

// GraphDOT renders t in Graphviz DOT: operators as boxes, streams as
// ellipses (dashed and red when they have no producer or no consumer),
// edges labelled with the routing.
func GraphDOT(t topology.Topology, streams []api.StreamView) string {
	var b strings.Builder
	b.WriteString("digraph sluice {\n  rankdir=LR;\n")
	for _, spec := range t.Operators {
		fmt.Fprintf(&b, "  %q [shape=box, label=%q];\n", "op:"+spec.Meta.Name, fmt.Sprintf("%s ×%d", spec.Meta.Name, spec.Meta.Parallelism))
	}
	for _, sv := range streams {
		style := ""
		switch {
		case sv.NoProducer && sv.NoConsumer:
			style = `, style=dashed, color=red, xlabel="no producer, no consumer"`
		case sv.NoProducer:
			style = `, style=dashed, color=red, xlabel="no producer"`
		case sv.NoConsumer:
			style = `, style=dashed, color=red, xlabel="no consumer"`
		}
		label := sv.Name
		if u := unread(sv); u != "" {
			label += "\n" + u
		}
		fmt.Fprintf(&b, "  %q [shape=ellipse, label=%q%s];\n", "stream:"+sv.Name, label, style)
		for _, p := range sv.Producers {
			fmt.Fprintf(&b, "  %q -> %q;\n", "op:"+p, "stream:"+sv.Name)
		}
		for _, c := range sv.Consumers {
			fmt.Fprintf(&b, "  %q -> %q [label=%q];\n", "stream:"+sv.Name, "op:"+c.Operator, c.Routing.String())
		}
	}
	b.WriteString("}\n")
	return b.String()
}

// streamViews returns the streams of the cluster's topology with the
// unread-record counts of every node that answered.
func (s *Server) streamViews(r *http.Request) (topology.Topology, []api.StreamView, error) {
	v, err := s.gather(r.Context())
	if err != nil {
		return topology.Topology{}, nil, err
	}
	var counts []api.StreamCount
	for _, st := range v.nodes {
		counts = append(counts, st.Streams...)
	}
	return v.topo, Streams(v.topo, counts), nil
}

func (s *Server) streams(w http.ResponseWriter, r *http.Request) {
	if !s.request(w, r, nil) {
		return
	}
	_, views, err := s.streamViews(r)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, err)
		return
	}
	writeJSON(w, http.StatusOK, views)
}

func (s *Server) graph(w http.ResponseWriter, r *http.Request) {
	if !s.request(w, r, nil, "format") {
		return
	}
	format := r.URL.Query().Get("format")
	if format != "" && format != "text" && format != "dot" {
		writeError(w, http.StatusBadRequest, fmt.Errorf("format: unknown %q: want text (the default) or dot", format))
		return
	}
	t, views, err := s.streamViews(r)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, err)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if format == "dot" {
		_, _ = w.Write([]byte(GraphDOT(t, views)))
		return
	}
	_, _ = w.Write([]byte(GraphText(t, views)))
}
