package mesos

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sluicehq/sluice/control/api"
	"github.com/sluicehq/sluice/mesos/mesosstatus"
)

// TestNodeScalerAsksOverTLSAndDrainsAgain: with NodeCA the pool
// autoscaler asks the nodes over https (their certificates checked
// against the CA), with the token; a node still draining (503) is asked
// again until it says drained, and one refusing (409) is an error saying
// why.
func TestNodeScalerAsksOverTLSAndDrainsAgain(t *testing.T) {
	var drains atomic.Int32
	var refuse atomic.Bool
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Header.Get("Authorization") != "Bearer tok" {
			w.WriteHeader(http.StatusUnauthorized)
			_ = json.NewEncoder(w).Encode(api.Error{Error: "no token"})
			return
		}
		switch r.Method + " " + r.URL.Path {
		case "GET /v1/autoscale":
			_ = json.NewEncoder(w).Encode(api.AutoscaleStatus{Nodes: &api.AutoscaleNodes{Members: 2, Instances: 6, PerNode: 4}})
		case "POST /v1/node/drain":
			switch {
			case refuse.Load():
				w.WriteHeader(http.StatusConflict)
				_ = json.NewEncoder(w).Encode(api.Error{Error: `operator "x" runs here and no other member hosts its kind`})
			case drains.Add(1) < 3:
				w.WriteHeader(http.StatusServiceUnavailable)
				_ = json.NewEncoder(w).Encode(api.Error{Error: "still draining"})
			default:
				_ = json.NewEncoder(w).Encode(api.DrainStatus{Node: "work.1.x", Drained: true})
			}
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	client, scheme, err := newNodeClient(ca)
	if err != nil || scheme != "https" {
		t.Fatalf("newNodeClient = %q, %v", scheme, err)
	}
	defer client.CloseIdleConnections()
	ns := &nodeScaler{s: &Scheduler{cfg: Config{NodeToken: "tok"}, nodeClient: client, nodeScheme: scheme}}
	host, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	p, _ := strconv.ParseUint(port, 10, 64)
	ts := mesosstatus.TaskStatus{Pool: "work", Instance: 1, ID: "work.1.x", Host: host, Ports: []uint64{1, p}, State: "TASK_RUNNING"}
	ctx := context.Background()

	rec, err := ns.recommendation(ctx, mesosstatus.Status{Tasks: []mesosstatus.TaskStatus{ts}})
	if err != nil || rec.Instances != 6 || rec.PerNode != 4 {
		t.Fatalf("recommendation = %+v, %v", rec, err)
	}
	if err := ns.drain(ctx, ts); err != nil || drains.Load() != 3 {
		t.Fatalf("drain = %v after %d requests, want drained on the third", err, drains.Load())
	}
	refuse.Store(true)
	if err := ns.drain(ctx, ts); err == nil || !strings.Contains(err.Error(), "409") || !strings.Contains(err.Error(), "no other member hosts") {
		t.Fatalf("drain of a node refusing = %v, want the 409 and its reason", err)
	}
	// Without the CA the certificate is not trusted.
	plain, _, _ := newNodeClient("")
	defer plain.CloseIdleConnections()
	ns.s.nodeClient = plain
	if _, err := ns.recommendation(ctx, mesosstatus.Status{Tasks: []mesosstatus.TaskStatus{ts}}); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("recommendation without the CA = %v, want a certificate error", err)
	}
	if _, _, err := newNodeClient(filepath.Join(t.TempDir(), "missing.pem")); err == nil || !strings.Contains(err.Error(), "NodeCA") {
		t.Fatalf("newNodeClient of a missing file = %v, want an error naming NodeCA", err)
	}
}
