#!/bin/sh
# Runs when the buyer arrives; what it prints is the stream. Exit non-zero to abort the
# stream (the buyer then sees a truncated transfer, never a short clean one).
echo "sku,warehouse,quantity,updated"
i=1
while [ "$i" -le 1000 ]; do
  echo "SKU-$i,ams-1,$((i * 7 % 500)),$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  i=$((i + 1))
done
