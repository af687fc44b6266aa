package mesostest_test

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler"

	"github.com/sluicehq/sluice/mesos/mesostest"
)

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

func TestSubscribeStream(t *testing.T) {
	for _, mt := range []string{mesostest.MediaTypeProtobuf, mesostest.MediaTypeJSON} {
		t.Run(mt, func(t *testing.T) {
			m := newMaster(t, mesostest.Config{HeartbeatInterval: 50 * time.Millisecond})
			if err := m.AddAgent("a1", 2, 1024, 2048); err != nil {
				t.Fatal(err)
			}
			s := rawSubscribe(t, m, mt, &mesos.FrameworkInfo{User: "u", Name: "raw"})
			if got := s.resp.Header.Get("Content-Type"); got != mt {
				t.Errorf("Content-Type = %q, want %q", got, mt)
			}
			if !uuidRE.MatchString(s.streamID) {
				t.Errorf("Mesos-Stream-Id = %q, want a UUID", s.streamID)
			}
			if s.resp.ContentLength != -1 || len(s.resp.TransferEncoding) == 0 || s.resp.TransferEncoding[0] != "chunked" {
				t.Errorf("want a chunked response, got ContentLength %d TransferEncoding %v", s.resp.ContentLength, s.resp.TransferEncoding)
			}

			first := s.record()
			if mt == mesostest.MediaTypeJSON {
				var raw map[string]any
				if err := json.Unmarshal(first, &raw); err != nil || raw["type"] != "SUBSCRIBED" {
					t.Fatalf("first record %s is not a JSON SUBSCRIBED event (%v)", first, err)
				}
			}
			ev := decodeEvent(t, mt, first)
			if ev.Type != scheduler.Event_SUBSCRIBED {
				t.Fatalf("first event = %v, want SUBSCRIBED", ev.Type)
			}
			fwID := ev.GetSubscribed().GetFrameworkID().GetValue()
			if !strings.HasPrefix(fwID, m.ID()+"-") {
				t.Errorf("framework ID %q does not start with the master ID", fwID)
			}
			if hb := ev.GetSubscribed().GetHeartbeatIntervalSeconds(); hb != 0.05 {
				t.Errorf("heartbeat_interval_seconds = %v, want 0.05", hb)
			}
			if mi := ev.GetSubscribed().GetMasterInfo(); mi == nil || mi.ID != m.ID() {
				t.Errorf("master_info = %v, want ID %s", mi, m.ID())
			}

			offers := s.nextOfType(scheduler.Event_OFFERS).GetOffers().Offers
			if len(offers) != 1 || offers[0].AgentID.Value != "a1" || offerScalar(offers[0], "cpus") != 2 ||
				offerScalar(offers[0], "mem") != 1024 || offerScalar(offers[0], "disk") != 2048 {
				t.Fatalf("offers = %v, want one offer of agent a1 with cpus 2, mem 1024, disk 2048", offers)
			}
			if offers[0].FrameworkID.Value != fwID || offers[0].Hostname != "a1" {
				t.Errorf("offer framework/hostname = %s/%s", offers[0].FrameworkID.Value, offers[0].Hostname)
			}
			for i := 0; i < 2; i++ {
				s.nextOfType(scheduler.Event_HEARTBEAT)
			}

			// A good call on the stream is 202 Accepted with no body.
			decline := &scheduler.Call{
				Type:        scheduler.Call_DECLINE,
				FrameworkID: &mesos.FrameworkID{Value: fwID},
				Decline:     &scheduler.Call_Decline{OfferIDs: []mesos.OfferID{offers[0].ID}},
			}
			if body := expectStatus(t, m, s.callHeaders(), encode(t, mt, decline), http.StatusAccepted); body != "" {
				t.Errorf("202 body = %q, want empty", body)
			}
			waitFor(t, m, "offer declined", func() bool { return len(m.Offers()) == 0 })
		})
	}
}

