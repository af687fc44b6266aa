package manifest

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// Limits that keep a hostile or broken file from costing much: aliases and
// merge keys can make a small text stand for a huge tree.
const (
	maxVisits   = 100_000 // nodes decoded per Parse call, aliases followed included; real manifests have hundreds
	maxDepth    = 64      // nesting of mappings, lists and merges
	maxProblems = 50      // problems collected before giving up
)

// decoder fills Go values from yaml.Node trees (parsed from YAML or built
// from JSON, see json.go), with the rules of a manifest rather than those
// of yaml.v3's own decoder: unknown fields and keys given twice are errors,
// integers must be written as integers (yaml.v3 truncates 1.5 to 1), any
// scalar is accepted as a string (so "PORT: 8080" in an environment works),
// and every problem is collected with its line and field path instead of
// stopping at the first.
//
// It is a generic walk over the struct tags of the target type, so fields
// added to api.Manifest are decoded (and their typos caught) with no
// change here.
type decoder struct {
	problems []FieldError
	visits   int
	stopped  bool // a limit was hit; the problem saying so is recorded
}

// nonZero lists the top-level integer fields for which an explicit 0 in the
// text is an error rather than "unset". api.Manifest cannot tell the
// two apart once decoded, but a user who writes "instances: 0" expects
// something other than the kind's default.
var nonZero = map[string]string{
	"instances": "must be ≥ 1, got 0 (leave instances out to use the kind's default)",
	"keyGroups": "must be between 1 and 32768, got 0 (leave keyGroups out to use the kind's default, or 256)",
}

func (d *decoder) fail(n *yaml.Node, field, format string, args ...any) {
	if d.stopped {
		return
	}
	if len(d.problems) >= maxProblems {
		d.problems = append(d.problems, FieldError{Line: n.Line, Problem: fmt.Sprintf("more than %d problems; stopping here", maxProblems)})
		d.stopped = true
		return
	}
	d.problems = append(d.problems, FieldError{Line: n.Line, Field: field, Problem: fmt.Sprintf(format, args...)})
}

// spend counts a visit and reports whether decoding may go on.
func (d *decoder) spend(n *yaml.Node, depth int) bool {
	if d.stopped {
		return false
	}
	d.visits++
	if d.visits > maxVisits || depth > maxDepth {
		d.fail(n, "", "document too large or too deeply nested (aliases and merges count as copies)")
		d.stopped = true
		return false
	}
	return true
}

// resolve follows aliases to the node they stand for.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n.Kind == yaml.AliasNode && n.Alias != nil && i < maxDepth; i++ {
		n = n.Alias
	}
	return n
}

// value decodes n into v, which must be settable. A null leaves v as it is
// (the zero value, since every target starts zero).
func (d *decoder) value(n *yaml.Node, v reflect.Value, path string, depth int) {
	if !d.spend(n, depth) {
		return
	}
	n = resolve(n)
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		d.value(n, p.Elem(), path, depth)
		v.Set(p)
	case reflect.Struct:
		d.structure(n, v, path, depth)
	case reflect.Map:
		d.mapping(n, v, path, depth)
	case reflect.Slice:
		d.list(n, v, path, depth)
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			d.fail(n, path, "want a string, got %s", describe(n))
			return
		}
		v.SetString(n.Value)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
			d.fail(n, path, "want an integer, got %s", describe(n))
			return
		}
		if err := n.Decode(v.Addr().Interface()); err != nil {
			d.fail(n, path, "integer %s is out of range", n.Value)
			return
		}
		if msg, ok := nonZero[path]; ok && v.Int() == 0 {
			d.fail(n, path, "%s", msg)
		}
	case reflect.Float32, reflect.Float64:
		if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!int" && n.ShortTag() != "!!float") {
			d.fail(n, path, "want a number, got %s", describe(n))
			return
		}
		if err := n.Decode(v.Addr().Interface()); err != nil {
			d.fail(n, path, "number %s is out of range", n.Value)
		}
	case reflect.Bool:
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" {
			d.fail(n, path, "want true or false, got %s", describe(n))
			return
		}
		if err := n.Decode(v.Addr().Interface()); err != nil {
			d.fail(n, path, "want true or false, got %s", describe(n))
		}
	default:
		// Only reachable if api.Manifest gains a field of a kind
		// not handled above; say so rather than dropping it silently.
		d.fail(n, path, "cannot decode into %s", v.Type())
	}
}

func (d *decoder) structure(n *yaml.Node, v reflect.Value, path string, depth int) {
	if n.Kind != yaml.MappingNode {
		d.fail(n, path, "want a mapping of fields, got %s", describe(n))
		return
	}
	fields := fieldsOf(v.Type())
	for _, p := range d.pairs(n, path, depth) {
		i, ok := fields.index[p.key]
		if !ok {
			d.fail(p.k, path, "unknown field %q%s", p.key, fields.hint(p.key))
			continue
		}
		d.value(p.v, v.Field(i), join(path, p.key), depth+1)
	}
}

