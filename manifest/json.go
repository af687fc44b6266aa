package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// JSON is read with encoding/json's tokenizer into the same yaml.Node trees
// that YAML parses into, so both go through one decoder with the same rules
// and line numbers. (yaml.v3 cannot read all JSON itself: it rejects tab
// indentation and the \/ escape, and mangles surrogate pairs.)

// jsonReader turns a stream of JSON values into yaml.Node trees.
type jsonReader struct {
	data  []byte
	dec   *json.Decoder
	lines []int // offset of the start of each line
}

func newJSONReader(data []byte) *jsonReader {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	lines := []int{0}
	for i, c := range data {
		if c == '\n' {
			lines = append(lines, i+1)
		}
	}
	return &jsonReader{data: data, dec: dec, lines: lines}
}

// parseJSON returns the top-level JSON values of data (usually one object
// or one array) as nodes, or the first syntax error with its line.
func parseJSON(data []byte) ([]*yaml.Node, *FieldError) {
	r := newJSONReader(data)
	var docs []*yaml.Node
	for r.skip(int(r.dec.InputOffset()), " \t\r\n") < len(data) {
		n, err := r.node(0)
		if err != nil {
			return nil, err
		}
		docs = append(docs, n)
	}
	return docs, nil
}

// node reads the next value.
func (r *jsonReader) node(depth int) (*yaml.Node, *FieldError) {
	start := r.skip(int(r.dec.InputOffset()), " \t\r\n,:")
	tok, err := r.dec.Token()
	if err != nil {
		return nil, r.syntax(err)
	}
	n := &yaml.Node{Kind: yaml.ScalarNode}
	n.Line, n.Column = r.pos(start)
	switch t := tok.(type) {
	case json.Delim:
		if depth >= maxDepth {
			return nil, &FieldError{Line: n.Line, Problem: "JSON nested too deeply"}
		}
		n.Kind, n.Tag = yaml.MappingNode, "!!map"
		if t == '[' {
			n.Kind, n.Tag = yaml.SequenceNode, "!!seq"
		}
		for r.dec.More() {
			if n.Kind == yaml.MappingNode {
				k, err := r.node(depth + 1) // the tokenizer only gives strings here
				if err != nil {
					return nil, err
				}
				n.Content = append(n.Content, k)
			}
			v, err := r.node(depth + 1)
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, v)
		}
		if _, err := r.dec.Token(); err != nil { // the closing delimiter
			return nil, r.syntax(err)
		}
	case string:
		n.Tag, n.Value, n.Style = "!!str", t, yaml.DoubleQuotedStyle
	case json.Number:
		n.Tag, n.Value = "!!int", t.String()
		if strings.ContainsAny(n.Value, ".eE") {
			n.Tag = "!!float"
		}
	case bool:
		n.Tag, n.Value = "!!bool", "false"
		if t {
			n.Value = "true"
		}
	case nil:
		n.Tag, n.Value = "!!null", "null"
	}
	return n, nil
}

// syntax turns a tokenizer error into a FieldError at its line.
func (r *jsonReader) syntax(err error) *FieldError {
	off := int(r.dec.InputOffset())
	var se *json.SyntaxError
	if errors.As(err, &se) {
		off = int(se.Offset)
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		off, err = len(r.data), errors.New("unexpected end of JSON input")
	}
	line, _ := r.pos(off)
	return &FieldError{Line: line, Problem: "bad JSON: " + strings.TrimPrefix(err.Error(), "json: ")}
}

// skip returns the offset of the first byte at or after off not in set.
func (r *jsonReader) skip(off int, set string) int {
	for off < len(r.data) && strings.IndexByte(set, r.data[off]) >= 0 {
		off++
	}
	return off
}

// pos returns the 1-based line and column (in bytes) of offset off.
func (r *jsonReader) pos(off int) (line, col int) {
	i := sort.Search(len(r.lines), func(i int) bool { return r.lines[i] > off }) - 1
	return i + 1, off - r.lines[i] + 1
}
