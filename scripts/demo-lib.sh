# Sourced by scripts/demo.sh and scripts/demo-confd.sh: a temporary
# directory OUT removed at exit (with the last lines of every OUT/*.log on
# failure), the processes started (pids) stopped, bold headings (step) only
# on a terminal and never with NO_COLOR set, and a throw-away ZooKeeper
# (start_zookeeper sets ZK).
BIN=${BIN:-bin}
DEMO_NAME=${DEMO_NAME:-demo}
OUT=$(mktemp -d "${TMPDIR:-/tmp}/zkconf-$DEMO_NAME.XXXXXX")
pids=()
cleanup() {
  local rc=$?
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  if [ $rc -ne 0 ]; then
    for f in "$OUT"/*.log; do [ -f "$f" ] && { echo "--- $f (last lines)" >&2; tail -n 15 "$f" >&2; }; done
    echo "$DEMO_NAME failed (exit $rc)" >&2
  fi
  rm -rf "$OUT"
  exit $rc
}
trap cleanup EXIT INT TERM

if [ -t 1 ] && [ -z "${NO_COLOR:-}" ]; then
  step() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }
else
  step() { printf '\n==> %s\n' "$*"; }
fi

start_zookeeper() {
  step "Starting a throw-away ZooKeeper"
  "$BIN/zkdev" > "$OUT/zk.addr" 2> "$OUT/zk.log" &
  pids+=($!)
  for _ in $(seq 1 600); do [ -s "$OUT/zk.addr" ] && break; sleep 0.1; done
  ZK=$(head -n1 "$OUT/zk.addr")
  [ -n "$ZK" ] || { cat "$OUT/zk.log" >&2; exit 1; }
  echo "ZooKeeper at $ZK"
}