func (d *decoder) mapping(n *yaml.Node, v reflect.Value, path string, depth int) {
	if n.Kind != yaml.MappingNode {
		d.fail(n, path, "want a mapping of names to values, got %s", describe(n))
		return
	}
	t := v.Type()
	if t.Key().Kind() != reflect.String {
		d.fail(n, path, "cannot decode into %s", t)
		return
	}
	m := reflect.MakeMap(t)
	for _, p := range d.pairs(n, path, depth) {
		e := reflect.New(t.Elem()).Elem()
		d.value(p.v, e, path+keyPath(p.key), depth+1)
		m.SetMapIndex(reflect.ValueOf(p.key).Convert(t.Key()), e)
	}
	v.Set(m)
}

func (d *decoder) list(n *yaml.Node, v reflect.Value, path string, depth int) {
	if n.Kind != yaml.SequenceNode {
		d.fail(n, path, "want a list, got %s", describe(n))
		return
	}
	s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
	for i, e := range n.Content {
		d.value(e, s.Index(i), fmt.Sprintf("%s[%d]", path, i), depth+1)
	}
	v.Set(s)
}

// pair is one key and value of a mapping.
type pair struct {
	key  string
	k, v *yaml.Node
}

// pairs returns the entries of mapping n in the order to apply them: those
// merged in with "<<" first, so that the mapping's own keys override them.
// It reports keys that are not scalars and keys given twice.
func (d *decoder) pairs(n *yaml.Node, path string, depth int) []pair {
	var merged, own []pair
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), n.Content[i+1]
		if !d.spend(k, depth) {
			return nil
		}
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			merged = append(merged, d.merge(v, path, depth+1)...)
			continue
		}
		if k.Kind != yaml.ScalarNode || k.ShortTag() == "!!null" {
			d.fail(k, path, "want a name as key, got %s", describe(k))
			continue
		}
		if line, dup := seen[k.Value]; dup {
			d.fail(k, path, "%q is given twice (first on line %d)", k.Value, line)
			continue
		}
		seen[k.Value] = k.Line
		own = append(own, pair{k.Value, k, v})
	}
	return append(merged, own...)
}

// merge returns the entries merged in by a "<<" key: of one mapping, or of
// a list of mappings where earlier ones win.
func (d *decoder) merge(v *yaml.Node, path string, depth int) []pair {
	if !d.spend(v, depth) {
		return nil
	}
	v = resolve(v)
	switch v.Kind {
	case yaml.MappingNode:
		return d.pairs(v, path, depth)
	case yaml.SequenceNode:
		var out []pair
		for i := len(v.Content) - 1; i >= 0; i-- {
			e := resolve(v.Content[i])
			if e.Kind != yaml.MappingNode {
				d.fail(e, path, "<<: want a mapping to merge, got %s", describe(e))
				continue
			}
			out = append(out, d.pairs(e, path, depth+1)...)
		}
		return out
	}
	d.fail(v, path, "<<: want a mapping or a list of mappings to merge, got %s", describe(v))
	return nil
}

// structFields is the yaml names of a struct type's fields.
type structFields struct {
	names []string       // in declaration order
	index map[string]int // name → field index
}

func fieldsOf(t reflect.Type) structFields {
	f := structFields{index: map[string]int{}}
	for i := range t.NumField() {
		sf := t.Field(i)
		name, _, _ := strings.Cut(sf.Tag.Get("yaml"), ",")
		if name == "-" || !sf.IsExported() {
			continue
		}
		if name == "" {
			name = strings.ToLower(sf.Name)
		}
		f.names = append(f.names, name)
		f.index[name] = i
	}
	return f
}

// hint suggests the field the user probably meant, or lists them all when
// none is close (see closest).
func (f structFields) hint(key string) string {
	if best, ok := closest(key, f.names); ok {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	return ": want one of " + orList(f.names)
}

// closest returns the name nearest to key by edit distance, ignoring case,
// if it is close enough to be the one meant: at most a third of the key's
// characters changed, or up to 2 for keys of 4 to 8 characters, so that
// one- and two-character keys get a suggestion only when they differ from
// a name in case alone (any name is within two edits of them). Ties go to
// the name declared first.
func closest(key string, names []string) (string, bool) {
	k := strings.ToLower(key)
	n := utf8.RuneCountInString(k)
	allowed := max(n/3, min(2, n-2))
	best, bestDist := "", allowed+1
	for _, name := range names {
		if d := editDistance(k, strings.ToLower(name)); d < bestDist {
			best, bestDist = name, d
		}
	}
	return best, best != ""
}

// orList returns "a, b or c".
func orList(s []string) string {
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

// editDistance is the Levenshtein distance between a and b, in characters.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// describe names what a node holds, for "want X, got Y" messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.ShortTag() == "!!null" {
			return "nothing"
		}
		v := n.Value
		if r := []rune(v); len(r) > 40 {
			v = string(r[:40]) + "…"
		}
		return strconv.Quote(v)
	}
	return "nothing"
}

func join(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}

// keyPath is the path suffix of a map entry: ".NAME", or `["odd key"]`.
func keyPath(key string) string {
	if validEnvName(key) {
		return "." + key
	}
	return "[" + strconv.Quote(key) + "]"
}
