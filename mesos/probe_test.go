package mesos

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestMasterProbe(t *testing.T) {
	for _, tc := range []struct {
		name            string
		status          int
		location, body  string
		wantLeader      string
		wantUnavailable string
	}{
		{"protocol-relative redirect", http.StatusTemporaryRedirect, "//leader:5050/api/v1/scheduler", "", "http://leader:5050/api/v1/scheduler", ""},
		{"absolute redirect", http.StatusTemporaryRedirect, "https://leader:5050/x", "", "https://leader:5050/x", ""},
		{"recovering", http.StatusServiceUnavailable, "", "Master has not finished recovery", "", "Master has not finished recovery"},
		{"no leader", http.StatusServiceUnavailable, "", "No leader elected\n", "", "No leader elected"},
		{"accepted", http.StatusAccepted, "", "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tc.location != "" {
					w.Header().Set("Location", tc.location)
				}
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, tc.body)
			}))
			defer srv.Close()
			p := &masterProbe{next: http.DefaultTransport}
			req, _ := http.NewRequest(http.MethodPost, strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)+"/api/v1/scheduler", nil)
			resp, err := p.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(body) != tc.body {
				t.Errorf("body passed on = %q, want %q", body, tc.body)
			}
			leader, unavailable := p.after()
			if leader != tc.wantLeader || unavailable != tc.wantUnavailable {
				t.Errorf("after() = %q, %q; want %q, %q", leader, unavailable, tc.wantLeader, tc.wantUnavailable)
			}
		})
	}
}
