package s3test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/sluicehq/sluice/internal/toolbin"
)

// client returns a minio client for srv with the given credentials, with
// no retries and short timeouts (these tests probe failures).
func client(t *testing.T, srv *Server, access, secret string) *minio.Client {
	t.Helper()
	var creds *credentials.Credentials
	if access != "" {
		creds = credentials.NewStaticV4(access, secret, "")
	} else {
		creds = credentials.New(&credentials.Static{}) // anonymous
	}
	c, err := minio.New(strings.TrimPrefix(srv.Endpoint(), "http://"), &minio.Options{
		Creds: creds, Region: "us-east-1", MaxRetries: 1,
		Transport: &http.Transport{ResponseHeaderTimeout: 5 * time.Second, DisableKeepAlives: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func putString(ctx context.Context, c *minio.Client, bucket, key, v string) error {
	_, err := c.PutObject(ctx, bucket, key, strings.NewReader(v), int64(len(v)), minio.PutObjectOptions{})
	return err
}

func getString(ctx context.Context, c *minio.Client, bucket, key string) (string, error) {
	obj, err := c.GetObject(ctx, bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return "", err
	}
	defer obj.Close()
	b, err := io.ReadAll(obj)
	return string(b), err
}

func TestStartStopStart(t *testing.T) {
	srv := Start(t)
	if !strings.HasPrefix(srv.Endpoint(), "http://127.0.0.1:") {
		t.Errorf("Endpoint: got %s, want http://127.0.0.1:PORT", srv.Endpoint())
	}
	c := client(t, srv, srv.AccessKey(), srv.SecretKey())
	ctx := t.Context()
	if err := putString(ctx, c, srv.Bucket(), "dir/kept", "before the restart"); err != nil {
		t.Fatalf("put: %v", err)
	}
	ports := srv.Ports()

	began := time.Now()
	srv.Stop()
	t.Logf("stop took %v", time.Since(began).Round(time.Millisecond))
	_, err := net.DialTimeout("tcp", strings.TrimPrefix(srv.Endpoint(), "http://"), time.Second)
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("dial S3 after Stop: got %v, want connection refused", err)
	}
	srv.Stop() // idempotent

	began = time.Now()
	srv.Start()
	t.Logf("restart took %v", time.Since(began).Round(time.Millisecond))
	srv.Start() // running: nothing to do
	if srv.Ports() != ports {
		t.Errorf("ports after restart: got %+v, want %+v", srv.Ports(), ports)
	}
	if got, err := getString(ctx, c, srv.Bucket(), "dir/kept"); err != nil || got != "before the restart" {
		t.Errorf("object put before the restart: got %q, %v", got, err)
	}
	if b, err := os.ReadFile(srv.LogPath()); err != nil || strings.Count(string(b), "==> proctest: starting") != 2 {
		t.Errorf("log %s: want the output of both runs (err %v)", srv.LogPath(), err)
	}
}

func TestCredentialsAreRequired(t *testing.T) {
	srv := Start(t)
	ctx := t.Context()
	for _, tc := range []struct{ name, access, secret string }{
		{"anonymous", "", ""},
		{"wrong secret", srv.AccessKey(), "not-the-secret"},
		{"unknown key", "nobody", srv.SecretKey()},
	} {
		c := client(t, srv, tc.access, tc.secret)
		err := putString(ctx, c, srv.Bucket(), "k", "v")
		if code := minio.ToErrorResponse(err).StatusCode; code != http.StatusForbidden {
			t.Errorf("%s put: got %v (HTTP %d), want 403 Forbidden", tc.name, err, code)
		}
	}
}

func TestPauseResume(t *testing.T) {
	srv := Start(t)
	c := client(t, srv, srv.AccessKey(), srv.SecretKey())
	srv.Pause()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	began := time.Now()
	err := putString(ctx, c, srv.Bucket(), "k", "v")
	cancel()
	if err == nil {
		t.Fatalf("put to a paused server: got no error")
	}
	if waited := time.Since(began); waited < 1500*time.Millisecond {
		t.Errorf("put to a paused server failed after %v (%v), want it to hang until the deadline", waited, err)
	}
	srv.Resume()
	if err := putString(t.Context(), c, srv.Bucket(), "k", "v"); err != nil {
		t.Errorf("put after Resume: %v", err)
	}
	srv.Pause()
	srv.Stop() // resumes first, then stops within the stop timeout
	srv.Start()
	if got, err := getString(t.Context(), c, srv.Bucket(), "k"); err != nil || got != "v" {
		t.Errorf("get after pause, stop and start: got %q, %v", got, err)
	}
}

// TestOnlyLoopbackAndPickedPorts checks that two servers run side by side
// and that each listens on 127.0.0.1 and on its picked ports only (no
// default port of weed mini, no other interface).
func TestOnlyLoopbackAndPickedPorts(t *testing.T) {
	a, b := Start(t), Start(t)
	if slices.ContainsFunc(a.Ports().list(), func(p int) bool { return slices.Contains(b.Ports().list(), p) }) {
		t.Fatalf("two servers share a port: %+v, %+v", a.Ports(), b.Ports())
	}
	for _, srv := range []*Server{a, b} {
		pid := srv.runs.Pid()
		got := listening(t, pid)
		want := map[string]bool{}
		for _, p := range srv.Ports().list() {
			want["127.0.0.1:"+strconv.Itoa(p)] = true
		}
		for addr := range got {
			if !want[addr] {
				t.Errorf("server %s: listens on %s, which is not one of its picked ports %+v", srv.Endpoint(), addr, srv.Ports())
			}
		}
		for addr := range want {
			if !got[addr] {
				t.Errorf("server %s: does not listen on picked port %s", srv.Endpoint(), addr)
			}
		}
	}
}

// listening returns the TCP addresses (IPv4 and IPv6) process pid listens
// on, from /proc: its socket inodes matched against the listening sockets.
func listening(t *testing.T, pid int) map[string]bool {
	t.Helper()
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if err == nil && strings.HasPrefix(link, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	out := map[string]bool{}
	for _, file := range []string{"tcp", "tcp6"} {
		f, err := os.Open(fmt.Sprintf("/proc/%d/net/%s", pid, file))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Scan() // header
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			if len(fields) < 10 || fields[3] != "0A" || !inodes[fields[9]] {
				continue
			}
			out[procAddr(t, fields[1])] = true
		}
		f.Close()
	}
	return out
}

// procAddr decodes a /proc/net/tcp address, "0100007F:1F90" for
// 127.0.0.1:8080 (IPv4 bytes in host order, little-endian here).
func procAddr(t *testing.T, s string) string {
	hexIP, hexPort, _ := strings.Cut(s, ":")
	port, _ := strconv.ParseUint(hexPort, 16, 16)
	var ip net.IP
	for i := 0; i+8 <= len(hexIP); i += 8 {
		word, _ := strconv.ParseUint(hexIP[i:i+8], 16, 32)
		ip = append(ip, byte(word), byte(word>>8), byte(word>>16), byte(word>>24))
	}
	if ip4 := ip.To4(); ip4 != nil {
		ip = ip4
	}
	return net.JoinHostPort(ip.String(), strconv.Itoa(int(port)))
}

func TestCleanupKillsServerAndRemovesSockets(t *testing.T) {
	var pid int
	var ports Ports
	t.Run("server", func(t *testing.T) {
		srv := Start(t)
		pid, ports = srv.runs.Pid(), srv.Ports()
		if _, err := os.Stat(fmt.Sprintf("/tmp/seaweedfs-master-grpc-%d.sock", ports.MasterGRPC)); err != nil {
			t.Errorf("master gRPC socket: %v (did weed move it? then removeSockets must follow)", err)
		}
	})
	// The subtest's cleanups have run: the process must be gone (reaped).
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("weed pid %d after cleanup: kill(0) = %v, want ESRCH", pid, err)
	}
	for _, pattern := range []string{
		fmt.Sprintf("/tmp/seaweedfs-*-%d.sock", ports.S3), fmt.Sprintf("/tmp/seaweedfs-*-%d.sock", ports.MasterGRPC),
		fmt.Sprintf("/tmp/seaweedfs-*-%d.sock", ports.Filer), fmt.Sprintf("/tmp/seaweedfs-*-%d.sock", ports.FilerGRPC),
		fmt.Sprintf("/tmp/seaweedfs-*-%d.sock", ports.VolumeGRPC), fmt.Sprintf("/tmp/seaweedfs-*-%d.sock", ports.S3GRPC),
		fmt.Sprintf("/tmp/seaweedfs-*-%d.sock", ports.AdminGRPC),
	} {
		if left, _ := filepath.Glob(pattern); len(left) > 0 {
			t.Errorf("sockets left after cleanup: %q", left)
		}
	}
}

func TestCheckBinary(t *testing.T) {
	if err := checkBinary(Binary(t)); err != nil {
		t.Errorf("checkBinary(%s): %v", Binary(t), err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := checkBinary(self); err == nil || !strings.Contains(err.Error(), "want "+Module+"/weed") {
		t.Errorf("checkBinary(the test binary): got %v, want a not-weed error", err)
	}
	t.Setenv(EnvBinary, "/nonexistent/weed")
	if _, err := binary.Tool.Find(t.Logf); err == nil || !strings.Contains(err.Error(), EnvBinary+"=/nonexistent/weed") {
		t.Errorf("Find with %s=/nonexistent/weed: got %v, want an error naming it", EnvBinary, err)
	}
	script := filepath.Join(t.TempDir(), "weed")
	os.WriteFile(script, []byte("#!/bin/sh\necho weed\n"), 0o755)
	if err := checkBinary(script); err == nil || !strings.Contains(err.Error(), "build info") {
		t.Errorf("checkBinary(a script): got %v, want a build info error", err)
	}
}

// TestLogsStayInTheTempDir checks that glog writes nowhere but our log.
func TestLogsStayInTheTempDir(t *testing.T) {
	srv := Start(t)
	b, err := os.ReadFile(srv.LogPath())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte("Start Seaweed")) {
		t.Errorf("log %s has no glog output (want -logtostderr to bring it here):\n%s", srv.LogPath(), toolbin.Tail(string(b), 20))
	}
}
