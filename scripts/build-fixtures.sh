#!/usr/bin/env bash
# Build the real-speech test fixtures (fixtures/*.wav + *.json sidecars, and
# the conversation-quality fixtures in fixtures/quality/) from Debian packages.
# Deterministic and idempotent: running it twice gives byte-identical files.
# Needs: python3 (>= 3.11, stdlib only), sox, espeak-ng, and the Debian
# packages pocketsphinx-testdata, asterisk-core-sounds-en-wav,
# asterisk-core-sounds-en. See fixtures/README.md.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
out="${1:-$root/fixtures}"

need_pkgs=()
[ -f /usr/share/pocketsphinx/test/data/librivox/transcription ] || need_pkgs+=(pocketsphinx-testdata)
[ -f /usr/share/asterisk/sounds/en_US_f_Allison/all-circuits-busy-now.wav ] || need_pkgs+=(asterisk-core-sounds-en-wav)
[ -f /usr/share/doc/asterisk-core-sounds-en/core-sounds-en.txt.gz ] || need_pkgs+=(asterisk-core-sounds-en)
command -v sox >/dev/null 2>&1 || need_pkgs+=(sox)
command -v espeak-ng >/dev/null 2>&1 || need_pkgs+=(espeak-ng)
if [ "${#need_pkgs[@]}" -gt 0 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "build-fixtures: installing ${need_pkgs[*]}" >&2
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${need_pkgs[@]}"
    else
        echo "build-fixtures: missing ${need_pkgs[*]}; install them with:" >&2
        echo "    sudo apt-get install -y ${need_pkgs[*]}" >&2
        exit 1
    fi
fi
command -v python3 >/dev/null 2>&1 || { echo "build-fixtures: python3 (>= 3.11) is required" >&2; exit 1; }

mkdir -p "$out/LICENSES"
# Licence texts, verbatim from the Debian packages.
install -m 0644 /usr/share/doc/pocketsphinx-testdata/copyright "$out/LICENSES/pocketsphinx-testdata.copyright"
install -m 0644 /usr/share/doc/asterisk-core-sounds-en-wav/copyright "$out/LICENSES/asterisk-core-sounds-en.copyright"

python3 "$here/fixtures_truth.py" build "$out"
python3 "$here/fixtures_truth.py" --check "$out"
python3 "$here/quality_fixtures.py" build "$out/quality"
