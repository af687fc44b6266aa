package mesostest_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler"

	"github.com/sluicehq/sluice/mesos/mesostest"
)

// waitTimeout bounds every wait in these tests; it is generous because
// waits end as soon as their condition holds.
const waitTimeout = 15 * time.Second

// newMaster starts a master with test-friendly defaults and closes it at
// the end of the test, checking that Close cleans up.
func newMaster(t *testing.T, cfg mesostest.Config) *mesostest.Master {
	t.Helper()
	if cfg.Logf == nil {
		cfg.Logf = t.Logf
	}
	if cfg.HeartbeatInterval == 0 {
		cfg.HeartbeatInterval = 5 * time.Second
	}
	if cfg.StatusUpdateRetryInterval == 0 {
		cfg.StatusUpdateRetryInterval = 5 * time.Second
	}
	if cfg.AllocationInterval == 0 {
		cfg.AllocationInterval = 50 * time.Millisecond
	}
	if cfg.KillGracePeriod == 0 {
		cfg.KillGracePeriod = 2 * time.Second
	}
	m, err := mesostest.New(cfg)
	if err != nil {
		t.Fatalf("mesostest.New: %v", err)
	}
	t.Cleanup(func() {
		dir := m.WorkDir()
		if err := m.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if n := m.RunningProcesses(); n != 0 {
			t.Errorf("after Close: %d task processes still running", n)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("after Close: work directory %s still exists (%v)", dir, err)
		}
	})
	return m
}

// waitFor waits until cond holds, failing the test after waitTimeout.
func waitFor(t *testing.T, m *mesostest.Master, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := m.WaitUntil(ctx, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// waitRounds waits until the master has completed n more allocation
// rounds, so that it has had the chance to send offers (used to assert
// that none came).
func waitRounds(t *testing.T, m *mesostest.Master, n uint64) {
	t.Helper()
	start := m.AllocationRounds()
	waitFor(t, m, fmt.Sprintf("%d allocation rounds", n), func() bool { return m.AllocationRounds() >= start+n })
}

func taskByID(m *mesostest.Master, id string) (mesostest.Task, bool) {
	for _, t := range m.Tasks() {
		if t.ID == id {
			return t, true
		}
	}
	return mesostest.Task{}, false
}

func frameworkByID(m *mesostest.Master, id string) (mesostest.Framework, bool) {
	for _, f := range m.Frameworks() {
		if f.ID == id {
			return f, true
		}
	}
	return mesostest.Framework{}, false
}

func scalar(name string, v float64) mesos.Resource {
	return mesos.Resource{Name: name, Type: mesos.SCALAR.Enum(), Scalar: &mesos.Value_Scalar{Value: v}}
}

// shellTask builds a TaskInfo running cmd with /bin/sh -c.
func shellTask(id string, agentID mesos.AgentID, cmd string, cpus, mem float64) mesos.TaskInfo {
	return mesos.TaskInfo{
		Name:      "task " + id,
		TaskID:    mesos.TaskID{Value: id},
		AgentID:   agentID,
		Command:   &mesos.CommandInfo{Value: &cmd},
		Resources: []mesos.Resource{scalar("cpus", cpus), scalar("mem", mem)},
	}
}

func offerScalar(o mesos.Offer, name string) float64 {
	total := 0.0
	for _, r := range o.Resources {
		if r.Name == name && r.Scalar != nil {
			total += r.Scalar.Value
		}
	}
	return total
}

// ---- raw HTTP helpers ----

func encode(t *testing.T, mediaType string, call *scheduler.Call) []byte {
	t.Helper()
	var (
		b   []byte
		err error
	)
	if mediaType == mesostest.MediaTypeJSON {
		b, err = json.Marshal(call)
	} else {
		b, err = call.Marshal()
	}
	if err != nil {
		t.Fatalf("encoding call: %v", err)
	}
	return b
}

func decodeEvent(t *testing.T, mediaType string, b []byte) *scheduler.Event {
	t.Helper()
	var ev scheduler.Event
	var err error
	if mediaType == mesostest.MediaTypeJSON {
		err = json.Unmarshal(b, &ev)
	} else {
		err = ev.Unmarshal(b)
	}
	if err != nil {
		t.Fatalf("decoding %s event %q: %v", mediaType, b, err)
	}
	return &ev
}

// post sends a raw POST to the scheduler endpoint.
func post(t *testing.T, ctx context.Context, m *mesostest.Master, headers map[string]string, body []byte) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.SchedulerEndpoint(), bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", m.SchedulerEndpoint(), err)
	}
	return resp
}

