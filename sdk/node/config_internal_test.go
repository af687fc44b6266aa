package node

import (
	"context"
	"reflect"
	"slices"
	"testing"

	"github.com/sluicehq/sluice/actors"
	"github.com/sluicehq/sluice/sdk"
)

// wiring lists the fields of actors.Config that are the node's
// collaborators: Start builds them from Config's settings, so NodeConfig
// has none of them.
var wiring = []string{"Announce", "Checkpoints", "Cluster", "Observer", "Store"}

// TestNodeConfigIsActorsConfigWithoutWiring: NodeConfig has every field of
// actors.Config but the collaborators, with the same type, and both
// conversions carry each of them (a knob added to actors.Config and not
// here, or not converted, fails).
func TestNodeConfigIsActorsConfigWithoutWiring(t *testing.T) {
	at, nt := reflect.TypeFor[actors.Config](), reflect.TypeFor[NodeConfig]()
	var missing []string
	for f := range at.Fields() {
		nf, ok := nt.FieldByName(f.Name)
		switch {
		case slices.Contains(wiring, f.Name):
			if ok {
				t.Errorf("NodeConfig has %s, a collaborator Start builds", f.Name)
			}
		case !ok:
			missing = append(missing, f.Name)
		case nf.Type != f.Type:
			t.Errorf("NodeConfig.%s is a %v, actors.Config's a %v", f.Name, nf.Type, f.Type)
		}
	}
	if len(missing) > 0 {
		t.Errorf("NodeConfig lacks actors.Config's %v", missing)
	}
	if nt.NumField()+len(wiring) != at.NumField() {
		t.Errorf("NodeConfig has %d fields, actors.Config %d with %d collaborators", nt.NumField(), at.NumField(), len(wiring))
	}
	// Every field set to a distinct non-zero value survives both ways.
	var n NodeConfig
	v := reflect.ValueOf(&n).Elem()
	for i := range v.NumField() {
		setNonZero(t, v.Field(i), i+1)
	}
	a := n.actors()
	av := reflect.ValueOf(a)
	for i := range v.NumField() {
		name := nt.Field(i).Name
		got := av.FieldByName(name)
		if got.Kind() == reflect.Func {
			if got.IsNil() {
				t.Errorf("actors() drops %s", name)
			}
			continue
		}
		if !reflect.DeepEqual(got.Interface(), v.Field(i).Interface()) {
			t.Errorf("actors().%s = %v, want %v", name, got, v.Field(i))
		}
	}
	back := nodeConfigOf(a)
	bv := reflect.ValueOf(back)
	for i := range v.NumField() {
		if f := bv.Field(i); f.Kind() == reflect.Func && f.IsNil() || f.Kind() != reflect.Func && !reflect.DeepEqual(f.Interface(), v.Field(i).Interface()) {
			t.Errorf("nodeConfigOf(actors()).%s = %v, want %v", nt.Field(i).Name, f, v.Field(i))
		}
	}
}

// setNonZero sets f to a non-zero value derived from i.
func setNonZero(t *testing.T, f reflect.Value, i int) {
	t.Helper()
	switch f.Kind() {
	case reflect.String:
		f.SetString("v" + string(rune('a'+i)))
	case reflect.Int, reflect.Int64:
		f.SetInt(int64(i))
	case reflect.Bool:
		f.SetBool(true)
	case reflect.Slice:
		f.Set(reflect.ValueOf([]string{"k"}))
	case reflect.Pointer:
		f.Set(reflect.New(f.Type().Elem()))
	case reflect.Func:
		f.Set(reflect.MakeFunc(f.Type(), func([]reflect.Value) []reflect.Value { return nil }))
	case reflect.Interface:
		f.Set(reflect.ValueOf(fakeStateLog{}))
	default:
		t.Fatalf("no non-zero value for a %v", f.Type())
	}
}

// fakeStateLog is a StateLog that is never called: it only fills the
// field in TestNodeConfigIsActorsConfigWithoutWiring.
type fakeStateLog struct{}

func (fakeStateLog) Append(context.Context, string, int, []sdk.KV) error { return nil }
func (fakeStateLog) Restore(context.Context, string, int, int, int, func(sdk.KV) error) error {
	return nil
}
