#!/bin/sh
# A stand-in for a long job: STEPS steps (default 3) of a second each, one line a step.
# Shipped with the task: cairn run --file examples/tour/long-job.sh -- ./long-job.sh [STEPS]
steps=${1:-3}
i=1
while [ "$i" -le "$steps" ]; do
  echo "step $i of $steps (task ${CAIRN_TASK_INDEX:-0})"
  sleep 1
  i=$((i + 1))
done
echo done