func TestContentNegotiation(t *testing.T) {
	m := newMaster(t, mesostest.Config{})
	sub := func(mt string) []byte {
		return encode(t, mt, &scheduler.Call{Type: scheduler.Call_SUBSCRIBE,
			Subscribe: &scheduler.Call_Subscribe{FrameworkInfo: &mesos.FrameworkInfo{User: "u", Name: "n"}}})
	}
	pb, js := sub(mesostest.MediaTypeProtobuf), sub(mesostest.MediaTypeJSON)

	t.Run("missing Content-Type is 400", func(t *testing.T) {
		expectStatus(t, m, map[string]string{}, pb, http.StatusBadRequest)
	})
	t.Run("wrong Content-Type is 415", func(t *testing.T) {
		for _, ct := range []string{"text/plain", "application/json; charset=utf-8", "application/recordio"} {
			expectStatus(t, m, map[string]string{"Content-Type": ct}, js, http.StatusUnsupportedMediaType)
		}
	})
	t.Run("wrong Accept on SUBSCRIBE is 406", func(t *testing.T) {
		for _, accept := range []string{"text/html", "application/recordio", "application/json;q=0"} {
			expectStatus(t, m, map[string]string{"Content-Type": mesostest.MediaTypeJSON, "Accept": accept}, js, http.StatusNotAcceptable)
		}
	})
	t.Run("Accept selects the event encoding", func(t *testing.T) {
		for accept, want := range map[string]string{
			"":                          mesostest.MediaTypeJSON,
			"*/*":                       mesostest.MediaTypeJSON,
			mesostest.MediaTypeProtobuf: mesostest.MediaTypeProtobuf,
			"text/html, application/x-protobuf;q=0.5": mesostest.MediaTypeProtobuf,
		} {
			headers := map[string]string{"Content-Type": mesostest.MediaTypeProtobuf}
			if accept != "" {
				headers["Accept"] = accept
			}
			func() {
				ctx, cancel := contextWithTimeout()
				defer cancel()
				resp := post(t, ctx, m, headers, pb)
				defer resp.Body.Close()
				if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != want {
					t.Errorf("Accept %q: status %d Content-Type %q, want 200 %q", accept, resp.StatusCode, resp.Header.Get("Content-Type"), want)
				}
			}()
		}
	})
	t.Run("malformed bodies are 400", func(t *testing.T) {
		expectStatus(t, m, map[string]string{"Content-Type": mesostest.MediaTypeJSON}, []byte(`{"type":`), http.StatusBadRequest)
		expectStatus(t, m, map[string]string{"Content-Type": mesostest.MediaTypeProtobuf}, []byte{0xff, 0xff, 0xff}, http.StatusBadRequest)
		expectStatus(t, m, map[string]string{"Content-Type": mesostest.MediaTypeJSON}, []byte(`{"type":"NOPE"}`), http.StatusBadRequest)
		// No type.
		expectStatus(t, m, map[string]string{"Content-Type": mesostest.MediaTypeJSON}, []byte(`{}`), http.StatusBadRequest)
		// Non-SUBSCRIBE without framework_id.
		expectStatus(t, m, map[string]string{"Content-Type": mesostest.MediaTypeJSON}, []byte(`{"type":"REVIVE"}`), http.StatusBadRequest)
		// SUBSCRIBE whose framework_id differs from framework_info.id.
		expectStatus(t, m, map[string]string{"Content-Type": mesostest.MediaTypeJSON},
			[]byte(`{"type":"SUBSCRIBE","framework_id":{"value":"x"},"subscribe":{"framework_info":{"user":"u","name":"n","id":{"value":"y"}}}}`),
			http.StatusBadRequest)
	})
	t.Run("only POST", func(t *testing.T) {
		resp, err := http.Get(m.SchedulerEndpoint())
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "POST" {
			t.Fatalf("GET: status %d Allow %q, want 405 POST", resp.StatusCode, resp.Header.Get("Allow"))
		}
	})
	t.Run("SUBSCRIBE with a stream ID is 400", func(t *testing.T) {
		expectStatus(t, m, map[string]string{"Content-Type": mesostest.MediaTypeJSON, "Mesos-Stream-Id": "x"}, js, http.StatusBadRequest)
	})
}

