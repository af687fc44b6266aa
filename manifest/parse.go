package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/sluicehq/sluice/control/api"
)

// Parse reads the manifests in data: YAML or JSON, one manifest, several as
// YAML documents separated by "---", or a list (a JSON array or a YAML
// sequence) of them. It checks the form of the text, not the rules of
// Validate: unknown fields, keys given twice, values of the wrong type and
// an explicit 0 for instances or keyGroups are errors. Empty lists and
// mappings, and a restart policy with no field set, come back as nil, as
// they would from JSON with omitempty. On any problem Parse returns a
// *ParseError listing all it found, and no manifests.
func Parse(data []byte) ([]api.Manifest, error) {
	data = bytes.TrimPrefix(data, []byte("\uFEFF"))
	docs, syntaxErr := documents(data)
	d := &decoder{}
	var out []api.Manifest
	for _, doc := range docs {
		if doc.Kind == yaml.SequenceNode {
			for _, e := range doc.Content {
				out = append(out, d.manifest(e))
			}
			continue
		}
		out = append(out, d.manifest(doc))
	}
	problems := d.problems
	if syntaxErr != nil {
		problems = append(problems, *syntaxErr)
	} else if len(out) == 0 && len(problems) == 0 {
		problems = []FieldError{{Problem: "no manifest found: want a mapping of fields, several separated by ---, or a list of them"}}
	}
	if len(problems) > 0 {
		return nil, &ParseError{Problems: problems}
	}
	return out, nil
}

// ParseFile reads and parses the file at path, as Parse. A *ParseError
// names the file.
func ParseFile(path string) ([]api.Manifest, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	ms, err := Parse(data)
	var pe *ParseError
	if errors.As(err, &pe) {
		pe.File = path
	}
	return ms, err
}

// documents splits data into the root nodes of its non-empty documents. On
// a syntax error it returns those before it and the error.
func documents(data []byte) ([]*yaml.Node, *FieldError) {
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) > 0 && (t[0] == '{' || t[0] == '[') {
		docs, jerr := parseJSON(data)
		if jerr == nil {
			return docs, nil
		}
		// Not JSON, but it may be YAML in flow style ("{name: a}").
		if docs, yerr := parseYAML(data); yerr == nil {
			return docs, nil
		}
		return nil, jerr
	}
	return parseYAML(data)
}

func parseYAML(data []byte) ([]*yaml.Node, *FieldError) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []*yaml.Node
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return docs, yamlSyntax(err, data)
		}
		if len(doc.Content) == 0 {
			continue
		}
		if root := doc.Content[0]; root.Kind != yaml.ScalarNode || root.ShortTag() != "!!null" {
			docs = append(docs, root) // empty documents ("---" twice, only comments) are skipped
		}
	}
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// yamlSyntax turns a yaml.v3 syntax error ("yaml: line 3: did not find
// expected key") into a FieldError at its line.
func yamlSyntax(err error, data []byte) *FieldError {
	msg := err.Error()
	fe := &FieldError{Problem: "bad YAML: " + strings.TrimPrefix(msg, "yaml: ")}
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		fe.Line, _ = strconv.Atoi(m[1])
		fe.Problem = "bad YAML: " + m[2]
	}
	if strings.Contains(msg, "cannot start any token") && bytes.ContainsRune(data, '\t') {
		fe.Problem += " (YAML does not allow tabs for indentation)"
	}
	return fe
}

// manifest decodes one manifest from n.
func (d *decoder) manifest(n *yaml.Node) api.Manifest {
	var m api.Manifest
	if r := resolve(n); r.Kind != yaml.MappingNode {
		d.fail(r, "", "want a manifest (a mapping of fields such as name and instances), got %s", describe(r))
		return m
	}
	d.value(n, reflect.ValueOf(&m).Elem(), "", 0)
	return normalize(m)
}

// normalize makes empty lists and mappings nil, and an empty restart
// policy nil, so that a manifest equals itself after a round trip through
// JSON or YAML (which leave them out).
func normalize(m api.Manifest) api.Manifest {
	if len(m.Inputs) == 0 {
		m.Inputs = nil
	}
	if len(m.Outputs) == 0 {
		m.Outputs = nil
	}
	if len(m.Environment) == 0 {
		m.Environment = nil
	}
	if m.Restart != nil && *m.Restart == (api.ManifestRestart{}) {
		m.Restart = nil
	}
	return m
}
