// Package s3test runs a real S3 server, SeaweedFS's "weed mini", for tests.
//
// [Start] launches weed mini bound to 127.0.0.1 with every port it opens
// (master, volume, filer and S3, each HTTP and gRPC, and the admin server's
// two) picked at run time and every optional listener disabled (WebDAV,
// Iceberg, Lance, the admin's legacy ports, metrics), so test packages run
// in parallel on one machine. It configures one access key with full
// rights, creates a bucket, and returns once an authenticated write to the
// bucket succeeds. The server's output goes to a log file in t.TempDir()
// whose tail is printed when the test fails; a cleanup kills its process
// group and removes the Unix sockets it leaves in /tmp.
//
//	srv := s3test.Start(t)
//	st, _ := s3store.Open(ctx, s3store.Config{
//		Endpoint: srv.Endpoint(), Bucket: srv.Bucket(),
//		AccessKeyID: srv.AccessKey(), SecretAccessKey: srv.SecretKey(),
//	})
//	...
//	srv.Stop()  // S3 down: connections refused
//	srv.Start() // back on the same ports with the same data
//	srv.Pause() // S3 hung: connections accepted, never answered
//	srv.Resume()
//
// The binary is SeaweedFS at the commit tools/seaweedfs pins (see
// [Binary]): $SLUICE_WEED_BIN, else the cache scripts/ensure-tool.sh fills,
// else built by that script. A test that cannot find it fails; it never
// skips.
package s3test

import "github.com/sluicehq/sluice/internal/proctest"

// TB is the part of testing.TB that this package uses (proctest.TB).
type TB = proctest.TB
