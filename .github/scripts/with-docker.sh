#!/bin/sh
# Runs a command with access to the Docker socket through group membership, never by opening the
# socket to everyone (chmod 666). GitHub-hosted runners already put the runner user in the docker
# group; elsewhere `usermod -aG docker` (done by the workflow) only applies to new logins, so this
# step's shell does not have the group yet and `sg docker` starts the command with it.
# Usage: .github/scripts/with-docker.sh <command> [args...]
set -eu
if [ $# -eq 0 ]; then
  echo "with-docker.sh: give a command" >&2
  exit 2
fi
if docker info >/dev/null 2>&1; then
  exec "$@"
fi
if ! id -nG | tr ' ' '\n' | grep -qx docker && getent group docker | cut -d: -f4 | tr ',' '\n' | grep -qx "$(id -un)"; then
  # Quote every argument for the shell sg starts, so none is split or expanded twice.
  cmd=''
  for a in "$@"; do
    cmd="$cmd '$(printf '%s' "$a" | sed "s/'/'\\\\''/g")'"
  done
  exec sg docker -c "$cmd"
fi
echo "with-docker.sh: the Docker engine does not answer to $(id -un) (is dockerd running? is $(id -un) in the docker group?)" >&2
exit 1
