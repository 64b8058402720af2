// What each README step run by readme-tour.test.ts must do, keyed by the command exactly as
// the README writes it: its exit code, and the key facts of its output (stdout and stderr as
// a terminal shows them). Wording others may refine is matched loosely; exit codes, ids,
// counts and values strictly.

export interface StepExpectation {
  /** The exit code, or the codes accepted. */
  code: number | number[];
  /** Each must match the output. */
  output?: RegExp[];
  /** None may match the output. */
  absent?: RegExp[];
  /** A command that runs until Ctrl-C: typed once its output matches this. */
  interruptWhen?: RegExp;
  timeoutMs?: number;
  /** false: the step needs no cluster. */
  needsCluster?: boolean;
}

/** The `##` sections run, by the start of their titles. */
export const README_SECTIONS = ['A five-minute tour', 'Services', 'Training jobs', 'Hyperparameter tuning'];

const INTERRUPTED = [0, 130];

const STEPS: Record<string, StepExpectation> = {
  // ---- A five-minute tour ----
  "npx cairn run --cpus 0.1 --mem 32 -- sh -c 'echo hello'": { code: 0, output: [/cairn run: launched cairn-run-0-[0-9a-f]{6} on \S+/, /^hello$/m] },
  'echo $?          # 0': { code: 0, output: [/^0$/m], needsCluster: false },
  "npx cairn run -- sh -c 'exit 3'; echo $?      # 3: a failing command exits with its code": { code: 0, output: [/exit code 3/, /^3$/m] },
  "npx cairn run --instances 4 --ports 1 -- sh -c 'echo \"task $CAIRN_TASK_INDEX of $CAIRN_TASK_COUNT on port $PORT\"'": {
    code: 0,
    output: [0, 1, 2, 3].map((i) => new RegExp(`^\\[${i}\\] task ${i} of 4 on port \\d+$`, 'm')),
  },
  'npx cairn run --cpus 64 --timeout 5s --file examples/tour/train.sh -- ./train.sh': {
    code: 124,
    output: [/cannot launch cairn-run-0-[0-9a-f]{6}: no agent has 64 cpus; the largest has 2/, /timed out after 5s waiting for offers for 1 of 1 task\(s\), each cpus:64/],
  },
  'ids=$(npx cairn run --detach --instances 2 --file examples/tour/long-job.sh -- ./long-job.sh)': { code: 0, output: [/launched/] },
  'npx cairn attach $ids': { code: 0, output: [/^\[0\] step 3 of 3 \(task 0\)$/m, /^\[1\] step 3 of 3 \(task 1\)$/m, /^\[1\] done$/m] },
  'npx cairn agents            # hosts: reachable, draining or unreachable; resources, what is used': { code: 0, output: [/reachable/, /cpus/i] },
  'npx cairn tasks             # the latest 50 tasks, newest first, with state, exit code and agent': { code: 0, output: [/STATE/, /cairn-run-3-[0-9a-f]{6}/, /FINISHED/, /FAILED/] },
  'npx cairn state             # the whole state as JSON (GET /api/v1/state)': { code: 0, output: [/"agents"/, /"frameworks"/] },
  "npx cairn tasks -o json | jq -r '.[].id'": { code: 0, output: [/^cairn-run-0-[0-9a-f]{6}$/m, /^cairn-run-3-[0-9a-f]{6}$/m] },
  'npx cairn tasks --state failed,killed --agent HOSTNAME --limit 0': { code: 0, output: [/FAILED/], absent: [/FINISHED/] },
  'npx cairn task TASK_ID      # state history with reasons, agent, resources, exit code, usage': { code: 0, output: [/readme-long-0-/, /RUNNING/, /History/] },
  "npx cairn get tasks -o wide # kubectl's words work too: get KIND [NAME], describe KIND NAME": { code: 0, output: [/readme-long-0-[0-9a-f]{6}\s+RUNNING/, /cairn-run:readme-long/] },
  'npx cairn describe node HOSTNAME': { code: 0, output: [/Hostname/, /reachable/i] },
  'source <(npx cairn completion bash)   # or zsh, or fish: Tab completes commands, flags, ids and names': { code: 0, needsCluster: false },
  'npx cairn logs TASK_ID                # stdout': { code: 0, output: [/^step 1 of 600 \(task 0\)$/m] },
  'npx cairn logs TASK_ID --stderr': { code: 0, absent: [/step/] },
  'npx cairn logs TASK_ID --follow       # streamed as it is written, until the task ends': { code: INTERRUPTED, interruptWhen: /step [3-9]\d* of 600/ },
  'npx cairn logs TASK_ID --tail 20 -f   # the last 20 lines, then what comes': { code: INTERRUPTED, interruptWhen: /step \d+ of 600/ },
  "npx cairn logs TASK_ID --timestamps --since 10m   # each line with when it was written, the last 10 minutes'": { code: 0, output: [/\d{2}:\d{2}:\d{2}.*step 1 of 600 \(task 0\)/] },
  'npx cairn kill TASK_ID                # SIGTERM, then SIGKILL after the grace period': { code: 0 },
  'npx cairn teardown FRAMEWORK_ID       # remove a framework and kill its tasks': { code: 0 },

  // ---- Services ----
  'examples/services/pslite-word2vec/build-local-image.sh     # prints sw2v:local': { code: 0, output: [/^sw2v:local$/m], needsCluster: false, timeoutMs: 120_000 },
  [`for f in examples/services/pslite-word2vec/sw2v{scheduler,server,worker}.json; do
  jq '.container.docker.image = "sw2v:local" | .container.docker.forcePullImage = false' "$f" | cairn app deploy - --wait
done`]: { code: 0, output: [/app created: \/sw2vscheduler/, /app created: \/sw2vserver/, /app created: \/sw2vworker/, /deployed/], timeoutMs: 180_000 },
  "TOKEN=$(jq -r '.credentials[0].secret' ~/.cairn-sw2v/credentials.json)   # the admin token cairn up made": { code: 0 },
  'cairn app list                       # each app: instances running of those asked, its deployment': { code: 0, output: [/\/sw2vscheduler\s+1\/1/, /\/sw2vserver\s+1\/1/, /\/sw2vworker\s+4\/4/] },
  'cairn app tasks /sw2vworker          # its tasks: host, ports, state': { code: 0, output: [/(sw2vworker\S*\s[\s\S]*){4}/, /RUNNING/] },
  'cairn app queue                      # instances still waiting, each with why: "needs cpus 0.9; the best agent,': { code: 0, absent: [/sw2v/] },
  'curl -H "Authorization: Bearer $TOKEN" http://127.0.0.1:5050/v2/queue': { code: 0, output: [/^\{"queue":\[\]\}$/m] },
  'dig @127.0.0.1 -p 8053 +short sw2vscheduler.marathon.mesos    # the scheduler\'s host (53 as root)': { code: 0, output: [/^\d+\.\d+\.\d+\.\d+$/m] },
  'dig @127.0.0.1 -p 8053 +short _sw2vserver._tcp.marathon.mesos SRV': { code: 0, output: [/^\d+ \d+ \d+ \S+\.$/m] },

  // ---- Training jobs ----
  [`for f in pslite tfjob pytorchjob volcano-batch; do
  sed "s|/opt/cairn|$PWD|g" examples/jobs/$f.yaml | cairn job submit -    # prints the job's name
done`]: { code: 0, output: [/^pslite-sgd$/m, /^tf-between-graph$/m, /^pytorch-ddp$/m, /^indexed-items$/m] },
  'cairn job list': { code: 0, output: [/pytorch-ddp/, /indexed-items/, /tf-between-graph/] },
  'cairn job wait pytorch-ddp               # prints each change as it waits; exit 0 once it succeeded, non-zero with the reason': { code: 0, output: [/job pytorch-ddp succeeded/i], timeoutMs: 240_000 },
  "cairn job logs pytorch-ddp --all         # every replica's log, each line prefixed": { code: 0, output: [/master-0/, /worker-2/] },
  'cairn job submit --kind pslite --num-servers 2 --num-workers 4 --cpus 0.2 --mem 128 -- /usr/bin/python3 "$PWD/examples/programs/pslite_numpy.py"': { code: 0, output: [/^\S+$/m] },
  'cairn job submit --kind pytorch --replicas 4 --cpus 0.5 --mem 512 --name ddp -- /usr/bin/python3 "$PWD/examples/programs/pytorch_ddp.py" --epochs 5': { code: 0, output: [/^ddp$/m] },
  'cairn job submit --kind tensorflow --replicas 3 --ps 2 --cpus 0.2 --mem 128 -- /usr/bin/python3 "$PWD/examples/programs/tf_config_trainer.py"': { code: 0, output: [/^\S+$/m] },
  'cairn job submit --kind batch --replicas 4 --cpus 0.2 --mem 128 -- /usr/bin/python3 "$PWD/examples/programs/indexed_batch.py"': { code: 0, output: [/^\S+$/m] },

  // ---- Hyperparameter tuning ----
  'cd examples/tuning': { code: 0, needsCluster: false },
  [`cairn tune submit --app-name digits \\
  --files digits_mlp.py \\
  --app-runner-launch-cmd '/usr/bin/python3 digits_mlp.py --epochs 2 --learning-rate \${learning_rate} --momentum \${momentum} --batch-size \${batch_size}' \\
  --app-runner-memory 512M --app-runner-cpus 1 --app-core-memory 1G --app-core-cpus 2 \\
  --trail-steps 30 --tuning-type bayesian --tuning-parameters demo-parameters.json \\
  --metric accuracy --goal 0.95 --parallelism 2 --wait`]: { code: 0, output: [/ignored spec\.appCore/, /^digits$/m, /trial 0 \w+ accuracy=0\.\d+/, /experiment digits Succeeded/, /best: trial \d+ Succeeded accuracy=0\.9[5-9]\d*/], timeoutMs: 300_000 },
  'cairn tune show digits        # the trials as a table, and the metric over trials as a chart': { code: 0, output: [/digits/, /accuracy/] },
  'cairn tune best digits -o json': { code: 0, output: [/"accuracy"/] },
  "cairn tune logs digits 0      # a trial's log (-f follows it, --stderr)": { code: 0, output: [/accuracy=0\.\d+/] },
  'cairn tune list; cairn tune stop digits; cairn tune resume digits --max-trials 60; cairn tune delete digits': { code: 0, output: [/digits/] },
};

export function stepExpectation(command: string): StepExpectation | undefined {
  return STEPS[command];
}
