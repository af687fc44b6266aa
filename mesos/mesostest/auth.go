package mesostest

import (
	"crypto/subtle"
	"net/http"
)

// AuthRealm is the realm in the WWW-Authenticate header of the 401 a
// master with Config.Credentials answers: Mesos'
// DEFAULT_HTTP_FRAMEWORK_AUTHENTICATION_REALM (src/master/constants.hpp),
// the realm of the scheduler endpoint's default "basic" HTTP
// authenticator.
const AuthRealm = "mesos-master-scheduler"

// authenticate checks the HTTP Basic credentials of a request to a master
// with Config.Credentials, as libprocess does for an authenticated route
// before its handler runs (so before the leadership checks). It returns
// the authenticated principal, or writes 401 Unauthorized with
// `WWW-Authenticate: Basic realm="mesos-master-scheduler"` and returns
// false. Without Config.Credentials every request passes, unauthenticated
// (principal "").
func (m *Master) authenticate(w http.ResponseWriter, r *http.Request) (principal string, ok bool) {
	if len(m.cfg.Credentials) == 0 {
		return "", true
	}
	user, pass, has := r.BasicAuth()
	if has {
		if secret, known := m.cfg.Credentials[user]; known && subtle.ConstantTimeCompare([]byte(secret), []byte(pass)) == 1 {
			return user, true
		}
	}
	m.mu.Lock()
	m.authFailures++
	m.unlock()
	// libprocess' BasicAuthenticator answers Unauthorized with this
	// challenge and an empty body, whatever was wrong.
	w.Header().Set("WWW-Authenticate", `Basic realm="`+AuthRealm+`"`)
	w.WriteHeader(http.StatusUnauthorized)
	return "", false
}

// AuthFailures is the number of scheduler requests a master with
// Config.Credentials answered 401 (no or wrong credentials).
func (m *Master) AuthFailures() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.authFailures
}
