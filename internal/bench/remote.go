package bench

import (
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/creds"
)

// RemoteRaw measures protoactor remote one-way throughput: a sender
// process sends n small protobuf messages (a record-sized wire.Record
// each) with plain Send to an actor in a sink process, one message per
// record, no batching; both are nodeBin (in -raw-send and -raw-sink mode).
// It is the baseline for CrossNode, and like CrossNode's nodes both
// processes are fresh for every run: a sender in the benchmark's own
// process ran faster in each later run, its heap already grown by the
// earlier ones. The rate is taken from the go given to the sender to the
// sink's count of n. Result.SideCPU holds the sender's and the sink's CPU
// time over that span. procFlags, when not nil, adds flags of each
// process by id ("send", "sink"; see profiler.nodeFlags).
func RemoteRaw(nodeBin string, n int, procFlags func(id string) []string) (Result, error) {
	flags := func(id string, own ...string) []string {
		if procFlags != nil {
			own = append(own, procFlags(id)...)
		}
		return own
	}
	sinkProc, ready, err := startProc(nodeBin, flags("sink", "-bind", "127.0.0.1:0", "-raw-sink", strconv.Itoa(n)), nil)
	if err != nil {
		return Result{}, err
	}
	defer sinkProc.kill()
	addr, _ := strings.CutPrefix(ready, "ready addr=")
	sender, _, err := startProc(nodeBin, flags("send", "-raw-send", strconv.Itoa(n), "-raw-to", addr), nil)
	if err != nil {
		return Result{}, err
	}
	defer sender.finish(10 * time.Second)
	cpu0, err := procsCPU(sender, sinkProc)
	if err != nil {
		return Result{}, err
	}
	start := time.Now()
	if _, err := io.WriteString(sender.stdin, "go\n"); err != nil {
		return Result{}, fmt.Errorf("bench: raw remote: start the sender: %w", err)
	}
	select {
	case l := <-sinkProc.lines:
		if l != "done" {
			return Result{}, fmt.Errorf("bench: raw sink said %q", l)
		}
	case <-time.After(5 * time.Minute):
		return Result{}, fmt.Errorf("bench: raw remote: sink did not receive %d messages", n)
	}
	res := Result{Ops: int64(n), Elapsed: time.Since(start)}
	cpu, err := procsCPU(sender, sinkProc)
	if err != nil {
		return Result{}, err
	}
	res.SideCPU = [2]time.Duration{cpu[0] - cpu0[0], cpu[1] - cpu0[1]}
	return res, nil
}

// CrossNode measures Sluice records/s between two node processes joined
// through Consul: node "far" hosts a group-by counter (4 instances), node
// "near" a generator of n records; every record crosses the nodes in
// batches. The rate is taken between the far node's first and last counted
// record (polled as nextPoll says), and so are each node's CPU time
// (Result.SideCPU: near, far) and the time the near node's generator was
// blocked by backpressure (Result.Blocked: waiting for the far node).
// nodeFlags, when not nil, adds flags of each node by id (see
// NodeTLSFlags).
func CrossNode(nodeBin, consulAddr, dataDir string, n int, nodeFlags func(id string) []string) (Result, error) {
	common := []string{"-consul", consulAddr, "-node-insecure", "-cluster", "bench" + strconv.FormatInt(time.Now().UnixNano(), 36),
		"-records", strconv.Itoa(n), "-keys", "10000", "-gen-parallelism", "1", "-count-parallelism", "4", "-log-level", "error"}
	args := func(id string, own ...string) []string {
		a := append(append([]string{"-id", id, "-data", dataDir + "/" + id}, own...), common...)
		if nodeFlags != nil {
			a = append(a, nodeFlags(id)...)
		}
		return a
	}
	far, ready, err := startProc(nodeBin, args("far", "-host", "count"), nil)
	if err != nil {
		return Result{}, err
	}
	defer far.stop(10 * time.Second)
	farHTTP, _ := strings.CutPrefix(ready, "ready http=")
	near, nearReady, err := startProc(nodeBin, args("near", "-host", "gen"), nil)
	if err != nil {
		return Result{}, err
	}
	defer near.stop(10 * time.Second)
	nearHTTP, _ := strings.CutPrefix(nearReady, "ready http=")
	var t0 time.Time
	var c0 int64
	var cpu0 [2]time.Duration  // near's and far's CPU time at t0
	var blocked0 time.Duration // near's time blocked by backpressure at t0
	deadline := time.Now().Add(5 * time.Minute)
	for time.Now().Before(deadline) {
		st, err := nodeStatus(farHTTP)
		if err == nil {
			c := processed(st, "count")
			if t0.IsZero() && c > 0 {
				t0, c0 = time.Now(), c
				if cpu0, err = procsCPU(near, far); err != nil {
					return Result{}, err
				}
				if blocked0, err = nodeBlocked(nearHTTP); err != nil {
					return Result{}, err
				}
			}
			if c >= int64(n) {
				r := Result{Ops: int64(n) - c0, Elapsed: time.Since(t0)}
				cpu, err := procsCPU(near, far)
				if err != nil {
					return Result{}, err
				}
				r.SideCPU = [2]time.Duration{cpu[0] - cpu0[0], cpu[1] - cpu0[1]}
				blocked, err := nodeBlocked(nearHTTP)
				if err != nil {
					return Result{}, err
				}
				r.Blocked = blocked - blocked0
				return r, nil
			}
			time.Sleep(nextPoll(t0, c0, c, int64(n)))
			continue
		}
		time.Sleep(5 * time.Millisecond)
	}
	return Result{}, fmt.Errorf("bench: cross-node: far node did not count %d records in 5 minutes", n)
}

