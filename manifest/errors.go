package manifest

import (
	"fmt"
	"strings"
)

// FieldError is one problem with one field of a manifest.
type FieldError struct {
	// Line is the 1-based line of the problem in the parsed text; 0 when
	// it is not known (Validate works on decoded values, which have none).
	Line int
	// Field is the path of the field: "instances", "inputs[1].routing",
	// "restart.window", "environment.PATH". It is empty for a problem with
	// the document as a whole (bad syntax, a document that is not a
	// mapping) and, for an unknown field, it is the path of the mapping
	// that holds it.
	Field string
	// Problem says what is wrong and what is allowed.
	Problem string
}

// Error returns "line 4: instances: must be ≥ 1, got 0", leaving out the
// parts that are not known.
func (e FieldError) Error() string {
	var b strings.Builder
	if e.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Problem)
	return b.String()
}

// ParseError reports text that is not a well-formed manifest file: bad
// YAML or JSON syntax, an unknown field, a value of the wrong type, or no
// manifest at all. It lists every such problem the parser could find;
// after a syntax error it cannot go on, so that one comes last.
type ParseError struct {
	// File is the path given to ParseFile; empty for Parse.
	File string
	// Problems lists the problems in the order of the text.
	Problems []FieldError
}

// Error returns "manifest: FILE: line 4: unknown field ...", or, with several
// problems, "manifest: FILE: 3 problems: ...; ...; ...".
func (e *ParseError) Error() string {
	prefix := "manifest: "
	if e.File != "" {
		prefix += e.File + ": "
	}
	return prefix + joinProblems(e.Problems)
}

// Lines returns each problem as a line of its own, in the form of
// FieldError.Error.
func (e *ParseError) Lines() []string { return lines(e.Problems) }

// ValidationError reports a manifest whose fields break the rules of
// Validate. It lists every problem, in the order of the fields of
// api.Manifest.
type ValidationError struct {
	// Name is the manifest's name as given (possibly empty or invalid).
	Name string
	// Problems lists every invalid field.
	Problems []FieldError
}

// Error returns `manifest "count": instances: must be ≥ 1, got -1`, or,
// with several problems, `manifest "count": 2 problems: ...; ...`.
func (e *ValidationError) Error() string {
	return fmt.Sprintf("manifest %q: %s", e.Name, joinProblems(e.Problems))
}

// Lines returns each problem as "field: problem", the form of
// api.Error.Fields, so a server can answer with them as they are.
func (e *ValidationError) Lines() []string { return lines(e.Problems) }

func joinProblems(ps []FieldError) string {
	switch len(ps) {
	case 0:
		return "invalid"
	case 1:
		return ps[0].Error()
	}
	return fmt.Sprintf("%d problems: %s", len(ps), strings.Join(lines(ps), "; "))
}

func lines(ps []FieldError) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Error()
	}
	return out
}