func TestCallAuthorization(t *testing.T) {
	for _, mt := range []string{mesostest.MediaTypeProtobuf, mesostest.MediaTypeJSON} {
		t.Run(mt, func(t *testing.T) {
			m := newMaster(t, mesostest.Config{})
			failover := 3600.0
			a := rawSubscribe(t, m, mt, &mesos.FrameworkInfo{User: "u", Name: "a", FailoverTimeout: &failover})
			aID := a.nextOfType(scheduler.Event_SUBSCRIBED).GetSubscribed().GetFrameworkID()
			b := rawSubscribe(t, m, mt, &mesos.FrameworkInfo{User: "u", Name: "b", FailoverTimeout: &failover})
			bID := b.nextOfType(scheduler.Event_SUBSCRIBED).GetSubscribed().GetFrameworkID()

			revive := func(fw *mesos.FrameworkID) []byte {
				return encode(t, mt, &scheduler.Call{Type: scheduler.Call_REVIVE, FrameworkID: fw})
			}
			ct := map[string]string{"Content-Type": mt}

			// Missing and wrong stream IDs are 400.
			expectStatus(t, m, ct, revive(aID), http.StatusBadRequest)
			expectStatus(t, m, map[string]string{"Content-Type": mt, "Mesos-Stream-Id": b.streamID}, revive(aID), http.StatusBadRequest)
			expectStatus(t, m, map[string]string{"Content-Type": mt, "Mesos-Stream-Id": "nonsense"}, revive(aID), http.StatusBadRequest)
			// An unknown framework is 400.
			expectStatus(t, m, a.callHeaders(), revive(&mesos.FrameworkID{Value: "no-such-framework"}), http.StatusBadRequest)
			// The right stream ID is 202, whatever Accept says (Mesos only
			// negotiates Accept for calls with a response body).
			h := a.callHeaders()
			h["Accept"] = "text/html"
			expectStatus(t, m, h, revive(aID), http.StatusAccepted)

			// Once b's subscription is gone, calls for b are 403, also when
			// sent with a's (valid) stream ID.
			b.close()
			waitFor(t, m, "framework b disconnected", func() bool {
				f, _ := frameworkByID(m, bID.Value)
				return !f.Connected && !f.FailoverDeadline.IsZero()
			})
			expectStatus(t, m, map[string]string{"Content-Type": mt, "Mesos-Stream-Id": b.streamID}, revive(bID), http.StatusForbidden)
			expectStatus(t, m, a.callHeaders(), revive(bID), http.StatusForbidden)

			// ACKNOWLEDGE with a malformed uuid is 400.
			ack := &scheduler.Call{Type: scheduler.Call_ACKNOWLEDGE, FrameworkID: aID, Acknowledge: &scheduler.Call_Acknowledge{
				AgentID: mesos.AgentID{Value: "x"}, TaskID: mesos.TaskID{Value: "t"}, UUID: []byte("short")}}
			expectStatus(t, m, a.callHeaders(), encode(t, mt, ack), http.StatusBadRequest)
		})
	}
}

func TestSubscribeRejection(t *testing.T) {
	m := newMaster(t, mesostest.Config{})
	body := encode(t, mesostest.MediaTypeJSON, &scheduler.Call{Type: scheduler.Call_SUBSCRIBE,
		Subscribe: &scheduler.Call_Subscribe{FrameworkInfo: &mesos.FrameworkInfo{User: "u", Name: "n"}}})
	headers := map[string]string{"Content-Type": mesostest.MediaTypeJSON, "Accept": mesostest.MediaTypeJSON}

	m.RejectSubscribe(mesostest.SubscribeRejection{StatusCode: http.StatusUnauthorized})
	expectStatus(t, m, headers, body, http.StatusUnauthorized)

	m.RejectSubscribe(mesostest.SubscribeRejection{Message: "Framework is not authorized"})
	ctx, cancel := contextWithTimeout()
	defer cancel()
	resp := post(t, ctx, m, headers, body)
	s := &rawStream{t: t, resp: resp, br: newBufReader(resp), mediaType: mesostest.MediaTypeJSON, cancel: cancel}
	defer s.close()
	ev := s.event()
	if resp.StatusCode != http.StatusOK || ev.Type != scheduler.Event_ERROR || ev.GetError().Message != "Framework is not authorized" {
		t.Fatalf("got status %d event %v, want 200 with ERROR", resp.StatusCode, ev)
	}
	if len(m.Frameworks()) != 0 {
		t.Fatalf("a rejected subscription registered a framework: %v", m.Frameworks())
	}

	m.RejectSubscribe(mesostest.SubscribeRejection{})
	ok := rawSubscribe(t, m, mesostest.MediaTypeJSON, &mesos.FrameworkInfo{User: "u", Name: "n"})
	if ev := ok.event(); ev.Type != scheduler.Event_SUBSCRIBED {
		t.Fatalf("after clearing the rejection: first event %v, want SUBSCRIBED", ev.Type)
	}
}