// nodeBlocked returns the time a node's instances have spent blocked by
// backpressure, summed.
func nodeBlocked(httpAddr string) (time.Duration, error) {
	st, err := nodeStatus(httpAddr)
	if err != nil {
		return 0, err
	}
	var b int64
	for _, o := range st.Operators {
		for _, in := range o.Instances {
			b += in.BlockedNanos
		}
	}
	return time.Duration(b), nil
}

// procsCPU returns the CPU time used so far by a sending and a receiving
// process.
func procsCPU(send, recv *proc) ([2]time.Duration, error) {
	s, err := send.cpu()
	if err != nil {
		return [2]time.Duration{}, err
	}
	r, err := recv.cpu()
	return [2]time.Duration{s, r}, err
}

// nextPoll returns how long to wait before polling a node's count c again
// when n are expected and c0 were counted at t0 (zero: none yet): half the
// time the rest should take at the rate seen so far, between 2 ms and
// 100 ms. The status a poll reads costs the node CPU (polled every 5 ms,
// 6 % of the far node's in a cross-node profile), so a run is polled
// rarely until its end is near, which is still seen within a few ms.
func nextPoll(t0 time.Time, c0, c, n int64) time.Duration {
	const lo, hi = 2 * time.Millisecond, 100 * time.Millisecond
	if t0.IsZero() || c <= c0 {
		return 5 * time.Millisecond
	}
	perRecord := time.Since(t0) / time.Duration(c-c0)
	return min(max(perRecord*time.Duration(n-c)/2, lo), hi)
}

// NodeTLSFlags makes a CA and a certificate for each of the nodes ids in
// dir, as "sluice certs" does, and returns the -node-* flags of each node
// (for CrossNode): mutual TLS between them.
func NodeTLSFlags(dir string, ids ...string) (func(id string) []string, error) {
	ca, err := creds.NewCA("bench CA", 24*time.Hour)
	if err != nil {
		return nil, err
	}
	caFile := filepath.Join(dir, "ca.pem")
	if err := creds.WriteKeyPair(caFile, ca.CertPEM, filepath.Join(dir, "ca-key.pem"), ca.KeyPEM, true); err != nil {
		return nil, err
	}
	flags := make(map[string][]string)
	for _, id := range ids {
		certPEM, keyPEM, err := ca.Issue(creds.Request{Name: id, DNSNames: []string{"localhost"}, IPs: []net.IP{net.IPv4(127, 0, 0, 1)},
			Usage: creds.NodeUsage, Valid: 24 * time.Hour})
		if err != nil {
			return nil, err
		}
		cert, key := filepath.Join(dir, id+".pem"), filepath.Join(dir, id+"-key.pem")
		if err := creds.WriteKeyPair(cert, certPEM, key, keyPEM, true); err != nil {
			return nil, err
		}
		flags[id] = []string{"-node-ca", caFile, "-node-cert", cert, "-node-key", key}
	}
	return func(id string) []string { return flags[id] }, nil
}
