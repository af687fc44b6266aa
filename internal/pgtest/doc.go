// Package pgtest runs a real PostgreSQL server for tests.
//
// [Start] runs initdb into t.TempDir() and starts postgres on 127.0.0.1
// with a port picked at run time (its Unix socket in the same directory,
// so parallel servers never meet), fsync off, and password (SCRAM)
// authentication for one superuser, User with Password. It waits until a
// connection succeeds and registers a cleanup that kills the server's
// process group; the server's log goes to a file in the directory whose
// tail is printed when the test fails.
//
//	pg := pgtest.Start(t)
//	conn, _ := pgx.Connect(ctx, pg.DSN())
//	...
//	pg.Stop()   // PostgreSQL down: connections refused
//	pg.Start()  // back on the same port with the same data
//	pg.Pause()  // SIGSTOP: connections hang, as with a hung server
//	pg.Resume()
//
// pgtest.Start(t, pgtest.Logical()) starts it with wal_level=logical (and
// replication slots and WAL senders to spare) for change-data capture.
//
// PostgreSQL refuses to run as root. When the test runs as root (the
// sessions and CI do), initdb and postgres run as the unprivileged user
// "postgres" that Debian's package creates: the directory is chowned to
// it and its parents made traversable.
//
// The server binaries are taken from the directory $SLUICE_POSTGRES_BIN
// (the Makefile sets it from scripts/pg-bindir.sh), else the newest
// /usr/lib/postgresql/*/bin. A test that finds none fails; it never skips.
package pgtest

import "github.com/sluicehq/sluice/internal/proctest"

// TB is the part of testing.TB that this package uses (proctest.TB).
type TB = proctest.TB
