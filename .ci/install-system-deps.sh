#!/usr/bin/env bash
# The system programs some tests drive for real: Debian's headless Chromium (the HTML report,
# tests/test_report_chromium.py) and PostgreSQL (shared tuning studies, tests/test_autotuner_postgres.py).
# Installs what is missing through apt-get when run as root; elsewhere prints one line and those tests skip.
# Quiet and quick when everything is already there.
set -euo pipefail

missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium fonts-liberation)
compgen -G '/usr/lib/postgresql/*/bin/pg_ctl' >/dev/null || missing+=(postgresql)
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "system-deps: not installing ${missing[*]} (needs root and apt-get); their tests skip"
    exit 0
fi
echo "system-deps: apt-get install ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
log=$(mktemp)
if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >"$log" 2>&1; then
    tail -n 20 "$log"
    echo "system-deps: apt-get install ${missing[*]} failed (above); their tests skip"
fi
rm -f "$log"
