package creds

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Token lengths accepted in a tokens file.
const (
	MinTokenLen = 16
	MaxTokenLen = 512
)

// TokensConfig says where a Tokens set comes from: a file, inline text, or
// both (merged). Both use the same format: one "label:token" per line
// (inline text may separate them with commas too); blank lines and lines
// starting with # are ignored, and spaces around each part are trimmed.
// A token is 16 to 512 characters from A-Z a-z 0-9 . _ ~ + / = -, so
// that "openssl rand -hex 32" or "-base64 32" makes one; each token may
// appear once.
type TokensConfig struct {
	// File holds tokens, one "label:token" per line; it is reread when it
	// changes (see Tokens.Watch).
	File string
	// Inline holds more tokens in the same format (from an environment
	// variable, say); it does not change.
	Inline string
	// Labels lists the labels allowed (roles, say); required.
	Labels []string
	// PollInterval is how often Watch rereads File besides file system
	// events; 0 means DefaultPollInterval.
	PollInterval time.Duration
	// Logger receives reloads; nil means slog.Default().
	Logger *slog.Logger
}

// Validate checks c without reading the file.
func (c TokensConfig) Validate() error {
	var errs []error
	if c.File == "" && strings.TrimSpace(c.Inline) == "" {
		errs = append(errs, errors.New("creds: tokens: no source: set File or Inline"))
	}
	if len(c.Labels) == 0 {
		errs = append(errs, errors.New("creds: tokens: Labels is empty: list the labels (roles) tokens may have"))
	}
	if c.PollInterval < 0 {
		errs = append(errs, fmt.Errorf("creds: tokens: PollInterval must be ≥ 0 (0: %v), got %v", DefaultPollInterval, c.PollInterval))
	}
	return errors.Join(errs...)
}

// Tokens is a set of bearer tokens, each with a label. Its methods are safe
// for concurrent use.
type Tokens struct {
	cfg TokensConfig
	cur atomic.Pointer[tokenSet]

	mu         sync.Mutex // serialises reloads; guards lastFailed, w, closed
	lastFailed [sha256.Size]byte
	w          *watcher
	closed     bool
}

// tokenSet is one load of the tokens.
type tokenSet struct {
	sum     [sha256.Size]byte // of the file's contents
	entries []tokenEntry
}

// tokenEntry is one token: its label, and its SHA-256 (compared in
// constant time, so neither its bytes nor its length leak through
// timing).
type tokenEntry struct {
	label string
	token string
	hash  [sha256.Size]byte
}

// LoadTokens reads the tokens of cfg. An error names the file (or
// "inline tokens") and the line.
func LoadTokens(cfg TokensConfig) (*Tokens, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	t := &Tokens{cfg: cfg}
	set, err := t.read()
	if err != nil {
		return nil, err
	}
	t.cur.Store(set)
	t.checkMode()
	return t, nil
}

// Lookup returns the label of token, comparing it with every known token
// in constant time.
func (t *Tokens) Lookup(token string) (label string, ok bool) {
	h := sha256.Sum256([]byte(token))
	found := -1
	set := t.cur.Load()
	for i := range set.entries {
		eq := subtle.ConstantTimeCompare(h[:], set.entries[i].hash[:])
		found = subtle.ConstantTimeSelect(eq, i, found)
	}
	if found < 0 {
		return "", false
	}
	return set.entries[found].label, true
}

// First returns the first token with label, for a client that must
// present one (a node asking another node).
func (t *Tokens) First(label string) (string, bool) {
	for _, e := range t.cur.Load().entries {
		if e.label == label {
			return e.token, true
		}
	}
	return "", false
}

// Len returns the number of tokens.
func (t *Tokens) Len() int { return len(t.cur.Load().entries) }

// Fingerprint returns a short, non-secret name of a token for logs: the
// first 8 hex digits of its SHA-256.
func Fingerprint(token string) string {
	h := sha256.Sum256([]byte(token))
	return "sha256:" + hex.EncodeToString(h[:4])
}

// Reload rereads the file now. When its contents did not change it does
// nothing; when they are not valid it keeps the tokens in use and returns
// why.
func (t *Tokens) Reload() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cfg.File == "" {
		return nil
	}
	b, err := os.ReadFile(t.cfg.File)
	if err != nil {
		return t.failed([sha256.Size]byte{}, fmt.Errorf("%w: tokens: %w", ErrBadFile, err))
	}
	sum := sha256.Sum256(b)
	if sum == t.cur.Load().sum {
		return nil
	}
	set, err := t.parseAll(b)
	if err != nil {
		return t.failed(sum, err)
	}
	t.cur.Store(set)
	t.lastFailed = [sha256.Size]byte{}
	t.cfg.Logger.Info("creds: reloaded tokens", "file", t.cfg.File, "tokens", len(set.entries))
	t.checkMode()
	return nil
}

// failed logs a failed reload once per distinct content and returns err.
func (t *Tokens) failed(sum [sha256.Size]byte, err error) error {
	if sum != t.lastFailed || sum == ([sha256.Size]byte{}) {
		t.lastFailed = sum
		t.cfg.Logger.Warn("creds: keeping the tokens in use: the changed file is not valid", "error", err)
	}
	return err
}

