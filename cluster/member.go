package cluster

import (
	"context"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// Member is one Sluice node as seen by the cluster.
//
// A Member is a plain value; the backends copy it on Join and hand out
// fresh copies in every snapshot, so callers may keep or modify what they
// receive.
type Member struct {
	ID       string            `json:"id"`                 // unique node id, 1-128 characters from [A-Za-z0-9._-]
	Address  string            `json:"address"`            // actor (protoactor remote) host:port
	HTTPAddr string            `json:"httpAddr,omitempty"` // metrics/control HTTP host:port; optional
	Kinds    []string          `json:"kinds"`              // operator kinds this node can host
	Version  string            `json:"version,omitempty"`  // Sluice version of the node; optional
	Meta     map[string]string `json:"meta,omitempty"`     // extra metadata; keys from [A-Za-z0-9_-]
}

// Limits checked by Member.Validate. They keep every Member representable
// in every backend (the Consul catalog caps service metadata at 64 pairs,
// keys at 128 and values at 512 bytes).
const (
	MaxIDLen        = 128
	MaxKindLen      = 128
	MaxVersionLen   = 128
	MaxMetaKeys     = 32
	MaxMetaKeyLen   = 128
	MaxMetaValueLen = 512
)

// ReservedMetaPrefix starts the metadata keys that backends use for their
// own bookkeeping (for example "sluice_http" in the Consul catalog).
// Member.Meta keys must not start with it.
const ReservedMetaPrefix = "sluice_"

// Discovery is a membership backend.
//
// A Discovery value represents one node: it joins at most once and, after
// Leave, cannot be reused. All methods are safe for concurrent use.
type Discovery interface {
	// Join registers self and keeps it alive (heartbeats, re-registration
	// after a backend restart) until Leave is called or ctx ends; when ctx
	// ends the member leaves gracefully, as with Leave.
	//
	// Join blocks only until self is registered. It fails fast, with an
	// error wrapping ErrUnavailable and naming the backend address, when
	// the backend is unreachable at start; it does not retry that first
	// registration: the caller decides. It returns an error wrapping
	// ErrInvalidMember for a Member that fails Validate, ErrAlreadyJoined
	// on a second call and ErrLeft after Leave.
	Join(ctx context.Context, self Member) error

	// Watch returns a channel of membership snapshots: the alive members,
	// sorted by ID, each in the form of Member.Normalize. The current
	// membership is sent as soon as the backend answers, then a new
	// snapshot on every change. Delivery is latest-wins (the channel
	// buffers one snapshot; an undelivered one is replaced by a newer
	// one). While the backend is unreachable no snapshot is sent: the last
	// one stays valid. Watch does not block; the backend owns the channel
	// and closes it when ctx ends or Leave is called. Watch may be used
	// without Join, by a process that only observes the cluster.
	Watch(ctx context.Context) <-chan []Member

	// Leave deregisters self (graceful leave), stops every goroutine of
	// this Discovery, closes every Watch channel, and waits for all of it.
	// It is safe to call twice and before Join; only the call that
	// deregisters can return an error. ctx bounds the deregistration.
	Leave(ctx context.Context) error
}

// Validate reports whether m can be announced to the cluster. The error
// wraps ErrInvalidMember and names the offending field and the fix.
func (m Member) Validate() error {
	if !validID(m.ID) {
		return fmt.Errorf("%w: ID %q: use 1-%d characters from A-Z a-z 0-9 . _ -", ErrInvalidMember, m.ID, MaxIDLen)
	}
	if err := validHostPort(m.Address); err != nil {
		return fmt.Errorf("%w: member %q: Address %q: %v; want host:port, e.g. 10.0.0.5:8090", ErrInvalidMember, m.ID, m.Address, err)
	}
	if m.HTTPAddr != "" {
		if err := validHostPort(m.HTTPAddr); err != nil {
			return fmt.Errorf("%w: member %q: HTTPAddr %q: %v; want host:port or empty", ErrInvalidMember, m.ID, m.HTTPAddr, err)
		}
	}
	for _, k := range m.Kinds {
		if k == "" || len(k) > MaxKindLen || strings.ContainsRune(k, ',') || strings.IndexFunc(k, notGraphic) >= 0 {
			return fmt.Errorf("%w: member %q: kind %q: use 1-%d printable characters without spaces or commas", ErrInvalidMember, m.ID, k, MaxKindLen)
		}
	}
	if len(m.Version) > MaxVersionLen || strings.IndexFunc(m.Version, notGraphic) >= 0 {
		return fmt.Errorf("%w: member %q: Version %q: use at most %d printable characters without spaces", ErrInvalidMember, m.ID, m.Version, MaxVersionLen)
	}
	if len(m.Meta) > MaxMetaKeys {
		return fmt.Errorf("%w: member %q: Meta has %d keys, at most %d allowed", ErrInvalidMember, m.ID, len(m.Meta), MaxMetaKeys)
	}
	for _, k := range slices.Sorted(maps.Keys(m.Meta)) {
		switch {
		case !validMetaKey(k):
			return fmt.Errorf("%w: member %q: Meta key %q: use 1-%d characters from A-Z a-z 0-9 _ -", ErrInvalidMember, m.ID, k, MaxMetaKeyLen)
		case strings.HasPrefix(strings.ToLower(k), ReservedMetaPrefix) || strings.HasPrefix(strings.ToLower(k), "consul-"):
			return fmt.Errorf("%w: member %q: Meta key %q: the prefixes %q and \"consul-\" are reserved, rename the key", ErrInvalidMember, m.ID, k, ReservedMetaPrefix)
		case len(m.Meta[k]) > MaxMetaValueLen:
			return fmt.Errorf("%w: member %q: Meta[%q] is %d bytes, at most %d allowed", ErrInvalidMember, m.ID, k, len(m.Meta[k]), MaxMetaValueLen)
		}
	}
	return nil
}

// Normalize returns a deep copy of m in canonical form: Kinds sorted with
// duplicates removed, and nil instead of an empty Kinds slice or Meta map.
// Backends put every Member of a snapshot in this form, so snapshots can
// be compared with reflect.DeepEqual.
func (m Member) Normalize() Member {
	out := m
	out.Kinds = nil
	if len(m.Kinds) > 0 {
		out.Kinds = slices.Compact(slices.Sorted(slices.Values(m.Kinds)))
	}
	out.Meta = nil
	if len(m.Meta) > 0 {
		out.Meta = maps.Clone(m.Meta)
	}
	return out
}

func validID(id string) bool {
	if id == "" || len(id) > MaxIDLen {
		return false
	}
	for _, r := range id {
		if !isAlnum(r) && r != '.' && r != '_' && r != '-' {
			return false
		}
	}
	return true
}

func validMetaKey(k string) bool {
	if k == "" || len(k) > MaxMetaKeyLen {
		return false
	}
	for _, r := range k {
		if !isAlnum(r) && r != '_' && r != '-' {
			return false
		}
	}
	return true
}

func isAlnum(r rune) bool {
	return r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r))
}

