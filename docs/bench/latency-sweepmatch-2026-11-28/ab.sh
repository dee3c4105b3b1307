#!/bin/bash
# alternated A/B: main's confagent vs sweepmatch's; runs kept (no frees between runs)
cd /work/main/tools
for r in 1 2 3; do
 for v in sweep main; do
  out=/tmp/ab-sweep/$v-$r
  echo "$(date +%T) run $v $r load $(cut -d' ' -f1 /proc/loadavg)"
  TMPDIR=/bx-lead /tmp/confbench latency --keep --sets 100/100,20/20,20/1 --item-sizes 1k --memory-items 0 --fleet-results none --independent none --confagent-bin /tmp/ca-$v --confpush-bin /tmp/cp-main --zkraw-bin /tmp/zkraw --zkfloor-bin /tmp/zkfloor --out $out > $out.log 2>&1 || echo FAIL $v $r
 done
done
echo done
