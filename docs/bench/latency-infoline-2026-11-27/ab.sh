#!/bin/sh
# usage: ab.sh TAG CHECKOUT [extra flags]; runs one quick latency run and prints load.
tag=$1; co=$2; shift 2
echo "== $tag $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)"
cd $co/tools && go run ./cmd/confbench latency --sets 20/1,20/20 --item-sizes 1k --memory-items 0 --fleet-results none --out /tmp/infoline/$tag "$@" > /tmp/infoline/$tag.log 2>&1
echo "   rc=$? end $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)"