func notGraphic(r rune) bool { return !unicode.IsGraphic(r) || unicode.IsSpace(r) }

func validHostPort(s string) error {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return err
	}
	if host == "" {
		return fmt.Errorf("empty host")
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return fmt.Errorf("port %q is not in 1-65535", port)
	}
	return nil
}

// HealthReporter is implemented by a Discovery that can publish the local
// member's own account of its health. SetHealth("") reports it healthy;
// any other reason reports it unhealthy (a full disk, say): its health
// check fails with the reason as output (Consul: warning) for operators
// and their alerts, but it stays a member in every view (Watch), keeping
// its instances while it takes no work; a member that cannot go on exits
// instead, and the cluster moves its instances as after a crash.
// SetHealth does not block; the backend publishes the change at once and
// on every heartbeat.
type HealthReporter interface {
	SetHealth(reason string)
}

// LapseReporter is implemented by a Discovery that can tell when the local
// member's own membership lapsed: its heartbeat could not run for longer
// than the membership's TTL (the process was frozen: a long GC pause, a
// suspended VM, SIGSTOP), so the others have dropped it from their views
// as if it had crashed and taken over its work. The backend then stops
// refreshing the membership (the member does not come back as the same
// member) and closes Lapsed; the owner must not go on with what it holds,
// which the others took over (actors fences the node: it exits, and
// restarts afresh). A failing backend (Consul unreachable) is not a
// lapse: the heartbeat ran and tried.
type LapseReporter interface {
	Lapsed() <-chan struct{}
}
