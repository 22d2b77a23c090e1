#!/usr/bin/env bash
# Registry benchmark: requests and wall time to list a 90-addon registry and to load one addon
# from every kind of source (GitHub, Gitee and GitLab fakes, a Helm repository, moto, s3s-fs,
# lighttpd + git http-backend, sshd serving git-upload-pack, Debian's docker-registry as an OCI
# registry (through the catalog chart, through /v2/_catalog, and with cosign verification), a local
# directory), cold and over the
# disk cache. Installs the stand-ins it needs (as scripts/test.sh does); the benchmark starts them
# on 127.0.0.1 and stops them by PID when it ends. ADDONCTL_BENCH_RUNS sets how many runs each median is taken over;
# ADDONCTL_BENCH_SOURCES=oci,helm keeps the sources whose names contain one of the words.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/sources/moto.sh install
bash scripts/sources/s3s-fs.sh install
bash scripts/sources/sshd-git.sh install
bash scripts/sources/oci-registry.sh install
bash scripts/sources/helm.sh >/dev/null
if ! command -v lighttpd >/dev/null 2>&1 && [ ! -x /usr/sbin/lighttpd ]; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q lighttpd >/dev/null \
    || { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q lighttpd >/dev/null; }
fi
cargo bench --bench sources "$@"
