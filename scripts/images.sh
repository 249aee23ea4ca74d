#!/usr/bin/env bash
# The three container images, built from binaries already built, with Debian's tools only (no
# container engine, no registry): a minimal root filesystem from Debian's packages
# (mmdebstrap), one layer per binary on top (umoci), an OCI archive per image that any
# registry tool pushes (skopeo copy). The one source of the images: docs/images.md.
#
#   scripts/images.sh build [OUT_DIR]          # OCI archives in OUT_DIR (target/images)
#   scripts/images.sh check [OUT_DIR]          # each archive's user, entrypoint, labels
#   scripts/images.sh unpack OUT_DIR BIN_DIR   # runnable stand-ins for the images' entrypoints
#   scripts/images.sh cuda-prover BIN [OUT_DIR] # the prover image alone, from a CUDA build
#
# IMAGES (all three) names the images build, check and unpack work on, space separated.
#
# build: BIN_DIR (target/release) holds proofpipe-operator, proofpipe-gateway and
# proofpipe-prover; PROVER_BIN, OPERATOR_BIN, GATEWAY_BIN name one elsewhere (the CUDA prover
# of scripts/cuda-build.sh is device-bin/proofpipe-prover).
# REGISTRY (registry.example) and VERSION (the workspace's) name the images; DEBIAN_SUITE
# (bookworm: the glibc the binaries were built against must not be newer than the suite's)
# and DEBIAN_MIRROR choose the packages; SOURCE_DATE_EPOCH (the commit's time) dates them.
#
# unpack: each archive's root filesystem under OUT_DIR/rootfs/NAME, and in BIN_DIR a script
# per binary that runs the image's entrypoint inside that root filesystem (bubblewrap), as the
# image's user, with the image's environment under the caller's, and the host paths a test
# needs bound at the same place (/tmp, the repository, $HOME, and IMAGE_BINDS, colon
# separated). Tests take BIN_DIR as PROOFPIPE_BIN_DIR, so what runs is what the image holds:
# its entrypoint, user, paths and shared libraries. What it does not reproduce of a container
# runtime: network and PID isolation; SIGTERM and SIGINT reach the entrypoint through the
# stand-in script, and a SIGKILL of the script ends the entrypoint too.
#
# cuda-prover: the prover image from BIN (scripts/cuda-build.sh's device-bin/proofpipe-prover,
# which links the CUDA runtime statically and loads the driver's libcuda.so.1 at run time),
# built and checked in OUT_DIR (target/images-cuda) beside the CPU images' folder, and its root
# filesystem as OUT_DIR/proofpipe-prover-rootfs.tar.xz (with image-config.json at its top) for
# a machine without a container runtime (scripts/gpu-image-porep.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

# shellcheck disable=SC2206
names=(${IMAGES:-proofpipe-operator proofpipe-gateway proofpipe-prover})
uid=65532

need() {
  local missing=()
  for tool in "$@"; do command -v "$tool" >/dev/null || missing+=("$tool"); done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "scripts/images.sh: missing ${missing[*]}: apt-get install mmdebstrap umoci skopeo bubblewrap" >&2
    exit 1
  fi
}

version() {
  sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"/\1/p' Cargo.toml
}

archive_of() { echo "$1/$2-$(version).oci.tar"; }