// expectStatus posts a call and checks the response status.
func expectStatus(t *testing.T, m *mesostest.Master, headers map[string]string, body []byte, want int) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	resp := post(t, ctx, m, headers, body)
	defer resp.Body.Close()
	msg, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("status = %d (%s), want %d", resp.StatusCode, msg, want)
	}
	return string(msg)
}

// rawStream is a SUBSCRIBE response read with an independent RecordIO
// parser (not mesos-go's), to check the framing byte by byte.
type rawStream struct {
	t         *testing.T
	resp      *http.Response
	br        *bufio.Reader
	mediaType string
	streamID  string
	cancel    context.CancelFunc
}

func rawSubscribe(t *testing.T, m *mesostest.Master, mediaType string, info *mesos.FrameworkInfo) *rawStream {
	t.Helper()
	call := &scheduler.Call{
		Type:        scheduler.Call_SUBSCRIBE,
		FrameworkID: info.ID,
		Subscribe:   &scheduler.Call_Subscribe{FrameworkInfo: info},
	}
	ctx, cancel := context.WithCancel(context.Background())
	resp := post(t, ctx, m, map[string]string{"Content-Type": mediaType, "Accept": mediaType}, encode(t, mediaType, call))
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(resp.Body)
		cancel()
		t.Fatalf("SUBSCRIBE: status %d: %s", resp.StatusCode, msg)
	}
	s := &rawStream{t: t, resp: resp, br: bufio.NewReader(resp.Body), mediaType: mediaType,
		streamID: resp.Header.Get("Mesos-Stream-Id"), cancel: cancel}
	t.Cleanup(s.close)
	return s
}

func (s *rawStream) close() {
	s.cancel()
	s.resp.Body.Close()
}

// record reads one RecordIO record: "<len>\n" then exactly len bytes.
func (s *rawStream) record() []byte {
	s.t.Helper()
	type result struct {
		b   []byte
		err error
	}
	ch := make(chan result, 1)
	go func() {
		line, err := s.br.ReadString('\n')
		if err != nil {
			ch <- result{nil, fmt.Errorf("reading record length: %w", err)}
			return
		}
		digits := strings.TrimSuffix(line, "\n")
		n, err := strconv.ParseUint(digits, 10, 64)
		if err != nil || n == 0 || digits != strconv.FormatUint(n, 10) {
			ch <- result{nil, fmt.Errorf("bad record length line %q", line)}
			return
		}
		b := make([]byte, n)
		if _, err := io.ReadFull(s.br, b); err != nil {
			ch <- result{nil, fmt.Errorf("reading %d byte record: %w", n, err)}
			return
		}
		ch <- result{b, nil}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			s.t.Fatal(r.err)
		}
		return r.b
	case <-time.After(waitTimeout):
		s.close()
		s.t.Fatal("timed out reading a RecordIO record")
		return nil
	}
}

func (s *rawStream) event() *scheduler.Event {
	s.t.Helper()
	return decodeEvent(s.t, s.mediaType, s.record())
}

// nextOfType reads events until one of type typ.
func (s *rawStream) nextOfType(typ scheduler.Event_Type) *scheduler.Event {
	s.t.Helper()
	for {
		if ev := s.event(); ev.Type == typ {
			return ev
		}
	}
}

// callHeaders are the headers of a non-SUBSCRIBE call on this stream.
func (s *rawStream) callHeaders() map[string]string {
	return map[string]string{"Content-Type": s.mediaType, "Mesos-Stream-Id": s.streamID}
}

func contextWithTimeout() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), waitTimeout)
}

func newBufReader(resp *http.Response) *bufio.Reader { return bufio.NewReader(resp.Body) }
