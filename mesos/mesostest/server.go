package mesostest

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/mesos/mesos-go/api/v1/lib/scheduler"
)

const (
	schedulerPath       = "/api/v1/scheduler"
	headerStreamID      = "Mesos-Stream-Id"
	maxRequestBodyBytes = 64 << 20
)

// routes is the HTTP API of master i.
func (m *Master) routes(i int) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc(schedulerPath, func(w http.ResponseWriter, r *http.Request) { m.handleScheduler(i, w, r) })
	return mux
}

// httpError is a non-2xx response: a status code and a plain-text body, as
// libprocess renders BadRequest, Forbidden etc.
type httpError struct {
	status int
	msg    string
}

func (e *httpError) Error() string { return fmt.Sprintf("%d %s", e.status, e.msg) }

func writeError(w http.ResponseWriter, e *httpError) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(e.status)
	_, _ = io.WriteString(w, e.msg)
}

// handleScheduler implements POST /api/v1/scheduler of master i following
// the checks (and their order) of Master::Http::scheduler in
// src/master/http.cpp: leadership and recovery first.
func (m *Master) handleScheduler(i int, w http.ResponseWriter, r *http.Request) {
	principal, ok := m.authenticate(w, r)
	if !ok {
		return
	}
	if m.notLeading(i, w, r) {
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, &httpError{http.StatusMethodNotAllowed,
			fmt.Sprintf("Expecting one of { 'POST' }, but received '%s'", r.Method)})
		return
	}
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		writeError(w, &httpError{http.StatusBadRequest, "Expecting 'Content-Type' to be present"})
		return
	}
	reqCodec, ok := codecForContentType(ct)
	if !ok {
		writeError(w, &httpError{http.StatusUnsupportedMediaType,
			"Expecting 'Content-Type' of " + MediaTypeJSON + " or " + MediaTypeProtobuf})
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBodyBytes))
	if err != nil {
		writeError(w, &httpError{http.StatusBadRequest, "Failed to read request body: " + err.Error()})
		return
	}
	var call scheduler.Call
	if err := reqCodec.decode(body, &call); err != nil {
		what := "Failed to parse body into Call protobuf: "
		if reqCodec == jsonCodec {
			what = "Failed to convert JSON into Call protobuf: "
		}
		writeError(w, &httpError{http.StatusBadRequest, what + err.Error()})
		return
	}
	if err := validateCall(&call, principal); err != nil {
		writeError(w, &httpError{http.StatusBadRequest, "Failed to validate scheduler::Call: " + err.Error()})
		return
	}

	// Like Mesos, the Accept header is only negotiated for calls whose
	// response has a body.
	var respCodec *codec
	if call.Type == scheduler.Call_SUBSCRIBE || call.Type == scheduler.Call_RECONCILE_OPERATIONS {
		respCodec, ok = negotiateAccept(r.Header.Values("Accept"))
		if !ok {
			writeError(w, &httpError{http.StatusNotAcceptable,
				"Expecting 'Accept' to allow '" + MediaTypeProtobuf + "' or '" + MediaTypeJSON + "'"})
			return
		}
	}

	if call.Type == scheduler.Call_SUBSCRIBE {
		if len(r.Header.Values(headerStreamID)) > 0 {
			writeError(w, &httpError{http.StatusBadRequest,
				"Subscribe calls should not include the 'Mesos-Stream-Id' header"})
			return
		}
		m.recordCall(i, &call, http.StatusOK)
		m.serveSubscribe(w, r, &call, respCodec)
		return
	}

	status, herr := m.handleCall(r, &call)
	if herr != nil {
		m.recordCall(i, &call, herr.status)
		writeError(w, herr)
		return
	}
	m.recordCall(i, &call, status)
	if status == http.StatusOK {
		// UPDATE_FRAMEWORK answers 200 with an empty body; labelling it
		// with the request's media type keeps mesos-go's response
		// validation (which checks Content-Type on 200) happy.
		w.Header().Set("Content-Type", reqCodec.mediaType)
	}
	w.WriteHeader(status)
}

