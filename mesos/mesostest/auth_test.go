package mesostest_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"io"
	"maps"
	"net/http"
	"strings"
	"testing"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler"

	"github.com/sluicehq/sluice/mesos/mesostest"
)

func basicAuth(principal, secret string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(principal+":"+secret))
}

// TestAuthentication: with Config.Credentials every scheduler call needs
// HTTP Basic credentials of a known principal (401 with the Basic
// challenge otherwise, even at a master that does not lead), and SUBSCRIBE
// must not claim another principal in FrameworkInfo (400).
func TestAuthentication(t *testing.T) {
	const mt = mesostest.MediaTypeJSON
	m := newMaster(t, mesostest.Config{Masters: 2, Credentials: map[string]string{"sluice": "s3cret", "other": "pw"}})
	if err := m.AddAgent("a1", 2, 1024, 2048); err != nil {
		t.Fatal(err)
	}
	subscribe := func(principal string) []byte {
		info := &mesos.FrameworkInfo{User: "u", Name: "auth"}
		if principal != "" {
			info.Principal = &principal
		}
		return encode(t, mt, &scheduler.Call{Type: scheduler.Call_SUBSCRIBE, Subscribe: &scheduler.Call_Subscribe{FrameworkInfo: info}})
	}
	headers := func(auth string) map[string]string {
		h := map[string]string{"Content-Type": mt, "Accept": mt}
		if auth != "" {
			h["Authorization"] = auth
		}
		return h
	}
	challenge := `Basic realm="mesos-master-scheduler"`
	for _, tc := range []struct{ name, url, auth string }{
		{"no credentials", m.SchedulerEndpoint(), ""},
		{"wrong secret", m.SchedulerEndpoint(), basicAuth("sluice", "wrong")},
		{"unknown principal", m.SchedulerEndpoint(), basicAuth("nobody", "s3cret")},
		{"not a Basic header", m.SchedulerEndpoint(), "Bearer s3cret"},
		{"no credentials, master not leading", m.URLs()[1] + "/api/v1/scheduler", ""},
	} {
		req, err := http.NewRequest(http.MethodPost, tc.url, strings.NewReader(string(subscribe("sluice"))))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range headers(tc.auth) {
			req.Header.Set(k, v)
		}
		resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") != challenge || len(body) != 0 {
			t.Errorf("%s: status %d, WWW-Authenticate %q, body %q; want 401, %q, empty", tc.name, resp.StatusCode, resp.Header.Get("WWW-Authenticate"), body, challenge)
		}
	}
	if n := m.AuthFailures(); n != 5 {
		t.Errorf("AuthFailures = %d, want 5", n)
	}
	if len(m.Frameworks()) != 0 {
		t.Fatalf("frameworks = %+v after refused subscriptions", m.Frameworks())
	}

	// The authenticated principal must be the FrameworkInfo's.
	msg := expectStatus(t, m, headers(basicAuth("other", "pw")), subscribe("sluice"), http.StatusBadRequest)
	if want := "Authenticated principal 'other' does not match principal 'sluice' set in `FrameworkInfo`"; !strings.Contains(msg, want) {
		t.Errorf("400 body = %q, want it to contain %q", msg, want)
	}

	// A FrameworkInfo without principal is accepted (Mesos only compares
	// when it is set); one with the authenticated principal of course.
	for _, principal := range []string{"", "sluice"} {
		ctx, cancel := context.WithCancel(context.Background())
		resp := post(t, ctx, m, headers(basicAuth("sluice", "s3cret")), subscribe(principal))
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(resp.Body)
			cancel()
			t.Fatalf("SUBSCRIBE with principal %q: status %d: %s", principal, resp.StatusCode, b)
		}
		s := &rawStream{t: t, resp: resp, br: bufio.NewReader(resp.Body), mediaType: mt, streamID: resp.Header.Get("Mesos-Stream-Id"), cancel: cancel}
		t.Cleanup(s.close)
		ev := s.event()
		if ev.Type != scheduler.Event_SUBSCRIBED {
			t.Fatalf("first event = %v, want SUBSCRIBED", ev.Type)
		}
		if principal == "" {
			s.close()
			continue
		}
		// Every other call needs the credentials too.
		offers := s.nextOfType(scheduler.Event_OFFERS).GetOffers().Offers
		decline := encode(t, mt, &scheduler.Call{
			Type:        scheduler.Call_DECLINE,
			FrameworkID: ev.GetSubscribed().FrameworkID,
			Decline:     &scheduler.Call_Decline{OfferIDs: []mesos.OfferID{offers[0].ID}},
		})
		expectStatus(t, m, s.callHeaders(), decline, http.StatusUnauthorized)
		h := maps.Clone(s.callHeaders())
		h["Authorization"] = basicAuth("sluice", "s3cret")
		expectStatus(t, m, h, decline, http.StatusAccepted)
	}
}
