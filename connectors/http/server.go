package http

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	nethttp "net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/creds"
	"github.com/sluicehq/sluice/sdk"
)

// HeaderIdempotencyKey is the request header naming a request: a request
// repeating a key the source remembers is answered without producing its
// records again (the sink sends it with every batch).
const HeaderIdempotencyKey = "Idempotency-Key"

// request is a POST the handler hands to Poll: its records, and where the
// answer goes once they are durable (or the source stops).
type request struct {
	recs []sdk.Record
	n    int         // len(recs) as received (recs is dropped once produced under exactly-once)
	key  string      // Idempotency-Key, "" without
	seq  uint64      // its order among the requests Poll produced
	dup  bool        // its key was seen: nothing produced
	done chan answer // buffered: the answer never blocks the instance
}

// answer is what the handler replies.
type answer struct {
	status int
	msg    string
}

func (r *request) reply(a answer) {
	select {
	case r.done <- a:
	default: // answered already
	}
}

// server is an instance's HTTP(S) server: it authenticates and parses
// requests and hands them to Poll through a bounded queue.
type server struct {
	cfg    SourceConfig
	tokens [][sha256.Size]byte
	queue  chan *request
	stop   chan struct{} // closed by close: handlers answer 503
	srv    *nethttp.Server
	ln     net.Listener
	files  *creds.Source
	wg     sync.WaitGroup
	once   sync.Once

	waiting atomic.Int64 // requests queued or produced, not yet answered

	mu  sync.Mutex
	err error // Serve's, reported by Poll
}

// listenAddr returns the address of instance index: Listen's port + index
// (port 0 stays 0: a free port each).
func listenAddr(listen string, index int) (string, error) {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "", err
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return "", err
	}
	if p != 0 {
		p += index
	}
	return net.JoinHostPort(host, strconv.Itoa(p)), nil
}

// startServer listens on instance index's address and serves.
func startServer(cfg SourceConfig, index int) (*server, error) {
	s := &server{cfg: cfg, queue: make(chan *request, cfg.QueueRequests), stop: make(chan struct{})}
	for _, t := range cfg.Tokens {
		s.tokens = append(s.tokens, sha256.Sum256([]byte(t)))
	}
	addr, err := listenAddr(cfg.Listen, index)
	if err != nil {
		return nil, fmt.Errorf("%w: SourceConfig.Listen %q: %w", ErrConfig, cfg.Listen, err)
	}
	// No WriteTimeout: a handler waits for its checkpoint to complete,
	// which may take longer than any fixed bound; it ends with the
	// client's connection or the source's stop.
	s.srv = &nethttp.Server{Handler: s, ReadHeaderTimeout: cfg.ReadHeaderTimeout, ReadTimeout: cfg.ReadTimeout,
		IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10}
	if cfg.TLS != nil {
		if s.files, err = creds.Load(cfg.TLS.Files); err != nil {
			return nil, fmt.Errorf("%w: SourceConfig.TLS.Files: %w", ErrConfig, err)
		}
		tc, err := s.files.ServerTLS(cfg.TLS.ClientAuth)
		if err != nil {
			s.files.Close()
			return nil, fmt.Errorf("%w: SourceConfig.TLS: %w", ErrConfig, err)
		}
		s.srv.TLSConfig = tc
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		if s.files != nil {
			s.files.Close()
		}
		return nil, fmt.Errorf("%w on %s (instance %d: SourceConfig.Listen's port + %d): %w", ErrListen, addr, index, index, err)
	}
	s.ln = ln
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		var err error
		if s.srv.TLSConfig != nil {
			err = s.srv.ServeTLS(ln, "", "")
		} else {
			err = s.srv.Serve(ln)
		}
		if !errors.Is(err, nethttp.ErrServerClosed) {
			s.mu.Lock()
			s.err = err
			s.mu.Unlock()
		}
	}()
	return s, nil
}

// failure returns why Serve ended, nil while it serves.
func (s *server) failure() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// close stops taking requests (the waiting ones and new ones are answered
// 503), shuts the server down within ctx and waits for Serve to return.
// It is safe to call twice.
func (s *server) close(ctx context.Context) error {
	var err error
	s.once.Do(func() {
		close(s.stop)
		err = s.srv.Shutdown(ctx)
		if err != nil {
			err = errors.Join(err, s.srv.Close())
		}
		s.wg.Wait()
		if s.files != nil {
			err = errors.Join(err, s.files.Close())
		}
	})
	return err
}

