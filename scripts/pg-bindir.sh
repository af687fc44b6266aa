#!/usr/bin/env bash
# pg-bindir.sh: print the directory of Debian's PostgreSQL server binaries
# (initdb, pg_ctl, postgres), the newest version installed; fail if none is.
set -euo pipefail
for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
	if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ]; then
		echo "$d"
		exit 0
	fi
done
echo "pg-bindir.sh: no PostgreSQL server (initdb, pg_ctl under /usr/lib/postgresql/*/bin); install Debian's postgresql package (make tools does)" >&2
exit 1
