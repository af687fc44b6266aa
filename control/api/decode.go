package api

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"sync"
	"unicode/utf8"
)

// Decode decodes a request body, which must be exactly one JSON object,
// into v (a pointer to one of the request types, or any struct), more
// strictly than encoding/json: the text must be valid UTF-8; object keys
// must name a field exactly (not in another case) and appear once (also
// in maps such as a manifest's environment); nothing but white space may
// follow the object. Errors name the offending field by its path
// ("manifests[1].instnaces: unknown field"). The control API decodes every
// request body with it.
func Decode(data []byte, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("api: Decode needs a pointer to a struct, got %T", v)
	}
	if !utf8.Valid(data) {
		return errors.New("not valid UTF-8")
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return errors.New("empty: want a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	first, err := dec.Token()
	if err != nil {
		return syntaxError(dec, err)
	}
	if first != json.Delim('{') {
		return fmt.Errorf("want a JSON object, got %s", describeToken(first))
	}
	c := checker{dec: dec}
	if err := c.object(rv.Elem().Type(), ""); err != nil {
		return err
	}
	if tok, err := dec.Token(); err != io.EOF {
		if err != nil {
			return syntaxError(dec, err)
		}
		return fmt.Errorf("unexpected %s after the JSON object at byte %d: send one object", describeToken(tok), dec.InputOffset())
	}
	// The form is checked; encoding/json fills v and checks the types.
	dec = json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return fmt.Errorf("%s: want %s, got a JSON %s", te.Field, typeName(te.Type), te.Value)
		}
		return err
	}
	return nil
}

// checker walks the tokens of a JSON value along the Go type it decodes
// into.
type checker struct {
	dec *json.Decoder
}

// next reads the next token.
func (c *checker) next() (json.Token, error) {
	tok, err := c.dec.Token()
	if err != nil {
		return nil, syntaxError(c.dec, err)
	}
	return tok, nil
}

// value checks the next value, which decodes into t, at path.
func (c *checker) value(t reflect.Type, path string) error {
	tok, err := c.next()
	if err != nil {
		return err
	}
	for t.Kind() == reflect.Pointer {
		if tok == nil {
			return nil
		}
		t = t.Elem()
	}
	if opaque(t) {
		return c.skip(tok)
	}
	switch {
	case tok == json.Delim('{') && t.Kind() == reflect.Struct:
		return c.object(t, path)
	case tok == json.Delim('{') && t.Kind() == reflect.Map:
		return c.mapping(t, path)
	case tok == json.Delim('[') && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array):
		for i := 0; c.dec.More(); i++ {
			if err := c.value(t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		_, err := c.next() // ]
		return err
	}
	// A mismatch of types is left to encoding/json, which says it well.
	return c.skip(tok)
}

// object checks the members of an object decoding into struct t, after
// its opening brace.
func (c *checker) object(t reflect.Type, path string) error {
	fields := fieldsOf(t)
	seen := map[string]bool{}
	for c.dec.More() {
		key, err := c.key(path)
		if err != nil {
			return err
		}
		at := join(path, key)
		if seen[key] {
			return fmt.Errorf("%s: given twice: give each field once", at)
		}
		seen[key] = true
		ft, ok := fields.types[key]
		if !ok {
			return fmt.Errorf("%s: unknown field%s", at, fields.hint(key))
		}
		if err := c.value(ft, at); err != nil {
			return err
		}
	}
	_, err := c.next() // }
	return err
}

// mapping checks the members of an object decoding into map t.
func (c *checker) mapping(t reflect.Type, path string) error {
	seen := map[string]bool{}
	for c.dec.More() {
		key, err := c.key(path)
		if err != nil {
			return err
		}
		at := join(path, key)
		if seen[key] {
			return fmt.Errorf("%s: given twice: give each key once", at)
		}
		seen[key] = true
		if err := c.value(t.Elem(), at); err != nil {
			return err
		}
	}
	_, err := c.next() // }
	return err
}

// key reads an object key.
func (c *checker) key(path string) (string, error) {
	tok, err := c.next()
	if err != nil {
		return "", err
	}
	key, ok := tok.(string)
	if !ok {
		return "", fmt.Errorf("%s: want an object key, got %s", orTop(path), describeToken(tok))
	}
	return key, nil
}

// skip consumes the rest of a value whose first token is tok.
func (c *checker) skip(tok json.Token) error {
	if tok != json.Delim('{') && tok != json.Delim('[') {
		return nil
	}
	for depth := 1; depth > 0; {
		t, err := c.next()
		if err != nil {
			return err
		}
		switch t {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
	return nil
}

// structFields are the JSON fields of a struct type.
type structFields struct {
	types map[string]reflect.Type
	names []string
}

var fieldCache sync.Map // reflect.Type → structFields

// fieldsOf returns the JSON fields of struct t, as encoding/json names
// them (embedded structs are not used by the API's types and are not
// supported).
func fieldsOf(t reflect.Type) structFields {
	if f, ok := fieldCache.Load(t); ok {
		return f.(structFields)
	}
	f := structFields{types: map[string]reflect.Type{}}
	for i := range t.NumField() {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		f.types[name] = sf.Type
		f.names = append(f.names, name)
	}
	fieldCache.Store(t, f)
	return f
}

// hint suggests the field meant by an unknown key.
func (f structFields) hint(key string) string {
	for _, n := range f.names {
		if strings.EqualFold(n, key) {
			return fmt.Sprintf(" (did you mean %q? names are case-sensitive)", n)
		}
	}
	if len(f.names) == 0 {
		return ": this object has no fields"
	}
	return ": want " + strings.Join(f.names, ", ")
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// opaque reports whether t decodes itself, so that its JSON form is its
// own business (time.Time, core.Routing).
func opaque(t reflect.Type) bool {
	pt := reflect.PointerTo(t)
	return t.Implements(jsonUnmarshaler) || pt.Implements(jsonUnmarshaler) || t.Implements(textUnmarshaler) || pt.Implements(textUnmarshaler)
}

// syntaxError adds the position to a syntax error.
func syntaxError(dec *json.Decoder, err error) error {
	if err == io.EOF {
		return errors.New("unexpected end of JSON")
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("invalid JSON at byte %d: %w", se.Offset, err)
	}
	return fmt.Errorf("invalid JSON at byte %d: %w", dec.InputOffset(), err)
}

// describeToken names a token for an error.
func describeToken(tok json.Token) string {
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{', '}':
			return "an object"
		default:
			return "an array"
		}
	case string:
		return "a string"
	case json.Number, float64:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%v", tok)
}

// typeName names a Go type as JSON sees it.
func typeName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return t.String()
}

// join appends a field to a path.
func join(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}

// orTop names the top level for an empty path.
func orTop(path string) string {
	if path == "" {
		return "the request"
	}
	return path
}