// ServeHTTP authenticates, parses and queues a request, then waits for
// its answer: 200 once its records are durable, 503 if the source stops
// first.
func (s *server) ServeHTTP(w nethttp.ResponseWriter, r *nethttp.Request) {
	st := s.cfg.Stats
	st.Requests.Add(1)
	select {
	case <-s.stop:
		s.throttle(w, nethttp.StatusServiceUnavailable, "the source is shutting down")
		return
	default:
	}
	if !s.authorized(r) {
		st.Unauthorized.Add(1)
		w.Header().Set("WWW-Authenticate", `Bearer realm="sluice"`)
		writeAnswer(w, answer{nethttp.StatusUnauthorized, "authentication required: send Authorization: Bearer <token> or a client certificate"})
		return
	}
	if s.cfg.Path != "" && r.URL.Path != s.cfg.Path {
		st.BadRequests.Add(1)
		writeAnswer(w, answer{nethttp.StatusNotFound, fmt.Sprintf("no webhook at %s: POST to %s", r.URL.Path, s.cfg.Path)})
		return
	}
	if r.Method != nethttp.MethodPost {
		st.BadRequests.Add(1)
		w.Header().Set("Allow", nethttp.MethodPost)
		writeAnswer(w, answer{nethttp.StatusMethodNotAllowed, "method " + r.Method + ": POST records"})
		return
	}
	body, err := io.ReadAll(nethttp.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
	if err != nil {
		st.BadRequests.Add(1)
		var tooBig *nethttp.MaxBytesError
		if errors.As(err, &tooBig) {
			writeAnswer(w, answer{nethttp.StatusRequestEntityTooLarge, fmt.Sprintf("body larger than %d bytes (MaxBodyBytes): send smaller batches", s.cfg.MaxBodyBytes)})
			return
		}
		writeAnswer(w, answer{nethttp.StatusBadRequest, "read body: " + err.Error()})
		return
	}
	recs, berr := parseBody(r.Header.Get("Content-Type"), body, s.cfg.MaxRecordBytes, s.cfg.KeyField)
	if berr != nil {
		st.BadRequests.Add(1)
		writeAnswer(w, answer{berr.status, berr.msg})
		return
	}
	req := &request{recs: recs, n: len(recs), key: r.Header.Get(HeaderIdempotencyKey), done: make(chan answer, 1)}
	if s.waiting.Add(1) > int64(s.cfg.MaxWaiting) {
		s.waiting.Add(-1)
		s.throttle(w, nethttp.StatusTooManyRequests, fmt.Sprintf("%d requests wait for their records to be durable (MaxWaiting): retry later", s.cfg.MaxWaiting))
		return
	}
	select {
	case s.queue <- req:
		st.Queued.Add(1)
	default:
		s.waiting.Add(-1)
		s.throttle(w, nethttp.StatusTooManyRequests, fmt.Sprintf("queue full (%d requests waiting): retry later", cap(s.queue)))
		return
	}
	var a answer
	select {
	case a = <-req.done:
	case <-s.stop:
		a = answer{nethttp.StatusServiceUnavailable, "the source stopped before the records were durable: send them again"}
	case <-r.Context().Done():
		// The client went away; it will send again (the records may have
		// been produced: at least once, or once with an Idempotency-Key).
	}
	s.waiting.Add(-1) // before answering: the client may send again at once
	switch {
	case a.status == nethttp.StatusOK:
		st.Accepted.Add(1)
		writeAnswer(w, a)
	case a.status != 0:
		s.throttle(w, a.status, a.msg)
	}
}

// throttle answers 429 or 503 with Retry-After.
func (s *server) throttle(w nethttp.ResponseWriter, status int, msg string) {
	s.cfg.Stats.Throttled.Add(1)
	w.Header().Set("Retry-After", strconv.Itoa(max(1, int((s.cfg.RetryAfter+time.Second-1)/time.Second))))
	writeAnswer(w, answer{status, msg})
}

// authorized reports whether r presents a verified client certificate (the
// handshake verified it) or one of the tokens (compared in constant time).
func (s *server) authorized(r *nethttp.Request) bool {
	if s.cfg.Insecure {
		return true
	}
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 && s.cfg.TLS != nil && s.cfg.TLS.ClientAuth != creds.NoClientCert {
		return true
	}
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return false
	}
	h := sha256.Sum256([]byte(strings.TrimSpace(token)))
	found := 0
	for i := range s.tokens {
		found |= subtle.ConstantTimeCompare(h[:], s.tokens[i][:])
	}
	return found == 1
}

// writeAnswer writes a JSON answer: {"status": …, "message": …}.
func writeAnswer(w nethttp.ResponseWriter, a answer) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(a.status)
	_ = json.NewEncoder(w).Encode(struct {
		Status  int    `json:"status"`
		Message string `json:"message"`
	}{a.status, a.msg})
}
