package kafka

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/sdk"
)

// health tracks whether a franz-go client reaches its brokers, from the
// client's own connection attempts and reads (it is installed as a hook).
// franz-go retries internally and never reports a down broker to a
// consumer, so this is how the source and the sink notice an outage and
// report it. It also tells an outage from a refusal: brokers that reject
// the client's credentials or certificate (see refused). Safe for
// concurrent use.
type health struct {
	sasl string // "SASL <mechanism> as <user>", for messages; set before the client starts

	down   atomic.Bool
	mu     sync.Mutex
	err    error // the last failed dial
	at     time.Time
	auth   error          // the last refusal, until a connection succeeds
	inAuth map[string]int // connections in SASL authentication, by broker address
}

var (
	_ kgo.HookBrokerConnect = (*health)(nil)
	_ kgo.HookBrokerRead    = (*health)(nil)
)

// OnBrokerConnect implements kgo.HookBrokerConnect. err includes the
// TLS handshake and SASL authentication of the new connection.
func (h *health) OnBrokerConnect(meta kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	addr := net.JoinHostPort(meta.Host, strconv.Itoa(int(meta.Port)))
	h.mu.Lock()
	defer h.mu.Unlock()
	midAuth := h.inAuth[addr] > 0
	delete(h.inAuth, addr)
	if err == nil {
		h.down.Store(false)
		h.auth = nil
		return
	}
	if r := h.refusal(addr, err, midAuth); r != nil {
		h.auth = r
	}
	if !h.down.Load() {
		h.at = time.Now()
	}
	h.err = fmt.Errorf("broker %s: %w", addr, err)
	h.down.Store(true)
}

// OnBrokerRead implements kgo.HookBrokerRead: a successful read means the
// brokers are back.
func (h *health) OnBrokerRead(_ kgo.BrokerMetadata, _ int16, _ int, _, _ time.Duration, err error) {
	if err == nil && h.down.Load() {
		h.down.Store(false)
	}
}

// authStarted and authEnded bracket the SASL authentication of a
// connection to addr (see trackedMechanism).
func (h *health) authStarted(addr string) {
	h.mu.Lock()
	if h.inAuth == nil {
		h.inAuth = make(map[string]int)
	}
	h.inAuth[addr]++
	h.mu.Unlock()
}

func (h *health) authEnded(addr string) {
	h.mu.Lock()
	if h.inAuth[addr] > 0 {
		h.inAuth[addr]--
	}
	h.mu.Unlock()
}

// refusal classifies a failed connection to addr: an error wrapping
// ErrAuthentication, saying which setting to check, when the broker
// refused the client's credentials or certificate
// (midAuth: the connection died during SASL authentication); nil for an
// outage. (A TLS client on a plaintext listener, or the reverse, looks
// like an outage: Kafka brokers close such connections without a word.) Called with h.mu held.
func (h *health) refusal(addr string, err error, midAuth bool) error {
	var (
		verify  *tls.CertificateVerificationError
		unknown x509.UnknownAuthorityError
		host    x509.HostnameError
		invalid x509.CertificateInvalidError
	)
	switch {
	case errors.Is(err, kerr.SaslAuthenticationFailed), errors.Is(err, kerr.IllegalSaslState):
		return fmt.Errorf("%w: broker %s refused %s: %v; check Security.SASL (user, password, mechanism)", ErrAuthentication, addr, h.sasl, err)
	case errors.Is(err, kerr.UnsupportedSaslMechanism):
		return fmt.Errorf("%w: broker %s does not offer %s: %v; check Security.SASL.Mechanism against the broker's sasl.enabled.mechanisms", ErrAuthentication, addr, h.sasl, err)
	case midAuth:
		return fmt.Errorf("%w: broker %s closed the connection while authenticating %s (%v): the credentials are most likely wrong; check Security.SASL (user, password, mechanism)", ErrAuthentication, addr, h.sasl, err)
	case errors.As(err, &verify), errors.As(err, &unknown), errors.As(err, &host), errors.As(err, &invalid):
		return fmt.Errorf("%w: broker %s: its TLS certificate was not accepted: %v; check Security.TLS.CAFile (the CA that signs the brokers' certificates) and Security.TLS.ServerName", ErrAuthentication, addr, err)
	case strings.Contains(err.Error(), "remote error: tls:"):
		return fmt.Errorf("%w: broker %s refused the TLS handshake: %v; if it requires client certificates, set Security.TLS.CertFile and KeyFile to one its CA signed", ErrAuthentication, addr, err)
	}
	return nil
}

// refused returns the last refusal (an error wrapping ErrAuthentication)
// while no connection has succeeded since, else nil.
func (h *health) refused() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.auth
}

// unavailable returns an error wrapping ErrUnavailable while the last
// connection attempt failed, else nil.
func (h *health) unavailable() error {
	if !h.down.Load() {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.err == nil {
		return nil
	}
	return fmt.Errorf("%w for %v: %v", ErrUnavailable, time.Since(h.at).Round(100*time.Millisecond), h.err)
}

// failure returns what to report for err, an operation on the brokers
// that failed: the refusal if the brokers refuse the client (not
// transient: a retry will not cure it), else err wrapped as transient and
// naming the outage if there is one. what names the connector ("kafka
// sink \"out\"").
func (h *health) failure(what string, err error) error {
	if r := h.refused(); r != nil {
		return fmt.Errorf("%s: %w (%v)", what, r, err)
	}
	if u := h.unavailable(); u != nil {
		return fmt.Errorf("%s: %w: %w (%v)", what, sdk.ErrTransient, u, err)
	}
	return fmt.Errorf("%s: %w: %w", what, sdk.ErrTransient, err)
}
