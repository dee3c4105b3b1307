#!/bin/bash
# alt.sh OUT ROUNDS ITER bin1 bin2 ...: alternate the benchmark binaries
out=$1; rounds=$2; iter=$3; shift 3
cd /work/wt/multifour/publish
for r in $(seq $rounds); do for b in "$@"; do
  l=$(uptime | sed 's/.*average: //' | cut -d, -f1)
  echo -n "$b load=$l " >> $out
  /tmp/mf/$b.test -test.run '^$' -test.bench 'PublishCost100x4KiB' -test.benchtime ${iter}x -test.benchmem 2>&1 | grep Bench | awk '{for(i=5;i<=NF;i+=2) printf "%s=%s ", $(i+1), $i; print ""}' >> $out
done; done
