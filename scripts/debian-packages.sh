#!/usr/bin/env bash
# debian-packages.sh: install the test services that come from Debian's
# packages, once: Prometheus (internal/integration's scrape test), Chromium
# (the console's browser tests) and PostgreSQL (connectors/postgres). Needs
# root the first time; a machine that has them all does nothing.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

want=()
command -v prometheus >/dev/null || want+=(prometheus)
command -v chromium >/dev/null || want+=(chromium)
"$root/scripts/pg-bindir.sh" >/dev/null 2>&1 || want+=(postgresql)
[ ${#want[@]} -eq 0 ] && exit 0

echo "debian-packages.sh: installing ${want[*]}" >&2
apt-get update >&2
DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${want[@]}" >&2
