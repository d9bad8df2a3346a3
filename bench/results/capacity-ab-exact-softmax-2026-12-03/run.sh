#!/usr/bin/env bash
# A/B capacity ramp with the models: build a (main before the softmax) vs b (with it).
set -u
cd /work/wt/qsm
out=/work/brief/capab
port=18941
one() { # build k
  local b="$1" k="$2" name="$1-models-run$2"
  setsid taskset -c 0 /work/ab/$b/brisvox serve --agent $out/agent-models.toml --bind 127.0.0.1:$port > $out/$name.server.log 2>&1 &
  local pid=$!
  for i in $(seq 1 120); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.5; done
  echo "capab: $name: load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%H:%M:%S)" >&2
  timeout --kill-after=10 600 taskset -c 1 /work/ab/b/brisvox-bench capacity --url ws://127.0.0.1:$port/call \
    --server-pid $pid --fixture fixtures/librivox_0870.wav --steps 1,2,4,8,16,32,64,128,256,512 --resolution 8 \
    --max-run-s 300 --client-workers 1 --metrics-url http://127.0.0.1:$port/metrics \
    --label "brisvox serve ($b: /work/ab/$b) --agent agent-models.toml (bench/agents/mock-models.toml + max_calls = 4096), taskset -c 0, release" \
    --out $out/$name
  kill $pid; wait $pid 2>/dev/null
  tail -n 40 $out/$name.server.log > $out/$name.server.log.tmp && mv $out/$name.server.log.tmp $out/$name.server.log
  sleep 2
}
one a 1; one b 1; one b 2; one a 2
echo capab-done >&2
