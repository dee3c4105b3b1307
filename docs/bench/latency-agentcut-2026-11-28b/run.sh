#!/bin/bash
# run.sh TAG MODE AGENT_BIN [extra confbench flags]
tag=$1; mode=$2; export AGENT_BIN=$3; shift 3; export TAG=$tag
d=/bx-agentcut/runs; rm -rf $d/$tag.*
echo "== $tag $mode $(basename $(dirname $AGENT_BIN)) $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)"
[ $mode != none ] && { RUNS=$d /bx-agentcut/attach.sh $tag $mode & }  # attach.sh: ../latency-agentsix-2026-11-27b/attach.sh
TMPDIR=${TD:-/bx-agentcut} /bx-agentcut/bin-main/confbench latency --sets ${SETS:-20/20} --item-sizes 1k --memory-items 0 --fleet-results none --independent none --publishes ${PUB:-30} --keep \
  --confagent-bin /bx-agentcut/agent-wrap.sh --zkraw-bin /bx-agentcut/raw-wrap.sh --zkfloor-bin /bx-agentcut/bin-main/zkfloor --confpush-bin /bx-agentcut/bin-main/confpush \
  --out $d/$tag.out "$@" > $d/$tag.log 2>&1
echo "   rc=$? end $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)"
wait
grep -A5 '^| set | agent CPU' $d/$tag.out/latency-results.md | tail -n +3
