package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/control/api"
)

var (
	fixtureCheckpoint = api.CheckpointView{ID: 1796150500000000000, Started: time.Date(2026, 12, 1, 19, 0, 0, 0, time.UTC),
		Completed: time.Date(2026, 12, 1, 19, 0, 0, 48_000_000, time.UTC), DurationMS: 48, Uploaded: 1_234, Size: 2_345_678, Instances: 5, TopologyVersion: 9}
	fixtureSavepoint = api.CheckpointView{ID: 1796150510000000000, Savepoint: true, Started: time.Date(2026, 12, 1, 19, 0, 10, 0, time.UTC),
		Completed: time.Date(2026, 12, 1, 19, 0, 11, 500_000_000, time.UTC), DurationMS: 1500, Uploaded: 345_678, Size: 2_400_000, Instances: 5, TopologyVersion: 9}
	fixtureCheckpointDetail = api.CheckpointDetail{CheckpointView: fixtureSavepoint,
		Nodes: []api.CheckpointNode{
			{Node: "n1", DB: "9f2c", Files: 7, Size: 1_600_000, Uploaded: 300_000, Instances: []api.CheckpointInstance{
				{Operator: "count", Epoch: 1, Index: 0, EndGroup: 86, StateBytes: 700_000},
				{Operator: "count", Epoch: 1, Index: 1, FirstGroup: 86, EndGroup: 171, StateBytes: 690_000},
				{Operator: "split", Epoch: 1, Index: 0, EndGroup: 128, StateBytes: 120},
			}},
			{Node: "n2", DB: "41ab", Files: 5, Size: 800_000, Uploaded: 45_678, Instances: []api.CheckpointInstance{
				{Operator: "count", Epoch: 1, Index: 2, FirstGroup: 171, EndGroup: 256, StateBytes: 710_000},
				{Operator: "split", Epoch: 1, Index: 1, FirstGroup: 128, EndGroup: 256, StateBytes: 118},
			}},
		},
		Note: "source positions and sinks' pending commits are operator state, inside the instances' key groups"}
)

func TestCheckpoints(t *testing.T) {
	f := newFakeNode(t)
	stdout, stderr, code := f.sluice(t, "checkpoints")
	checkCode(t, code, exitOK)
	check(t, "stdout", stdout, `ID                   KIND        COMPLETED             DURATION  UPLOADED  SIZE    INSTANCES
1796150510000000000  savepoint   2026-12-01T19:00:11Z  1.5s      345.7 kB  2.4 MB  5
1796150500000000000  checkpoint  2026-12-01T19:00:00Z  48ms      1.2 kB    2.3 MB  5
`)
	check(t, "stderr", stderr, "")

	stdout, _, code = f.sluice(t, "checkpoints", "describe", "1796150510000000000")
	checkCode(t, code, exitOK)
	check(t, "stdout", stdout, `ID:                1796150510000000000
Kind:              savepoint
Started:           2026-12-01T19:00:10Z
Completed:         2026-12-01T19:00:11Z
Duration:          1.5s
Uploaded:          345.7 kB
Size:              2.4 MB
Topology version:  9
Instances:         5
Nodes:
  NODE  DATABASE  FILES  SIZE      UPLOADED
  n1    9f2c      7      1.6 MB    300.0 kB
  n2    41ab      5      800.0 kB  45.7 kB
Instances:
  OPERATOR  INDEX  EPOCH  NODE  KEY GROUPS  STATE
  count     0      1      n1    0-85        700.0 kB
  count     1      1      n1    86-170      690.0 kB
  split     0      1      n1    0-127       120 B
  count     2      1      n2    171-255     710.0 kB
  split     1      1      n2    128-255     118 B
Note: source positions and sinks' pending commits are operator state, inside the instances' key groups
`)

	stdout, _, code = f.sluice(t, "checkpoint")
	checkCode(t, code, exitOK)
	check(t, "stdout", stdout, "savepoint 1796150510000000000 complete: took 1.5s, uploaded 345.7 kB, size 2.4 MB, 5 instances\n")

	_, stderr, code = f.sluice(t, "checkpoints", "describe", "latest")
	checkCode(t, code, exitUsage)

	f.on("POST /v1/checkpoints", http.StatusServiceUnavailable, api.Error{Error: "savepoint: checkpoint 17 failed (attempt 5 of 5): node n1: upload: store unreachable"})
	_, stderr, code = f.sluice(t, "checkpoint")
	checkCode(t, code, exitError)
	if want := "store unreachable"; !strings.Contains(stderr, want) {
		t.Fatalf("stderr %q does not say %q", stderr, want)
	}
	checkRequests(t, f,
		request{Method: "GET", Path: "/v1/checkpoints"},
		request{Method: "GET", Path: "/v1/checkpoints/1796150510000000000"},
		request{Method: "POST", Path: "/v1/checkpoints"},
		request{Method: "POST", Path: "/v1/checkpoints"},
	)
}

func TestStatusShowsCheckpoints(t *testing.T) {
	f := newFakeNode(t)
	f.on("GET /v1/status", http.StatusOK, api.ClusterStatus{Node: "n1", TopologyVersion: 3, Checkpoints: &api.CheckpointStatus{
		Coordinator: "n1", Completed: 120, Failed: 9, Last: 1796150510000000000, LastAgeMS: 12_300, LastDurationMS: 48,
		LastUploaded: 1_234, LastSize: 2_345_678, ConsecutiveFailures: 4, LastFailure: time.Date(2026, 12, 1, 19, 0, 23, 0, time.UTC),
		LastError: "checkpoint 1796150523000000000: node n1: store unreachable: checkpoint 1796150523000000000: upload 000011.log: dial tcp 127.0.0.1:8333: connect: connection refused"}})
	stdout, _, code := f.sluice(t, "status")
	checkCode(t, code, exitOK)
	check(t, "stdout", stdout, `Node n1, topology version 3

NODES
none

OPERATORS
none

PENDING
none

LAUNCHER
none

CHECKPOINTS
Coordinator:   n1
Last:          1796150510000000000, 12s ago
Took:          48ms, uploaded 1.2 kB, size 2.3 MB
Completed:     120
Failed:        9 (4 in a row)
Last failure:  2026-12-01T19:00:23Z: checkpoint 1796150523000000000: node n1: store unreachable: checkpoint 1796150523000000000: upload 000011.log: dial tcp 127.0.0.1:8333: connect: connection refused
`)
}
