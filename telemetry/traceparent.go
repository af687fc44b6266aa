package telemetry

import "go.opentelemetry.io/otel/trace"

// ParseTraceparent returns the span context in a W3C traceparent header
// value (the actors/status.TraceHeader header of a record), marked remote; ok is
// false when the value is not a valid traceparent. It follows the W3C
// Trace Context rules exactly as OpenTelemetry's propagation.TraceContext
// does (a fuzz test checks that they agree), without its allocations.
func ParseTraceparent(tp string) (sc trace.SpanContext, ok bool) {
	// version "-" trace-id "-" parent-id "-" flags [ "-" future fields ]
	if len(tp) < 55 || tp[2] != '-' || tp[35] != '-' || tp[52] != '-' {
		return trace.SpanContext{}, false
	}
	var ver, flags [1]byte
	var cfg trace.SpanContextConfig
	if !unhex(ver[:], tp[0:2]) || !unhex(cfg.TraceID[:], tp[3:35]) || !unhex(cfg.SpanID[:], tp[36:52]) || !unhex(flags[:], tp[53:55]) {
		return trace.SpanContext{}, false
	}
	switch rest := tp[55:]; {
	case ver[0] == 0xff:
		return trace.SpanContext{}, false // forbidden version
	case ver[0] == 0 && (rest != "" || flags[0] > 3):
		return trace.SpanContext{}, false // version 00: nothing more, no reserved flags
	case rest != "" && rest[0] != '-':
		return trace.SpanContext{}, false
	}
	cfg.TraceFlags = trace.TraceFlags(flags[0]) & (trace.FlagsSampled | trace.FlagsRandom)
	cfg.Remote = true
	sc = trace.NewSpanContext(cfg)
	return sc, sc.IsValid()
}

// unhex decodes lower-case hex digits (the only ones W3C allows) into dst.
func unhex(dst []byte, s string) bool {
	for i := range dst {
		hi, ok1 := hexValue(s[2*i])
		lo, ok2 := hexValue(s[2*i+1])
		if !ok1 || !ok2 {
			return false
		}
		dst[i] = hi<<4 | lo
	}
	return true
}

func hexValue(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

// FormatTraceparent formats sc as a W3C traceparent header value (version
// 00), or "" when sc is invalid. Trace state is not carried: a record has
// one trace header.
func FormatTraceparent(sc trace.SpanContext) string {
	if !sc.IsValid() {
		return ""
	}
	tid, sid := sc.TraceID(), sc.SpanID()
	const hexdigits = "0123456789abcdef"
	var b [55]byte
	b[0], b[1], b[2] = '0', '0', '-'
	for i, x := range tid {
		b[3+2*i], b[4+2*i] = hexdigits[x>>4], hexdigits[x&0xf]
	}
	b[35] = '-'
	for i, x := range sid {
		b[36+2*i], b[37+2*i] = hexdigits[x>>4], hexdigits[x&0xf]
	}
	b[52] = '-'
	f := byte(sc.TraceFlags())
	b[53], b[54] = hexdigits[f>>4], hexdigits[f&0xf]
	return string(b[:])
}