func TestFailAccept(t *testing.T) {
	for _, status := range []int{http.StatusBadRequest, http.StatusForbidden} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			m := newMaster(t, mesostest.Config{})
			if err := m.AddAgent("a1", 1, 512, 0); err != nil {
				t.Fatal(err)
			}
			mt := mesostest.MediaTypeProtobuf
			s := rawSubscribe(t, m, mt, &mesos.FrameworkInfo{User: "u", Name: "n"})
			fwID := s.nextOfType(scheduler.Event_SUBSCRIBED).GetSubscribed().GetFrameworkID()
			offer := s.nextOfType(scheduler.Event_OFFERS).GetOffers().Offers[0]
			cmd := "true"
			accept := &scheduler.Call{Type: scheduler.Call_ACCEPT, FrameworkID: fwID, Accept: &scheduler.Call_Accept{
				OfferIDs: []mesos.OfferID{offer.ID},
				Operations: []mesos.Offer_Operation{{Type: mesos.Offer_Operation_LAUNCH, Launch: &mesos.Offer_Operation_Launch{
					TaskInfos: []mesos.TaskInfo{{Name: "t", TaskID: mesos.TaskID{Value: "t"}, AgentID: offer.AgentID,
						Command: &mesos.CommandInfo{Value: &cmd}, Resources: []mesos.Resource{scalar("cpus", 0.1)}}},
				}}},
			}}
			m.FailAccept(status)
			expectStatus(t, m, s.callHeaders(), encode(t, mt, accept), status)
			if offers := m.Offers(); len(offers) != 1 || offers[0].ID != offer.ID.Value || len(m.Tasks()) != 0 {
				t.Fatalf("a failed ACCEPT changed state: offers %v tasks %v", offers, m.Tasks())
			}
			m.FailAccept(0)
			expectStatus(t, m, s.callHeaders(), encode(t, mt, accept), http.StatusAccepted)
			waitFor(t, m, "task launched", func() bool { return len(m.Tasks()) == 1 })
		})
	}
}

// TestHandWrittenJSON sends JSON written the way the Mesos documentation
// shows it (not produced by mesos-go), including the long removed
// subscribe.force field, which is ignored.
func TestHandWrittenJSON(t *testing.T) {
	m := newMaster(t, mesostest.Config{})
	if err := m.AddAgent("a1", 1, 512, 0); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := contextWithTimeout()
	defer cancel()
	resp := post(t, ctx, m, map[string]string{"Content-Type": "application/json", "Accept": "application/json"}, []byte(`{
	   "type"      : "SUBSCRIBE",
	   "subscribe" : {
	      "framework_info" : {"user": "foo", "name": "Example HTTP Framework", "roles": ["test1"],
	                          "capabilities": [{"type": "MULTI_ROLE"}]},
	      "force" : true
	   }
	}`))
	s := &rawStream{t: t, resp: resp, br: newBufReader(resp), mediaType: mesostest.MediaTypeJSON,
		streamID: resp.Header.Get("Mesos-Stream-Id"), cancel: cancel}
	defer s.close()
	fwID := s.nextOfType(scheduler.Event_SUBSCRIBED).GetSubscribed().GetFrameworkID().Value
	offer := s.nextOfType(scheduler.Event_OFFERS).GetOffers().Offers[0]
	if role := offer.GetAllocationInfo().GetRole(); role != "test1" {
		t.Errorf("offer allocated to role %q, want test1", role)
	}
	decline := `{
	  "framework_id" : {"value" : "` + fwID + `"},
	  "type"         : "DECLINE",
	  "decline"      : {"offer_ids" : [{"value" : "` + offer.ID.Value + `"}], "filters" : {"refuse_seconds" : 3600.0}}
	}`
	expectStatus(t, m, s.callHeaders(), []byte(decline), http.StatusAccepted)
	waitFor(t, m, "offer declined", func() bool { return len(m.Offers()) == 0 })
}
