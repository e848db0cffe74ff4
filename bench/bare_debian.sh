#!/bin/bash
# The README's commands and CI on a bare Debian, as a new user meets them (issue 28 part 1).
#
# Builds a Debian bookworm root with debootstrap --variant=minbase and only make, git, python3
# and ca-certificates added; then, for each run, a fresh copy of that root, a clone of this
# checkout's HEAD in the run's folder, and the run's commands inside it as root (chroot, with
# /proc, /dev and /sys mounted; network for apt and pip as on the host). One summary line per
# command: exit code, pytest's counts where it ran, wall time.
#
#   bench/bare_debian.sh                    # /root/quco: make demo, make test; /srv/x: CI=true bash .ci/run
#   bench/bare_debian.sh '/srv/x:make test' '/root/quco:CI=true bash .ci/run'
#   BARE_DIR=/var/tmp/b KEEP=1 bench/bare_debian.sh    # where the roots go; keep them afterwards
#
# A run is "FOLDER:COMMAND[;COMMAND...]". Needs root, debootstrap (installed with apt when
# missing) and a few GiB of disk; the base root is built once and reused (FRESH=1 rebuilds it).
# On 2 shared cores a make test inside takes about 10 minutes, each run's installs a few more.
set -euo pipefail

[ "$(id -u)" = 0 ] || { echo "bare_debian.sh: needs root (debootstrap, chroot, mount)" >&2; exit 2; }
REPO=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
W=${BARE_DIR:-/var/tmp/quco-bare}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
STEP_TIMEOUT=${STEP_TIMEOUT:-3600}
if [ $# = 0 ]; then
  set -- "/root/quco:make demo;make test" "/srv/x:CI=true bash .ci/run"
fi

command -v debootstrap >/dev/null || {
  echo "installing debootstrap (apt)"
  DEBIAN_FRONTEND=noninteractive apt-get -q -y update >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get -q -y install --no-install-recommends debootstrap >/dev/null
}

mkdir -p "$W"
BASE=$W/base
if [ -n "${FRESH:-}" ] || [ ! -e "$BASE/.quco-complete" ]; then
  rm -rf "$BASE"
  echo "debootstrap: bookworm minbase + make git python3 ca-certificates into $BASE"
  t0=$(date +%s)
  debootstrap --variant=minbase --include=make,git,python3,ca-certificates bookworm "$BASE" "$MIRROR" \
    > "$W/debootstrap.log" 2>&1 || { tail -20 "$W/debootstrap.log"; exit 1; }
  touch "$BASE/.quco-complete"
  echo "debootstrap: done in $(( $(date +%s) - t0 )) s"
fi

MOUNTED=()
unmount_all() {
  local i
  for (( i=${#MOUNTED[@]}-1; i>=0; i-- )); do
    umount -l "${MOUNTED[$i]}" 2>/dev/null || true
  done
  MOUNTED=()
}
trap unmount_all EXIT

remove_root() {  # never through a mount still in place (the host's /dev, /sys)
  local r=$1 m
  [ -e "$r" ] || return 0
  for m in proc dev sys; do
    if mountpoint -q "$r/$m"; then echo "bare_debian.sh: $r/$m still mounted, $r kept" >&2; return 1; fi
  done
  rm -rf --one-file-system "$r"
}

mount_into() {  # the kernel's file systems a build and the tests use (multiprocessing: /dev/shm)
  local r=$1
  mount -t proc proc "$r/proc" && MOUNTED+=("$r/proc")
  mount --rbind /dev "$r/dev" && mount --make-rslave "$r/dev" && MOUNTED+=("$r/dev")
  mount --rbind /sys "$r/sys" && mount --make-rslave "$r/sys" && MOUNTED+=("$r/sys")
  cp -L /etc/resolv.conf "$r/etc/resolv.conf"
  # the host's own certificate authorities (a network that inspects TLS: pip would fail
  # "self-signed certificate in certificate chain" where the host's pip works)
  if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
    cp /usr/local/share/ca-certificates/*.crt "$r/usr/local/share/ca-certificates/"
    chroot "$r" update-ca-certificates >/dev/null 2>&1
  fi
}

SUMMARY=()
n=0
for spec in "$@"; do
  n=$((n + 1))
  folder=${spec%%:*}
  commands=${spec#*:}
  R=$W/run-$n
  remove_root "$R"
  cp -a "$BASE" "$R"
  mkdir -p "$(dirname "$R$folder")"
  git clone -q --no-hardlinks "$REPO" "$R$folder"
  commit=$(git -C "$R$folder" rev-parse --short HEAD)
  echo "run $n: a fresh root, a clone of $commit in $folder (mode of $(dirname "$folder"): $(stat -c %a "$R$(dirname "$folder")"))"
  mount_into "$R"
  IFS=';' read -r -a steps <<< "$commands"
  for cmd in "${steps[@]}"; do
    log=$W/run-$n-$(echo "$cmd" | tr -c 'a-zA-Z0-9' '_').log
    echo "run $n: $folder: $cmd (log $log)"
    t0=$(date +%s)
    set +e
    timeout "$STEP_TIMEOUT" chroot "$R" /usr/bin/env -i HOME=/root LANG=C.UTF-8 \
      PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
      /bin/bash -c "cd '$folder' && $cmd" < /dev/null > "$log" 2>&1
    rc=$?
    set -e
    wall=$(( $(date +%s) - t0 ))
    # pytest's closing line, e.g. "3 failed, 1196 passed, 2 skipped in 512.31s (0:08:32)"
    counts=$(grep -E '^(=+ )?[0-9]+ (passed|failed|error)' "$log" | tail -1 | sed -E 's/^=+ //; s/ =+$//; s/ in [0-9.]+s.*//' || true)
    line="run $n ($commit) $folder: $cmd: exit $rc, ${counts:-no pytest summary}, wall $((wall / 60)) min $((wall % 60)) s"
    echo "$line"
    SUMMARY+=("$line")
    if [ "$rc" != 0 ]; then
      grep -E '^(FAILED|ERROR) ' "$log" | head -20 || true
      tail -5 "$log"
    fi
  done
  unmount_all
  [ -n "${KEEP:-}" ] || remove_root "$R"
done

echo "== summary ($(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)) =="
printf '%s\n' "${SUMMARY[@]}"
