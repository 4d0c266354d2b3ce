#!/bin/sh
# Builds the offline PostgreSQL image plb uses when no registry can be reached:
# debootstrap a minimal Debian bookworm with postgresql-15, then `docker import` it.
# Same result as `plb image build`. Usage: compose/build-image.sh [--name NAME] [--force] [--dry-run]
# Env: PLB_DEBIAN_MIRROR (default: the first deb.debian.org-style mirror of apt, else
# http://deb.debian.org/debian), PLB_DEBIAN_SUITE (default bookworm), PLB_DEBIAN_KEYRING
# (default /usr/share/keyrings/debian-archive-keyring.gpg). The Release file's signature is
# always checked; --dry-run prints the commands without running anything.
set -eu

NAME=plb-postgres:15-bookworm
FORCE=0
DRY=0
while [ $# -gt 0 ]; do
  case "$1" in
    --name) NAME=${2:?--name needs a value}; shift 2 ;;
    --name=*) NAME=${1#--name=}; shift ;;
    --force) FORCE=1; shift ;;
    --dry-run) DRY=1; shift ;;
    -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
    *) echo "build-image.sh: unknown argument: $1" >&2; exit 2 ;;
  esac
done

SUITE=${PLB_DEBIAN_SUITE:-bookworm}
if [ -z "${PLB_DEBIAN_MIRROR:-}" ]; then
  # Reuse the host's apt mirror (deb822 or one-line format); fall back to the public one.
  PLB_DEBIAN_MIRROR=$(cat /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null |
    sed -n -e 's/^URIs:[[:space:]]*\([^[:space:]]*\/debian\)[[:space:]]*$/\1/p' \
      -e 's/^deb[[:space:]]\{1,\}\(http[^[:space:]]*\/debian\)[[:space:]]\{1,\}bookworm[[:space:]].*/\1/p' |
    head -n 1)
  PLB_DEBIAN_MIRROR=${PLB_DEBIAN_MIRROR:-http://deb.debian.org/debian}
fi

KEYRING=${PLB_DEBIAN_KEYRING:-/usr/share/keyrings/debian-archive-keyring.gpg}
# Signed packages only: the Release file must verify against the Debian archive keyring
# (--force-check-gpg refuses to fall back to unchecked downloads). Cleanup never leaves the
# rootfs's filesystem (--one-file-system), even if something is still mounted inside it.
DEBOOTSTRAP="debootstrap --force-check-gpg --keyring=$KEYRING --variant=minbase --include=postgresql-15"
RM="rm -rf --one-file-system"

if [ "$DRY" = 1 ]; then
  echo "$DEBOOTSTRAP $SUITE <rootfs> $PLB_DEBIAN_MIRROR"
  echo "$RM <rootfs>/var/lib/postgresql/15/main <rootfs>/etc/postgresql/15/main <rootfs>/var/cache/apt/archives/*.deb <rootfs>/var/lib/apt/lists/*"
  echo "$RM <rootfs>"
  echo "docker import - $NAME"
  exit 0
fi

if [ "$(id -u)" != 0 ]; then
  echo "build-image.sh: debootstrap needs root; run with sudo" >&2
  exit 1
fi
if ! command -v debootstrap >/dev/null 2>&1; then
  echo "build-image.sh: debootstrap is missing; install it with: apt-get install -y debootstrap" >&2
  exit 1
fi
if [ ! -r "$KEYRING" ]; then
  echo "build-image.sh: the Debian archive keyring $KEYRING is missing (needed to check the Release signature); install it with: apt-get install -y debian-archive-keyring, or set PLB_DEBIAN_KEYRING" >&2
  exit 1
fi
if ! docker info >/dev/null 2>&1; then
  echo "build-image.sh: the Docker engine does not answer (is dockerd running?)" >&2
  exit 1
fi
if [ "$FORCE" = 0 ] && docker image inspect "$NAME" >/dev/null 2>&1; then
  echo "image $NAME already present (use --force to rebuild)"
  exit 0
fi

ROOTFS=$(mktemp -d /tmp/plb-rootfs.XXXXXX)
trap '$RM "$ROOTFS"' EXIT INT TERM

echo "debootstrap $SUITE from $PLB_DEBIAN_MIRROR into $ROOTFS"
$DEBOOTSTRAP "$SUITE" "$ROOTFS" "$PLB_DEBIAN_MIRROR"
# The package's default cluster and apt caches are dead weight: plb runs its own initdb.
$RM "$ROOTFS"/var/lib/postgresql/15/main "$ROOTFS"/etc/postgresql/15/main \
  "$ROOTFS"/var/cache/apt/archives/*.deb "$ROOTFS"/var/lib/apt/lists/*

tar --numeric-owner -C "$ROOTFS" -c . | docker import \
  --change 'ENV PATH=/usr/lib/postgresql/15/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV LANG=C.UTF-8' \
  --change 'LABEL plb.image=offline' \
  --change 'CMD ["/bin/bash"]' \
  - "$NAME"
echo "built $NAME"
