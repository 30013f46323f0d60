#!/usr/bin/env bash
# tools.sh installs the clients that the integration tests drive and that Go
# does not bring: kcat (librdkafka), kafka-python (Debian's python3-kafka, with
# its compression codecs), kafkajs (npm, into integration/clients/node) and
# PostgreSQL (Debian's postgresql, whose servers internal/pgtest starts) and
# Chromium (Debian's chromium, which the retail dashboard test drives through
# chromedp).
#
# It is idempotent and quick when everything is present: it looks first and runs
# `apt-get update` (once) or `npm ci` only for what is missing. It needs no TTY;
# it runs as root, or through sudo when it is not root.
set -euo pipefail

cd "$(dirname "$0")/.."

PY=/usr/bin/python3 # Debian's python: python3-kafka installs for it, not for a pyenv python
NODE_DIR=integration/clients/node

sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then
	sudo_cmd=(sudo -n)
fi

missing=()
command -v kcat >/dev/null 2>&1 || missing+=(kcat)
[[ -x $PY ]] || missing+=(python3)
# kafka-python imports its codecs lazily; check each one the tests use.
for mod_pkg in kafka:python3-kafka snappy:python3-snappy lz4:python3-lz4 zstandard:python3-zstandard; do
	mod=${mod_pkg%%:*} pkg=${mod_pkg#*:}
	[[ -x $PY ]] && "$PY" -c "import $mod" >/dev/null 2>&1 || missing+=("$pkg")
done
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
# internal/pgtest looks where this does: PATH, then Debian's versioned
# directories (which are not in PATH).
initdb_path() {
	command -v initdb 2>/dev/null || ls -1d /usr/lib/postgresql/*/bin/initdb 2>/dev/null | sort -V | tail -n 1
}
[[ -n $(initdb_path) ]] || missing+=(postgresql)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)

if ((${#missing[@]})); then
	echo "tools: installing Debian packages: ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	"${sudo_cmd[@]}" apt-get update -qq
	"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# npm ci writes node_modules/.package-lock.json; when it is newer than the
# committed lock file, the installed modules match it.
stamp=$NODE_DIR/node_modules/.package-lock.json
if [[ ! -f $stamp || $NODE_DIR/package-lock.json -nt $stamp || $NODE_DIR/package.json -nt $stamp ]]; then
	echo "tools: npm ci in $NODE_DIR"
	# --ignore-scripts: nothing here needs a native build (lz4 falls back to
	# its JavaScript implementation), and native builds would need headers
	# from outside the registries this project reaches.
	(cd "$NODE_DIR" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
	touch "$stamp"
fi

echo "tools: kcat $(kcat -V 2>&1 | sed -n 's/^Version \([^ ]*\).*librdkafka \([^ ]*\) .*/\1 (librdkafka \2)/p')," \
	"kafka-python $("$PY" -c 'import kafka; print(kafka.__version__)')," \
	"node $(node --version), kafkajs $(node -p "require('./$NODE_DIR/node_modules/kafkajs/package.json').version")," \
	"postgresql $("$(initdb_path)" --version | awk '{print $3}')," \
	"$(chromium --version 2>/dev/null | head -n 1)"
