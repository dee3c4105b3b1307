#!/bin/bash
# run.sh TAG MODE AGENT_BIN [extra confbench flags]: one quick latency run with MODE attached (none|stat|strace|perf).
tag=$1; mode=$2; export AGENT_BIN=$3; shift 3; export TAG=$tag
d=/tmp/agentfive/runs; rm -f $d/$tag.*
echo "== $tag $mode $(basename $AGENT_BIN) $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)"
[ $mode != none ] && { /tmp/agentfive/attach.sh $tag $mode & }
cd /work/wt/agentfive/tools && go run ./cmd/confbench latency --sets ${SETS:-20/1} --item-sizes 1k --memory-items 0 --fleet-results none \
  --confagent-bin /tmp/agentfive/agent-wrap.sh --zkraw-bin /tmp/agentfive/raw-wrap.sh --zkfloor-bin /tmp/agentfive/zkfloor --confpush-bin /tmp/agentfive/confpush \
  --out $d/$tag.out "$@" > $d/$tag.log 2>&1
echo "   rc=$? end $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)"
wait
grep -i 'cpu' $d/$tag.out/latency-results.md | head -5
