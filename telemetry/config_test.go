package telemetry

import (
	"errors"
	"maps"
	"testing"
)

func TestParseSampling(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want Sampling
	}{
		{"empty is the default", "", Sampling{Every: DefaultSampleEvery}},
		{"global rate", "100", Sampling{Every: 100}},
		{"zero turns it off", "0", Sampling{Every: 0}},
		{"override only", "gen=10", Sampling{Every: DefaultSampleEvery, Operators: map[string]int{"gen": 10}}},
		{"global and overrides", " 50 , clicks=1, views=0 ", Sampling{Every: 50, Operators: map[string]int{"clicks": 1, "views": 0}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseSampling(tc.in)
			if err != nil {
				t.Fatalf("ParseSampling(%q): %v", tc.in, err)
			}
			if got.Every != tc.want.Every || !maps.Equal(got.Operators, tc.want.Operators) {
				t.Fatalf("ParseSampling(%q) = %v, want %v", tc.in, got, tc.want)
			}
			again, err := ParseSampling(got.String())
			if err != nil || again.Every != got.Every || !maps.Equal(again.Operators, got.Operators) {
				t.Fatalf("round trip of %q through %q: got %v, %v", tc.in, got.String(), again, err)
			}
		})
	}
}

func TestParseSamplingRejects(t *testing.T) {
	for _, in := range []string{"-1", "x", "1.5", "=3", "gen=-2", "gen=", "10,20"} {
		t.Run(in, func(t *testing.T) {
			if _, err := ParseSampling(in); !errors.Is(err, ErrInvalidSampling) {
				t.Fatalf("ParseSampling(%q): got error %v, want ErrInvalidSampling", in, err)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want error
	}{
		{"zero", Config{}, nil},
		{"default", DefaultConfig(), nil},
		{"negative rate", Config{Sampling: Sampling{Every: -1}}, ErrInvalidSampling},
		{"negative override", Config{Sampling: Sampling{Operators: map[string]int{"a": -5}}}, ErrInvalidSampling},
		{"json protocol", Config{TraceExport: "http/json"}, ErrUnsupportedProtocol},
		{"unknown protocol", Config{MetricExport: "udp"}, ErrUnsupportedProtocol},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("Validate: got %v, want %v", err, tc.want)
			}
		})
	}
}