# The shared base: glibc, libgcc, libstdc++ (the CUDA kernels' C++), CA certificates (S3 and
# parameter downloads over TLS), a passwd entry for the non-root user and its home. No shell,
# no package manager: the dpkg status stays so scanners can list the packages.
base_rootfs() {
  local root=$1
  mmdebstrap --quiet --variant=extract \
    --include=libc6,libgcc-s1,libstdc++6,ca-certificates,tzdata \
    "${DEBIAN_SUITE:-bookworm}" "$root" "${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
  # What update-ca-certificates would write (extract runs no maintainer scripts).
  mkdir -p "$root/etc/ssl/certs"
  find "$root/usr/share/ca-certificates" -name '*.crt' | sort | xargs cat \
    > "$root/etc/ssl/certs/ca-certificates.crt"
  # Programs and docs the binaries never run or read (ca-certificates pulls openssl, debconf
  # and perl-base in).
  rm -rf "$root"/usr/bin "$root"/usr/sbin "$root"/usr/share/{doc,man,info,lintian,locale,perl5,debconf} \
    "$root"/usr/lib/x86_64-linux-gnu/perl-base "$root"/usr/share/perl "$root"/var/cache/* \
    "$root"/var/log/* "$root"/etc/apt
  mkdir -p "$root/usr/bin" "$root/usr/local/bin"
  cat > "$root/etc/passwd" <<EOF
root:x:0:0:root:/root:/usr/sbin/nologin
proofpipe:x:$uid:$uid:proofpipe:/home/proofpipe:/usr/sbin/nologin
EOF
  cat > "$root/etc/group" <<EOF
root:x:0:
proofpipe:x:$uid:
EOF
  # The prover's parameter cache; the operator mounts an emptyDir at .cache (ADR 0013).
  mkdir -p "$root/home/proofpipe/.cache/proofpipe/params" "$root/tmp"
  chmod 1777 "$root/tmp"
  chown -R "$uid:$uid" "$root/home/proofpipe"
}

# A layer tar of directory $1, reproducible: sorted, dated, numeric owners as they are.
layer() {
  tar --sort=name --mtime="@$SOURCE_DATE_EPOCH" --numeric-owner --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
    -C "$1" -cf "$2" .
}

build() {
  need mmdebstrap umoci skopeo
  local out=${1:-target/images} bin_dir=${BIN_DIR:-target/release}
  local registry=${REGISTRY:-registry.example} ver
  ver=$(version)
  export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}
  local created revision
  created=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)
  revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)
  local -A bins=(
    [proofpipe-operator]=${OPERATOR_BIN:-$bin_dir/proofpipe-operator}
    [proofpipe-gateway]=${GATEWAY_BIN:-$bin_dir/proofpipe-gateway}
    [proofpipe-prover]=${PROVER_BIN:-$bin_dir/proofpipe-prover}
  )
  for name in "${names[@]}"; do
    [ -x "${bins[$name]}" ] || { echo "scripts/images.sh: ${bins[$name]} is not an executable: build it first (cargo build --release -p $name), or set BIN_DIR or the binary's *_BIN" >&2; exit 1; }
  done
  mkdir -p "$out"
  local work
  work=$(mktemp -d)
  # shellcheck disable=SC2064
  trap "rm -rf '$work'" EXIT
  local started=$SECONDS
  base_rootfs "$work/base"
  layer "$work/base" "$work/base.tar"
  echo "base root filesystem: $(du -sh "$work/base" | cut -f1) in $((SECONDS - started)) s"
  umoci init --layout "$work/oci"
  for name in "${names[@]}"; do
    mkdir -p "$work/app-$name/usr/local/bin"
    install -m 0755 "${bins[$name]}" "$work/app-$name/usr/local/bin/$name"
    layer "$work/app-$name" "$work/app-$name.tar"
    local image="$work/oci:$name"
    umoci new --image "$image"
    umoci raw add-layer --image "$image" --history.created "$created" \
      --history.created_by "scripts/images.sh: Debian ${DEBIAN_SUITE:-bookworm} libc6 libgcc-s1 libstdc++6 ca-certificates tzdata" \
      "$work/base.tar"
    umoci raw add-layer --image "$image" --history.created "$created" \
      --history.created_by "scripts/images.sh: /usr/local/bin/$name" "$work/app-$name.tar"
    local per_image=()
    case $name in
      proofpipe-operator) per_image=(--config.cmd run --config.exposedports 8080/tcp) ;;
      proofpipe-gateway) per_image=() ;;
      # One image for GPU and CPU nodes: a CUDA build links the CUDA runtime statically and
      # proves on the CPU where no driver is mounted. The NVIDIA toolkit mounts the driver's
      # compute libraries only when asked for them.
      proofpipe-prover) per_image=(--config.cmd daemon --config.exposedports 9100/tcp
        --config.env NVIDIA_DRIVER_CAPABILITIES=compute,utility) ;;
    esac
    umoci config --image "$image" --created "$created" --author "proofpipe" \
      --os linux --architecture amd64 \
      --config.user "$uid:$uid" --config.workingdir /home/proofpipe \
      --config.entrypoint "/usr/local/bin/$name" \
      --config.env PATH=/usr/local/bin:/usr/bin --config.env HOME=/home/proofpipe \
      --config.env SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt \
      --config.label "org.opencontainers.image.title=$name" \
      --config.label "org.opencontainers.image.version=$ver" \
      --config.label "org.opencontainers.image.revision=$revision" \
      --config.label "org.opencontainers.image.created=$created" \
      --config.label "org.opencontainers.image.licenses=Apache-2.0" \
      --config.label "org.opencontainers.image.source=https://example.invalid/proofpipe" \
      --config.label "org.opencontainers.image.base.name=debian:${DEBIAN_SUITE:-bookworm}" \
      "${per_image[@]}"
    umoci gc --layout "$work/oci"
    local archive
    archive=$(archive_of "$out" "$name")
    rm -f "$archive"
    skopeo copy --quiet "oci:$image" "oci-archive:$archive:$registry/$name:$ver"
    echo "$archive: $registry/$name:$ver ($(du -h "$archive" | cut -f1))"
  done
  echo "images built in $((SECONDS - started)) s"
}

# Each archive holds what the chart and the operator expect of it (docs/images.md).
check() {
  need skopeo python3
  local out=${1:-target/images}
  for name in "${names[@]}"; do
    skopeo inspect --config "oci-archive:$(archive_of "$out" "$name")" | python3 -c '
import json, sys
name = sys.argv[1]
cfg = json.load(sys.stdin)["config"]
want_cmd = {"proofpipe-operator": ["run"], "proofpipe-prover": ["daemon"]}.get(name)
problems = []
if cfg.get("User") != "65532:65532": problems.append("user %r, not 65532:65532" % cfg.get("User"))
if cfg.get("Entrypoint") != ["/usr/local/bin/" + name]: problems.append("entrypoint %r" % cfg.get("Entrypoint"))
if cfg.get("Cmd") != want_cmd: problems.append("cmd %r, not %r" % (cfg.get("Cmd"), want_cmd))
labels = cfg.get("Labels") or {}
for label in ("title", "version", "revision", "source"):
    if not labels.get("org.opencontainers.image." + label): problems.append("no label " + label)
if problems: sys.exit("%s: %s" % (name, "; ".join(problems)))
print("ok  %s: user %s, entrypoint %s, cmd %s, version %s" % (name, cfg["User"], cfg["Entrypoint"][0], cfg.get("Cmd"), labels["org.opencontainers.image.version"]))
' "$name"
  done
}

unpack() {
  need skopeo umoci bwrap python3
  local out=${1:?usage: scripts/images.sh unpack OUT_DIR BIN_DIR} bin_out=${2:?usage: scripts/images.sh unpack OUT_DIR BIN_DIR}
  local binds="/tmp:$PWD:$HOME${IMAGE_BINDS:+:$IMAGE_BINDS}"
  mkdir -p "$bin_out" "$out/rootfs"
  # The stand-ins run from any working directory.
  out=$(cd "$out" && pwd)
  for name in "${names[@]}"; do
    local archive layout bundle
    archive=$(archive_of "$out" "$name")
    layout=$(mktemp -d)
    bundle="$out/rootfs/$name"
    rm -rf "$bundle"
    skopeo copy --quiet "oci-archive:$archive" "oci:$layout:$name"
    umoci unpack --image "$layout:$name" "$bundle" >/dev/null
    skopeo inspect --config "oci-archive:$archive" > "$bundle/image-config.json"
    rm -rf "$layout"
    python3 - "$bundle" "$binds" > "$bin_out/$name" <<'EOF'
import json, shlex, sys
bundle, binds = sys.argv[1], [b for b in sys.argv[2].split(":") if b]
cfg = json.load(open(bundle + "/image-config.json"))["config"]
uid, gid = cfg["User"].split(":")
entrypoint, cmd = cfg["Entrypoint"], cfg.get("Cmd") or []
q = shlex.quote
print("#!/usr/bin/env bash")
print("# Runs %s as its image holds it (scripts/images.sh unpack wrote this)." % entrypoint[0])
print("set -euo pipefail")
# The image's environment, under the caller's: as a container's env follows the image's.
for kv in cfg.get("Env") or []:
    k, v = kv.split("=", 1)
    print(': "${%s:=%s}"; export %s' % (k, v.replace('"', '\\"'), k))
print("binds=()")
for b in binds:
    print("[ -d %s ] && binds+=(--bind %s %s)" % (q(b), q(b), q(b)))
print('case "$PWD" in %s) ;; *) binds+=(--bind "$PWD" "$PWD") ;; esac' % "|".join(q(b) + "|" + q(b) + "/*" for b in binds))
print("[ $# -gt 0 ] || set -- %s" % " ".join(q(c) for c in cmd))
# bubblewrap stays between this script and the entrypoint and never passes signals on, so
# it ignores SIGTERM/SIGINT (a process group's signal must not kill it before the entrypoint
# shuts down) and this script passes them to the entrypoint itself. --die-with-parent: a
# SIGKILL of this script takes the entrypoint with it, as a container's end does.
print('info=$(mktemp)')
# A background job's stdin is /dev/null unless given: keep the caller's.
print('exec 4<&0')
print("trap '' TERM INT")
print("bwrap --die-with-parent --info-fd 3 --bind %s / --dev /dev --proc /proc --ro-bind /sys /sys \"${binds[@]}\" \\" % q(bundle + "/rootfs"))
print("  --unshare-user --uid %s --gid %s --chdir \"$PWD\" -- %s \"$@\" 3>\"$info\" <&4 4<&- &" % (uid, gid, " ".join(q(e) for e in entrypoint)))
print('sandbox=$!')
print("""forward() {
  local pid
  pid=$(sed -n 's/.*"child-pid": *\\([0-9]*\\).*/\\1/p' "$info")
  if [ -n "$pid" ]; then kill -s "$1" "$pid" 2>/dev/null || true; fi
}
trap 'forward TERM' TERM
trap 'forward INT' INT
while :; do
  rc=0
  wait "$sandbox" || rc=$?
  # A trapped signal ends the wait early; the entrypoint may still be running.
  kill -0 "$sandbox" 2>/dev/null || break
