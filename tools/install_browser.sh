#!/usr/bin/env bash
# Installs Debian's Chromium (and a font) for the website tests when it is missing. No browser is
# downloaded by a test tool: Playwright drives this system browser. `make test` calls this, so a
# fresh machine needs no manual step; without root it uses sudo.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
  exit 0
fi
echo "installing Debian's chromium for the browser tests (apt-get)..."
SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium fonts-dejavu-core >/dev/null
chromium --version
