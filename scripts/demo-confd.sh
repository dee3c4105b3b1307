#!/usr/bin/env bash
# make demo-confd: a confd fleet migrated to zkconf, end to end, on a
# throw-away local ZooKeeper (docs/migrating-from-confd.md walks the same
# steps on a real fleet).
#
#  1. start a standalone ZooKeeper on a free loopback port (internal/cmd/zkdev)
#  2. the confd era: examples/confd-migration/keys written as a key tree
#     under /myapp with raw ZooKeeper calls (internal/cmd/zkkeys stands in
#     for confd's tooling and for confd's ZooKeeper backend, which cannot be
#     installed here)
#  3. confpush import --from-tree /myapp: a dry run, then the import in
#     place; what confd reads is unchanged
#  4. confpush init --world-readable: the publisher and the agents get
#     identities, and confd (which cannot authenticate) still reads
#  5. two hosts move to confagent: web-1 (zone=a) reads the confd
#     directory as it is (confd_dir), web-2 (zone=b) runs the targets
#     'confagent import-confd' converted; both render byte for byte what
#     confd renders (examples/confd-migration/want)
#  6. a change (the set exported by the import, edited) published as a
#     canary to zone=a, promoted after 3 s healthy; confd reads it too;
#     both hosts render examples/confd-migration/want-v2
#  7. confpush status and history; everything stopped and removed
#
# Headings are bold only on a terminal, and never with NO_COLOR set.
set -euo pipefail
cd "$(dirname "$0")/.."

DEMO_NAME=demo-confd
# shellcheck source=scripts/demo-lib.sh
. scripts/demo-lib.sh
EX=examples/confd-migration
start_zookeeper
export CONFPUSH_ZK="$ZK" CONFPUSH_ROOT=/myapp

step "The confd era: the key tree under /myapp, written with raw ZooKeeper calls"
"$BIN/zkkeys" --zk "$ZK" load /myapp "$EX/keys"
echo "What confd's ZooKeeper backend reads (zkkeys dump: Children, then Get of each leaf):"
"$BIN/zkkeys" --zk "$ZK" dump /myapp | tee "$OUT/confd-before.txt"

step "Import, dry run: what would be taken (and the set as files, for version control)"
"$BIN/confpush" import --from-tree /myapp --dry-run --out-dir "$OUT/myapp-set" --allow-open

step "Import in place: the manifest goes into /myapp's own data, no key is rewritten"
"$BIN/confpush" import --from-tree /myapp -m "imported from confd" --allow-open
"$BIN/zkkeys" --zk "$ZK" dump /myapp > "$OUT/confd-after.txt"
diff -u "$OUT/confd-before.txt" "$OUT/confd-after.txt"
echo "confd reads exactly the same keys and values after the import"

step "Protecting the root: confpush init --world-readable (confd cannot authenticate)"
for u in publisher web-1 web-2; do
  (umask 077; printf '%s:%s\n' "$u" "$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')" > "$OUT/$u.auth")
done
export CONFPUSH_AUTH_FILE="$OUT/publisher.auth"
"$BIN/confpush" init /myapp --world-readable --agent-auth-file "$OUT/web-1.auth" --agent-auth-file "$OUT/web-2.auth"
"$BIN/zkkeys" --zk "$ZK" dump /myapp > /dev/null && echo "confd, with no credentials, still reads every key"

step "Converting the template resources: confagent import-confd"
for id in web-1 web-2; do
  mkdir -p "$OUT/$id/out"
  cp -r "$EX/confd" "$OUT/$id/confd"
  sed -i "s#@OUT@#$OUT/$id/out#g" "$OUT/$id/confd/conf.d/"*.toml
  zone=a; [ "$id" = web-2 ] && zone=b
  sed -e "s#@ZK@#$ZK#" -e "s#@OUT@#$OUT#g" -e "s#@ID@#$id#g" -e "s#@ZONE@#$zone#" -e "s#@AUTH@#$OUT/$id.auth#" \
      "$EX/agent.yaml.in" > "$OUT/$id.yaml"
done
# web-1 reads the confd directory as it is; web-2 runs the converted targets.
printf 'root: /myapp\nconfd_dir: %s\n' "$OUT/web-1/confd" >> "$OUT/web-1.yaml"
"$BIN/confagent" import-confd "$OUT/web-2/confd" --root /myapp | tee -a "$OUT/web-2.yaml"
for id in web-1 web-2; do "$BIN/confagent" --config "$OUT/$id.yaml" check-config; done

step "Moving two hosts to confagent: web-1 (zone=a) and web-2 (zone=b)"
for id in web-1 web-2; do
  "$BIN/confagent" --config "$OUT/$id.yaml" 2> "$OUT/$id.log" &
  pids+=($!)
done
"$BIN/confpush" status --wait-generation 1 --min 2 --timeout 30s > /dev/null
"$BIN/confpush" status

step "Comparing with what confd renders from the same keys ($EX/want)"
for id in web-1 web-2; do
  for f in nginx.conf app.properties; do cmp "$OUT/$id/out/$f" "$EX/want/$f"; done
  echo "$id: nginx.conf and app.properties identical to confd's"
done
cat "$OUT/web-1/out/nginx.conf"

step "A change, from the set the import exported: 4 workers, a third upstream, a pool size"
printf 4 > "$OUT/myapp-set/app/workers"
printf 10.0.1.13:8080 > "$OUT/myapp-set/upstreams/app3"
printf 20 > "$OUT/myapp-set/database/pool"
"$BIN/confpush" diff "$OUT/myapp-set" || true

step "Publishing it as a canary to zone=a: promoted once web-1 has run it healthy for 3s"
"$BIN/confpush" publish --canary zone=a --auto --bake 3s -m "4 workers, app3, pool 20" "$OUT/myapp-set"
"$BIN/confpush" status --wait-generation 3 --min 2 --timeout 30s > /dev/null

step "confd hosts read the change too (the keys at their paths)"
"$BIN/zkkeys" --zk "$ZK" dump /myapp | grep -E 'workers|app3|pool'

step "Comparing with what confd renders after the change ($EX/want-v2)"
for id in web-1 web-2; do
  for f in nginx.conf app.properties; do cmp "$OUT/$id/out/$f" "$EX/want-v2/$f"; done
  echo "$id: identical to confd's"
done

step "confpush status"
"$BIN/confpush" status

step "History"
"$BIN/confpush" history

step "Done: retiring confd is removing it from the last host; stopping the agents and ZooKeeper"