done
rm -f "$info"
exit "$rc"
""", end="")
EOF
    chmod 0755 "$bin_out/$name"
    echo "$bin_out/$name: runs $name from $bundle/rootfs"
  done
}

# The prover image from a CUDA build, and its root filesystem as an xz tar.
cuda_prover() {
  need mmdebstrap umoci skopeo python3 xz
  local bin=${1:?usage: scripts/images.sh cuda-prover BIN [OUT_DIR]} out=${2:-target/images-cuda}
  [ -x "$bin" ] || { echo "scripts/images.sh: $bin is not an executable (scripts/cuda-build.sh writes device-bin/proofpipe-prover)" >&2; exit 1; }
  # A CUDA build names the driver's library it loads; a CPU build does not.
  grep -q 'libcuda\.so\.1' "$bin" || echo "scripts/images.sh: $bin does not name libcuda.so.1: not a CUDA build? Its image proves on the CPU only" >&2
  IMAGES=proofpipe-prover PROVER_BIN=$bin "$0" build "$out"
  IMAGES=proofpipe-prover "$0" check "$out"
  local layout bundle tarball
  layout=$(mktemp -d)
  bundle=$(mktemp -d)
  # shellcheck disable=SC2064
  trap "rm -rf '$layout' '$bundle'" EXIT
  skopeo copy --quiet "oci-archive:$(archive_of "$out" proofpipe-prover)" "oci:$layout:proofpipe-prover"
  umoci unpack --image "$layout:proofpipe-prover" "$bundle/b" >/dev/null
  skopeo inspect --config "oci-archive:$(archive_of "$out" proofpipe-prover)" > "$bundle/b/rootfs/image-config.json"
  tarball="$out/proofpipe-prover-rootfs.tar.xz"
  tar --sort=name --numeric-owner -C "$bundle/b/rootfs" -cf - . | xz -T2 -6 > "$tarball.tmp"
  mv "$tarball.tmp" "$tarball"
  echo "$tarball: the prover image's root filesystem ($(du -sh "$bundle/b/rootfs" | cut -f1) unpacked, $(du -h "$tarball" | cut -f1) compressed)"
}

case ${1:-} in
  build) shift; build "$@" ;;
  cuda-prover) shift; cuda_prover "$@" ;;
  check) shift; check "$@" ;;
  unpack) shift; unpack "$@" ;;
  *) sed -n '2,34p' "$0" >&2; exit 2 ;;
esac