// validateCall mirrors validation::scheduler::call::validate
// (src/master/validation.cpp); principal is the authenticated principal
// ("" without authentication).
func validateCall(c *scheduler.Call, principal string) error {
	// In the generated Go type 'type' is not a pointer, so "missing" and
	// UNKNOWN are indistinguishable; both are rejected.
	if c.Type == scheduler.Call_UNKNOWN {
		return errors.New("Expecting 'type' to be present")
	}
	if c.Type == scheduler.Call_SUBSCRIBE {
		if c.Subscribe == nil {
			return errors.New("Expecting 'subscribe' to be present")
		}
		if c.Subscribe.FrameworkInfo == nil {
			return errors.New("Not initialized: subscribe.framework_info")
		}
		if c.Subscribe.FrameworkInfo.GetID().GetValue() != c.GetFrameworkID().GetValue() {
			return errors.New("'framework_id' differs from 'subscribe.framework_info.id'")
		}
		if fp := c.Subscribe.FrameworkInfo.GetPrincipal(); principal != "" && c.Subscribe.FrameworkInfo.Principal != nil && fp != principal {
			return fmt.Errorf("Authenticated principal '%s' does not match principal '%s' set in `FrameworkInfo`", principal, fp)
		}
		return nil
	}
	if c.FrameworkID == nil {
		return errors.New("Expecting 'framework_id' to be present")
	}
	missing := func(field string) error { return fmt.Errorf("Expecting '%s' to be present", field) }
	switch c.Type {
	case scheduler.Call_ACCEPT:
		if c.Accept == nil {
			return missing("accept")
		}
	case scheduler.Call_DECLINE:
		if c.Decline == nil {
			return missing("decline")
		}
	case scheduler.Call_ACCEPT_INVERSE_OFFERS:
		if c.AcceptInverseOffers == nil {
			return missing("accept_inverse_offers")
		}
	case scheduler.Call_DECLINE_INVERSE_OFFERS:
		if c.DeclineInverseOffers == nil {
			return missing("decline_inverse_offers")
		}
	case scheduler.Call_KILL:
		if c.Kill == nil {
			return missing("kill")
		}
	case scheduler.Call_SHUTDOWN:
		if c.Shutdown == nil {
			return missing("shutdown")
		}
	case scheduler.Call_ACKNOWLEDGE:
		if c.Acknowledge == nil {
			return missing("acknowledge")
		}
		if len(c.Acknowledge.UUID) != 16 {
			return fmt.Errorf("Invalid UUID: expected 16 bytes, got %d", len(c.Acknowledge.UUID))
		}
	case scheduler.Call_ACKNOWLEDGE_OPERATION_STATUS:
		if c.AcknowledgeOperationStatus == nil {
			return missing("acknowledge_operation_status")
		}
		if len(c.AcknowledgeOperationStatus.UUID) != 16 {
			return fmt.Errorf("Invalid UUID: expected 16 bytes, got %d", len(c.AcknowledgeOperationStatus.UUID))
		}
		if c.AcknowledgeOperationStatus.AgentID == nil {
			return missing("agent_id")
		}
	case scheduler.Call_RECONCILE:
		if c.Reconcile == nil {
			return missing("reconcile")
		}
	case scheduler.Call_RECONCILE_OPERATIONS:
		if c.ReconcileOperations == nil {
			return missing("reconcile_operations")
		}
	case scheduler.Call_MESSAGE:
		if c.Message == nil {
			return missing("message")
		}
	case scheduler.Call_REQUEST:
		if c.Request == nil {
			return missing("request")
		}
	case scheduler.Call_UPDATE_FRAMEWORK:
		if c.UpdateFramework == nil {
			return missing("update_framework")
		}
		if c.UpdateFramework.FrameworkInfo.GetID().GetValue() != c.FrameworkID.GetValue() {
			return errors.New("'framework_id' differs from 'update_framework.framework_info.id'")
		}
	}
	return nil
}

