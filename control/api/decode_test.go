package api

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestDecodeIsStrict(t *testing.T) {
	for _, tc := range []struct {
		name string
		into any
		body string
		want string // "" means accepted
	}{
		{"deploy", &DeployRequest{}, `{"manifest": {"name": "a", "environment": {"A": "1", "a": "2"}, "inputs": [{"stream": "s", "routing": "group-by"}]}}`, ""},
		{"scale", &ScaleRequest{}, ` {"instances": 3}` + "\n", ""},
		{"trailing garbage", &DeployRequest{}, `{"manifest": {"name": "a"}} x`, "invalid JSON"},
		{"a second object", &ScaleRequest{}, `{"instances": 3}{"instances": 4}`, "unexpected an object after the JSON object"},
		{"duplicate key", &ScaleRequest{}, `{"instances": 3, "instances": 300}`, "instances: given twice"},
		{"duplicate nested key", &DeployRequest{}, `{"manifest": {"name": "a", "name": "b"}}`, "manifest.name: given twice"},
		{"duplicate environment key", &DeployRequest{}, `{"manifest": {"name": "a", "environment": {"A": "1", "A": "2"}}}`, "manifest.environment.A: given twice"},
		{"unknown field on scale", &ScaleRequest{}, `{"instances": 3, "replicas": 4}`, `replicas: unknown field: want instances`},
		{"unknown nested field", &DeploymentRequest{}, `{"manifests": [{"name": "a"}, {"name": "b", "instnaces": 2}]}`, "manifests[1].instnaces: unknown field"},
		{"field in another case", &ScaleRequest{}, `{"Instances": 3}`, `Instances: unknown field (did you mean "instances"? names are case-sensitive)`},
		{"wrong type", &ScaleRequest{}, `{"instances": "3"}`, "instances: want an integer, got a JSON string"},
		{"not an object", &ScaleRequest{}, `[3]`, "want a JSON object, got an array"},
		{"null", &ScaleRequest{}, `null`, "want a JSON object, got null"},
		{"empty", &ScaleRequest{}, "  \n", "empty: want a JSON object"},
		{"truncated", &DeployRequest{}, `{"manifest": {"name": "a"`, "unexpected end of JSON"},
		{"invalid UTF-8", &DeployRequest{}, "{\"manifest\": {\"name\": \"\xff\"}}", "not valid UTF-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Decode([]byte(tc.body), tc.into)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("got %v, want accepted", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// requestTypes are the bodies of the control API's requests, by the
// fuzzer's selector byte.
var requestTypes = []func() any{
	func() any { return &DeployRequest{} },
	func() any { return &DeploymentRequest{} },
	func() any { return &ScaleRequest{} },
}

// FuzzDecodeRequest feeds every request type through the one decoder of
// request bodies. Whatever it accepts is one valid JSON object that
// encoding/json decodes the same way, and survives a round trip.
func FuzzDecodeRequest(f *testing.F) {
	for _, seed := range []string{
		`{"manifest": {"name": "count", "kind": "counter", "executable": "/opt/x", "instances": 4, "keyGroups": 256,
		  "inputs": [{"stream": "words", "routing": "group-by"}], "outputs": ["counts"], "cpus": 0.5, "mem": 256, "disk": 1024,
		  "retries": 3, "environment": {"A": "1"}, "restart": {"maxRestarts": 10, "window": "1m", "deadLetterAfter": 3}}}`,
		`{"manifests": [{"name": "a"}, {"name": "b", "inputs": []}]}`,
		`{"instances": 3}`,
		`{"instances": 3, "instances": 4}`,
		`{"instances": 3} {}`,
		`{"manifest": {"name": "a", "NAME": "b"}}`,
		`{"manifest": null}`,
		`{"manifests": [null, {"restart": null}]}`,
		`{"manifest": {"restart": {"window": "1m", "window": "2m"}}}`,
		`{"manifest": {"environment": {"\u0041": "1", "A": "2"}}}`,
		`{"manifest": {"inputs": [{"stream": "s", "routing": 7}]}}`,
		`{"manifest": {"instances": 1e3}}`,
		`{"instances": -0}`,
	} {
		for i := range requestTypes {
			f.Add(byte(i), []byte(seed))
		}
	}
	f.Fuzz(func(t *testing.T, which byte, data []byte) {
		newReq := requestTypes[int(which)%len(requestTypes)]
		v := newReq()
		if err := Decode(data, v); err != nil {
			return
		}
		if !json.Valid(data) {
			t.Fatalf("accepted invalid JSON %q", data)
		}
		// encoding/json, unrestricted, reads the same value.
		w := newReq()
		if err := json.Unmarshal(data, w); err != nil {
			t.Fatalf("accepted %q, which encoding/json refuses: %v", data, err)
		}
		if !reflect.DeepEqual(v, w) {
			t.Fatalf("decoded %q as %+v, encoding/json as %+v", data, v, w)
		}
		// Its own encoding is accepted again and encodes the same (empty
		// lists and maps are left out by omitempty, so compare encodings).
		out, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("re-encoding %+v: %v", v, err)
		}
		again := newReq()
		if err := Decode(out, again); err != nil {
			t.Fatalf("refused its own encoding %s of %q: %v", out, data, err)
		}
		if out2, _ := json.Marshal(again); string(out2) != string(out) {
			t.Fatalf("round trip of %q: %s, then %s", data, out, out2)
		}
	})
}
