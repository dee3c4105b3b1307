#!/bin/bash
# run.sh TAG MODE AGENT_BIN [extra confbench flags]
tag=$1; mode=$2; export AGENT_BIN=$3; shift 3; export TAG=$tag
d=/tmp/as/runs; rm -rf $d/$tag.*
echo "== $tag $mode $(basename $AGENT_BIN) $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)"
[ $mode != none ] && { /tmp/as/attach.sh $tag $mode & }
/tmp/as/bin/confbench latency --sets ${SETS:-20/1} --item-sizes 1k --memory-items 0 --fleet-results none \
  --confagent-bin /tmp/as/agent-wrap.sh --zkraw-bin /tmp/as/raw-wrap.sh --zkfloor-bin /tmp/as/bin/zkfloor --confpush-bin /tmp/as/bin/confpush \
  --out $d/$tag.out "$@" > $d/$tag.log 2>&1
echo "   rc=$? end $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)"
wait
grep -A5 '^| set | agent CPU' $d/$tag.out/latency-results.md | tail -n +3
