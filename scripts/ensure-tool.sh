#!/usr/bin/env bash
# ensure-tool.sh NAME: print the path of a cached test-service binary, building
# it first from the pinned module in tools/NAME when it is missing.
#
# Binaries are cached outside the repository, under
# ${SLUICE_CACHE:-$HOME/.cache/sluice}/bin, keyed by version, so a fresh
# machine builds each one once (Consul ~9 min, Jaeger ~10 min, SeaweedFS's
# weed ~20 min, nats-server ~2 min on 2 cores).
set -euo pipefail

name=${1:?usage: ensure-tool.sh consul|jaeger|weed|nats-server}
root=$(cd "$(dirname "$0")/.." && pwd)
cache=${SLUICE_CACHE:-$HOME/.cache/sluice}/bin

case "$name" in
consul) pkg=github.com/hashicorp/consul; version=v1.14.11 ;;
jaeger) pkg=github.com/jaegertracing/jaeger/cmd/jaeger; version=v1.76.0 ;;
weed) pkg=github.com/seaweedfs/seaweedfs/weed; version=v0.0.0-20261109003541-7506e5f91cd6; dir=seaweedfs ;;
nats-server) pkg=github.com/nats-io/nats-server/v2; version=v2.15.3 ;;
*) echo "ensure-tool.sh: unknown tool $name (want consul, jaeger, weed or nats-server)" >&2; exit 2 ;;
esac

bin="$cache/$name-$version"
if [ -x "$bin" ]; then
	echo "$bin"
	exit 0
fi

mkdir -p "$cache"
echo "ensure-tool.sh: building $pkg@$version into $bin (first run only; several minutes)" >&2
start=$(date +%s)
tmp="$bin.tmp.$$"
(cd "$root/tools/${dir:-$name}" && GOFLAGS=-mod=mod go build -trimpath -o "$tmp" "$pkg") >&2
mv "$tmp" "$bin"
echo "ensure-tool.sh: built $name in $(( $(date +%s) - start ))s" >&2
echo "$bin"