// serveSubscribe answers a SUBSCRIBE call: 200 with a Mesos-Stream-Id
// header and a RecordIO event stream that starts with SUBSCRIBED (or with
// ERROR when the subscription is refused).
func (m *Master) serveSubscribe(w http.ResponseWriter, r *http.Request, call *scheduler.Call, respCodec *codec) {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		writeError(w, &httpError{http.StatusServiceUnavailable, "Master is shutting down"})
		return
	}
	if rej := m.subReject; rej.StatusCode != 0 {
		m.mu.Unlock()
		if rej.StatusCode == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Basic realm="`+AuthRealm+`"`)
		}
		msg := rej.Message
		if msg == "" {
			msg = http.StatusText(rej.StatusCode)
		}
		writeError(w, &httpError{rej.StatusCode, msg})
		return
	}
	s := newStream(respCodec)
	var fw *framework
	if rej := m.subReject; rej.Message != "" {
		s.send(m, errorEvent(rej.Message))
		s.close()
	} else if f, refusal := m.subscribeLocked(call.Subscribe, s); refusal != "" {
		m.logf("mesostest: refusing subscription: %s", refusal)
		s.send(m, errorEvent(refusal))
		s.close()
	} else {
		fw = f
	}
	m.wg.Add(1)
	m.unlock()
	defer m.wg.Done()

	w.Header().Set("Content-Type", respCodec.mediaType)
	w.Header().Set(headerStreamID, s.id)
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	s.run(r.Context(), m, w, m.cfg.HeartbeatInterval)
	if fw != nil {
		m.streamEnded(fw, s)
	}
}

func errorEvent(msg string) *scheduler.Event {
	return &scheduler.Event{Type: scheduler.Event_ERROR, Error: &scheduler.Event_Error{Message: msg}}
}

// handleCall dispatches a validated non-SUBSCRIBE call. It performs the
// framework and stream checks of Master::Http::scheduler: unknown
// framework is 400, a framework without a subscription is 403, a missing
// or foreign Mesos-Stream-Id is 400.
func (m *Master) handleCall(r *http.Request, call *scheduler.Call) (int, *httpError) {
	m.mu.Lock()
	defer m.unlock()
	if m.closed {
		return 0, &httpError{http.StatusServiceUnavailable, "Master is shutting down"}
	}
	fw := m.frameworks[call.FrameworkID.Value]
	if fw == nil || fw.removed {
		return 0, &httpError{http.StatusBadRequest, "Framework cannot be found"}
	}
	if fw.stream == nil {
		return 0, &httpError{http.StatusForbidden, "Framework is not subscribed"}
	}
	ids := r.Header.Values(headerStreamID)
	if len(ids) == 0 {
		return 0, &httpError{http.StatusBadRequest,
			"All non-subscribe calls should include the 'Mesos-Stream-Id' header"}
	}
	if ids[0] != fw.stream.id {
		return 0, &httpError{http.StatusBadRequest, fmt.Sprintf(
			"The stream ID '%s' included in this request didn't match the stream ID currently associated with framework ID %s",
			ids[0], fw.id)}
	}

	switch call.Type {
	case scheduler.Call_TEARDOWN:
		m.logf("mesostest: framework %s requested TEARDOWN", fw.id)
		m.removeFrameworkLocked(fw, "framework sent TEARDOWN")
	case scheduler.Call_ACCEPT:
		if m.acceptFail != 0 {
			return 0, &httpError{m.acceptFail, "mesostest: ACCEPT failure injected by the test (FailAccept)"}
		}
		m.acceptLocked(fw, call.Accept)
	case scheduler.Call_DECLINE:
		m.declineLocked(fw, call.Decline.OfferIDs, call.Decline.Filters)
	case scheduler.Call_REVIVE:
		m.reviveLocked(fw, call.GetRevive().GetRoles())
	case scheduler.Call_SUPPRESS:
		m.suppressLocked(fw, call.GetSuppress().GetRoles())
	case scheduler.Call_KILL:
		m.killCallLocked(fw, call.Kill)
	case scheduler.Call_ACKNOWLEDGE:
		m.acknowledgeLocked(fw, call.Acknowledge)
	case scheduler.Call_RECONCILE:
		m.reconcileLocked(fw, call.Reconcile.Tasks)
	case scheduler.Call_UPDATE_FRAMEWORK:
		m.updateFrameworkLocked(fw, call.UpdateFramework)
		return http.StatusOK, nil
	case scheduler.Call_MESSAGE, scheduler.Call_SHUTDOWN, scheduler.Call_REQUEST,
		scheduler.Call_ACCEPT_INVERSE_OFFERS, scheduler.Call_DECLINE_INVERSE_OFFERS,
		scheduler.Call_ACKNOWLEDGE_OPERATION_STATUS, scheduler.Call_RECONCILE_OPERATIONS:
		// No custom executors, inverse offers or offer operations with
		// feedback exist in the test master: accepted and dropped, as
		// Mesos drops messages for unknown executors.
		m.logf("mesostest: ignoring %s call from framework %s", call.Type, fw.id)
	default:
		return 0, &httpError{http.StatusNotImplemented, "Unsupported call type " + call.Type.String()}
	}
	return http.StatusAccepted, nil
}

// sendLocked sends ev to fw if it is connected; events for disconnected
// frameworks are dropped, as the Mesos master does.
func (m *Master) sendLocked(fw *framework, ev *scheduler.Event) {
	if fw.stream == nil {
		return
	}
	fw.stream.send(m, ev)
}

// Call is a scheduler call a master received and parsed.
type Call struct {
	// At is when it was answered.
	At time.Time
	// Master is the index (in URLs) of the master that received it.
	Master int
	// FrameworkID and Type of the call.
	FrameworkID string
	Type        scheduler.Call_Type
	// Status is the HTTP status of the answer (200 for a SUBSCRIBE that
	// got a stream, even one refused with an ERROR event).
	Status int
}

// maxCalls bounds the call log; older calls are dropped.
const maxCalls = 100000

func (m *Master) recordCall(i int, c *scheduler.Call, status int) {
	m.mu.Lock()
	defer m.unlock()
	if len(m.calls) >= maxCalls {
		m.calls = append(m.calls[:0], m.calls[len(m.calls)-maxCalls/2:]...)
	}
	fid := c.GetFrameworkID().GetValue()
	if fid == "" {
		fid = c.GetSubscribe().GetFrameworkInfo().GetID().GetValue()
	}
	m.calls = append(m.calls, Call{At: time.Now(), Master: i, FrameworkID: fid, Type: c.Type, Status: status})
}

// Calls returns the scheduler calls the masters received and parsed
// (method, media type and body valid; redirected calls and calls answered
// 503 are not parsed), oldest first; at most the last 50000-100000.
func (m *Master) Calls() []Call {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.calls)
}
