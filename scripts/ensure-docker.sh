#!/usr/bin/env bash
# Makes a Docker engine answer on this machine: installs docker.io when dockerd is missing (root
# only), starts dockerd in the background when its socket does not answer, and waits for it.
# Exits 0 when `docker info` works, 1 otherwise (with the reason on stderr).
set -u
say() { echo "ensure-docker: $*" >&2; }

if docker info >/dev/null 2>&1; then exit 0; fi

if ! command -v dockerd >/dev/null 2>&1; then
  if [ "$(id -u)" != 0 ]; then say "dockerd is missing and installing it needs root (apt-get install docker.io)"; exit 1; fi
  say "installing docker.io"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null && apt-get install -y -qq docker.io >/dev/null || { say "apt-get install docker.io failed"; exit 1; }
fi

if [ "$(id -u)" != 0 ]; then say "the Docker engine is not running and starting it needs root"; exit 1; fi
log=${PLB_DOCKERD_LOG:-/tmp/plb-dockerd.log}
say "starting dockerd (log: $log)"
nohup dockerd >"$log" 2>&1 &
echo $! > /tmp/plb-dockerd.pid
for _ in $(seq 1 60); do
  if docker info >/dev/null 2>&1; then say "dockerd is up"; exit 0; fi
  sleep 1
done
say "dockerd did not answer within 60 s; see $log"
exit 1
