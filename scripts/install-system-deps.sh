#!/usr/bin/env bash
# System (Debian) packages the test suite needs beyond pip; called by .ci/run before
# `make test`. Idempotent: installs only the packages that are missing (nothing to do, no
# apt-get at all). As root, or through sudo. `--check`: only report what is missing (exit 1).
set -euo pipefail

packages=(
  # the web page's browser tests (tests/browser): headless Chromium and its WebDriver
  # (/usr/bin/chromium, /usr/bin/chromedriver; Selenium drives them, nothing is downloaded)
  chromium
  chromium-driver
  # the job tests (tests/api/jobs): a throw-away PostgreSQL server (initdb / pg_ctl from
  # /usr/lib/postgresql/<version>/bin, run as the package's postgres user when root)
  postgresql
)

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "install-system-deps: all present (${packages[*]})"
  exit 0
fi
if [ "${1:-}" = "--check" ]; then  # `make test`: say what is missing, install nothing
  echo "install-system-deps: missing Debian packages: ${missing[*]}; tests that need them" \
    "will fail. Install them with: sudo scripts/install-system-deps.sh" >&2
  exit 1
fi
if ! command -v apt-get >/dev/null; then
  echo "install-system-deps: no apt-get here; install ${missing[*]} with your package manager" >&2
  exit 1
fi
sudo=()
if [ "$(id -u)" -ne 0 ]; then
  sudo=(sudo)
fi
echo "install-system-deps: installing ${missing[*]}"
"${sudo[@]}" apt-get update -q
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -q "${missing[@]}"
