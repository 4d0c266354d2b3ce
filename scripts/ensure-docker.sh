#!/usr/bin/env bash
# Makes a Docker engine answer on this machine: installs docker.io (and debootstrap, which
# `plb image build` needs when no registry can be reached) when missing (root only), starts dockerd
# in the background when its socket does not answer, and waits for it.
# Exits 0 when `docker info` works, 1 otherwise (with the reason on stderr).
set -u
say() { echo "ensure-docker: $*" >&2; }

need=()
command -v dockerd >/dev/null 2>&1 || need+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then say "missing ${need[*]}; installing needs root (apt-get install ${need[*]})"; exit 1; fi
  say "installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null && apt-get install -y -qq "${need[@]}" >/dev/null || { say "apt-get install ${need[*]} failed"; exit 1; }
fi

if docker info >/dev/null 2>&1; then exit 0; fi

if [ "$(id -u)" != 0 ]; then say "the Docker engine is not running and starting it needs root"; exit 1; fi
# A fresh private file (mktemp), never a fixed /tmp name another user could have planted as a link.
log=${PLB_DOCKERD_LOG:-$(mktemp /tmp/plb-dockerd.XXXXXX.log)} || { say "mktemp failed"; exit 1; }
nohup dockerd >"$log" 2>&1 &
say "started dockerd, pid $! (log: $log)"
for _ in $(seq 1 60); do
  if docker info >/dev/null 2>&1; then say "dockerd is up"; exit 0; fi
  sleep 1
done
say "dockerd did not answer within 60 s; see $log"
exit 1
