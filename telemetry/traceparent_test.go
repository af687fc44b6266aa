package telemetry

import (
	"context"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

func TestTraceparentRoundTrip(t *testing.T) {
	for _, tp := range []string{
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00",
	} {
		sc, ok := ParseTraceparent(tp)
		if !ok {
			t.Fatalf("ParseTraceparent(%q) failed", tp)
		}
		if !sc.IsRemote() {
			t.Fatalf("ParseTraceparent(%q): span context not marked remote", tp)
		}
		if got := FormatTraceparent(sc); got != tp {
			t.Fatalf("FormatTraceparent(ParseTraceparent(%q)) = %q", tp, got)
		}
	}
	sc, _ := ParseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	if sc.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || sc.SpanID().String() != "00f067aa0ba902b7" || !sc.IsSampled() {
		t.Fatalf("parsed %v", sc)
	}
}

func TestTraceparentRejects(t *testing.T) {
	for _, tc := range []struct{ name, tp string }{
		{"empty", ""},
		{"garbage", "not a trace"},
		{"zero trace id", "00-00000000000000000000000000000000-00f067aa0ba902b7-01"},
		{"zero span id", "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01"},
		{"upper case", "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01"},
		{"version ff", "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
		{"short", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902-01"},
		{"version 00 with a suffix", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if sc, ok := ParseTraceparent(tc.tp); ok {
				t.Fatalf("ParseTraceparent(%q) = %v, want invalid", tc.tp, sc)
			}
		})
	}
	if got := FormatTraceparent(trace.SpanContext{}); got != "" {
		t.Fatalf("FormatTraceparent(invalid) = %q, want \"\"", got)
	}
}

// FuzzParseTraceparent: a record's trace header comes from outside (any
// producer may set it); parsing must never panic, must agree with
// OpenTelemetry's own W3C propagator, and whatever parses must format back
// to a valid header of the same trace.
func FuzzParseTraceparent(f *testing.F) {
	f.Add("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	f.Add("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-09-future")
	f.Add("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-09-")
	f.Add("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-05")
	f.Add("")
	f.Fuzz(func(t *testing.T, tp string) {
		sc, ok := ParseTraceparent(tp)
		want := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": tp}))
		if ok != want.IsValid() || ok && !sc.Equal(want) {
			t.Fatalf("ParseTraceparent(%q) = %v, %t; OpenTelemetry's propagator says %v, %t", tp, sc, ok, want, want.IsValid())
		}
		if !ok {
			return
		}
		out := FormatTraceparent(sc)
		again, ok := ParseTraceparent(out)
		if !ok || again.TraceID() != sc.TraceID() || again.SpanID() != sc.SpanID() || again.TraceFlags() != sc.TraceFlags() {
			t.Fatalf("%q parsed to %v, formatted to %q, which parses to %v (%t)", tp, sc, out, again, ok)
		}
		if !strings.HasPrefix(out, "00-") || len(out) != 55 {
			t.Fatalf("formatted %q", out)
		}
	})
}
