#!/bin/sh
# A stand-in for a training script: reports a falling loss for a few epochs, as name=value
# lines (the form Cairn's tuning reads). Shipped with the task:
# cairn run --file examples/tour/train.sh -- ./train.sh [EPOCHS]
epochs=${1:-3}
e=1
while [ "$e" -le "$epochs" ]; do
  echo "epoch=$e loss=$(awk "BEGIN { print 1 / ($e + 1) }")"
  e=$((e + 1))
done