// Watch starts reloading the file when it changes, until Close. Without a
// file it does nothing. It is safe to call twice.
func (t *Tokens) Watch() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return fmt.Errorf("creds: watch %s: the tokens are closed", t.cfg.File)
	}
	if t.w == nil && t.cfg.File != "" {
		t.w = startWatcher([]string{t.cfg.File}, t.cfg.PollInterval, t.cfg.Logger, func() { _ = t.Reload() })
	}
	return nil
}

// Close stops watching and waits for the watcher's goroutine; Lookup keeps
// working with the last tokens. It is safe to call twice.
func (t *Tokens) Close() error {
	t.mu.Lock()
	w := t.w
	t.w, t.closed = nil, true
	t.mu.Unlock()
	if w != nil {
		w.stop()
	}
	return nil
}

// read reads the file and the inline tokens.
func (t *Tokens) read() (*tokenSet, error) {
	var b []byte
	if t.cfg.File != "" {
		var err error
		if b, err = os.ReadFile(t.cfg.File); err != nil {
			return nil, fmt.Errorf("%w: tokens: %w", ErrBadFile, err)
		}
	}
	return t.parseAll(b)
}

// parseAll parses file contents b and the inline tokens together.
func (t *Tokens) parseAll(b []byte) (*tokenSet, error) {
	set := &tokenSet{sum: sha256.Sum256(b)}
	var errs []error
	seen := map[[sha256.Size]byte]string{}
	add := func(source string, data []byte, commas bool) {
		entries, perr := parseTokens(source, data, commas, t.cfg.Labels)
		errs = append(errs, perr...)
		for _, e := range entries {
			if where, dup := seen[e.hash]; dup {
				errs = append(errs, fmt.Errorf("%w: %s: the same token is also at %s; give each token once", ErrBadFile, e.where, where))
				continue
			}
			seen[e.hash] = e.where
			set.entries = append(set.entries, e.tokenEntry)
		}
	}
	if t.cfg.File != "" {
		add(t.cfg.File, b, false)
	}
	if strings.TrimSpace(t.cfg.Inline) != "" {
		add("inline tokens", []byte(t.cfg.Inline), true)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return set, nil
}

// parsedToken is a token and where it was read.
type parsedToken struct {
	tokenEntry
	where string
}

// parseTokens parses "label:token" lines (and, with commas, comma-separated
// entries).
func parseTokens(source string, data []byte, commas bool, labels []string) ([]parsedToken, []error) {
	var out []parsedToken
	var errs []error
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for line := 1; sc.Scan(); line++ {
		if strings.HasPrefix(strings.TrimSpace(sc.Text()), "#") {
			continue
		}
		parts := []string{sc.Text()}
		if commas {
			parts = strings.Split(sc.Text(), ",")
		}
		for _, p := range parts {
			p = strings.TrimSpace(p)
			if p == "" || strings.HasPrefix(p, "#") {
				continue
			}
			where := fmt.Sprintf("%s line %d", source, line)
			label, token, ok := strings.Cut(p, ":")
			label, token = strings.TrimSpace(label), strings.TrimSpace(token)
			switch {
			case !ok:
				errs = append(errs, fmt.Errorf("%w: %s: want label:token (one of %s, a colon, the token), got no colon", ErrBadFile, where, strings.Join(labels, ", ")))
			case !slices.Contains(labels, label):
				errs = append(errs, fmt.Errorf("%w: %s: unknown label %q: want one of %s", ErrBadFile, where, label, strings.Join(labels, ", ")))
			default:
				if problem := tokenProblem(token); problem != "" {
					errs = append(errs, fmt.Errorf("%w: %s: %s", ErrBadFile, where, problem))
					continue
				}
				out = append(out, parsedToken{tokenEntry{label: label, token: token, hash: sha256.Sum256([]byte(token))}, where})
			}
		}
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, fmt.Errorf("%w: %s: %w", ErrBadFile, source, err))
	}
	return out, errs
}

// tokenProblem says what is wrong with a token, or "".
func tokenProblem(token string) string {
	if len(token) < MinTokenLen || len(token) > MaxTokenLen {
		return fmt.Sprintf("the token is %d characters; want %d to %d (make one with: openssl rand -hex 32)", len(token), MinTokenLen, MaxTokenLen)
	}
	for _, c := range []byte(token) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("._~+/=-", c) >= 0) {
			return fmt.Sprintf("the token holds %q; want only letters, digits and . _ ~ + / = -", c)
		}
	}
	return ""
}

// checkMode warns about a tokens file others can read.
func (t *Tokens) checkMode() {
	if t.cfg.File == "" {
		return
	}
	if fi, err := os.Stat(t.cfg.File); err == nil && fi.Mode().Perm()&0o077 != 0 {
		t.cfg.Logger.Warn("creds: the tokens file can be read by other users; chmod 600 it", "file", t.cfg.File, "mode", fi.Mode().Perm().String())
	}
}
