#!/bin/bash
# usage: ab.sh LABEL BIN  -> runs the latency bench once into /tmp/rf/runs/LABEL
set -e
mkdir -p /tmp/rf/runs
l=$(cut -d' ' -f1 /proc/loadavg)
/tmp/rf/cb latency --sets 20/1,20/20 --item-sizes 1k --publishes 30 --memory-items 0 --fleet-results none --confagent-bin $2 --confpush-bin /tmp/rf/confpush --zkraw-bin /tmp/rf/zkraw --zkfloor-bin /tmp/rf/zkfloor --out /tmp/rf/runs/$1 > /tmp/rf/runs/$1.log 2>&1
echo "$1 load_start=$l load_end=$(cut -d' ' -f1 /proc/loadavg)" >> /tmp/rf/runs/loads.txt
