#!/usr/bin/env bash
# make demo: the whole zkconf loop on a throw-away local ZooKeeper.
#
#  1. start a standalone ZooKeeper on a free loopback port (internal/cmd/zkdev)
#  2. protect the root with `confpush init`: a publisher identity and one
#     identity per agent (digest credentials in owner-only files)
#  3. publish examples/quickstart/config as generation 1
#  4. start two agents (web-1, web-2) rendering into a temporary directory
#  5. publish examples/quickstart/config-v2 as a canary to zone=a (web-1)
#     with --auto --bake: web-1 applies the candidate while web-2 keeps
#     generation 1, the bake passes, the candidate is promoted, and both
#     apply it
#  6. show the rendered files and `confpush status`
#  7. stop everything and remove the temporary files
#
# Headings are bold only on a terminal, and never with NO_COLOR set.
set -euo pipefail
cd "$(dirname "$0")/.."

DEMO_NAME=demo
# shellcheck source=scripts/demo-lib.sh
. scripts/demo-lib.sh
start_zookeeper
export CONFPUSH_ZK="$ZK" CONFPUSH_ROOT=/config/checkout

step "Protecting the root: confpush init (publisher, web-1 and web-2 identities)"
# One identity per agent (its user is its agent_id) and one for the
# publisher, in owner-only files: nobody else may change the root or
# forge an agent's status. Without init, publish warns that the root is
# open to anyone who can reach ZooKeeper.
for u in publisher web-1 web-2; do
  (umask 077; printf '%s:%s\n' "$u" "$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')" > "$OUT/$u.auth")
done
export CONFPUSH_AUTH_FILE="$OUT/publisher.auth"
"$BIN/confpush" init /config/checkout --agent-auth-file "$OUT/web-1.auth" --agent-auth-file "$OUT/web-2.auth"

step "Publishing examples/quickstart/config (generation 1)"
"$BIN/confpush" publish examples/quickstart/config

step "Starting two agents: web-1 (zone=a) and web-2 (zone=b)"
for id in web-1 web-2; do
  zone=a; [ "$id" = web-2 ] && zone=b
  mkdir -p "$OUT/$id"
  sed -e "s#@ZK@#$ZK#" -e "s#@OUT@#$OUT#g" -e "s#@ID@#$id#g" -e "s#@ZONE@#$zone#" -e "s#@AUTH@#$OUT/$id.auth#" \
      -e "s#@EXAMPLES@#$PWD/examples/quickstart#" \
      examples/quickstart/agent/agent.yaml.in > "$OUT/$id.yaml"
  "$BIN/confagent" --config "$OUT/$id.yaml" 2> "$OUT/$id.log" &
  pids+=($!)
done
# Wait (through the agents' status nodes) until both run generation 1.
"$BIN/confpush" status --wait-generation 1 --min 2 --timeout 20s > /dev/null
"$BIN/confpush" status

step "What web-1 rendered"
ls -la "$OUT/web-1/etc/checkout/"
cat "$OUT/web-1/summary.txt"

step "The change: a third upstream and the new_cart flag"
"$BIN/confpush" diff examples/quickstart/config-v2 || true

step "Publishing it as a canary to zone=a: promoted once web-1 has run it healthy for 3s"
"$BIN/confpush" publish --canary zone=a --auto --bake 3s -m "third upstream, canary first" examples/quickstart/config-v2
# The promote is generation 3 (2 was the candidate): wait until both run it.
"$BIN/confpush" status --wait-generation 3 --min 2 --timeout 30s > /dev/null

step "What web-2 rendered now"
cat "$OUT/web-2/summary.txt"
grep -c 'server 10\.' "$OUT/web-2/etc/checkout/nginx.conf" | sed 's/^/nginx upstream servers: /'

step "confpush status"
"$BIN/confpush" status

step "History"
"$BIN/confpush" history

step "Done: stopping the agents and ZooKeeper"
