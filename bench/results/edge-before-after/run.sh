#!/bin/bash
# usage: m-run.sh <kind> <tree> <n>
set -u
kind=$1; tree=$2; n=$3
bin=/work/wt/m-bin/$tree; wt=/work/wt/m-$tree; out=/work/wt/m-out
tag=$kind-$tree-$n
{ echo "start $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)"; } > $out/$tag.meta
case $kind in
  v2v) cd $wt && $bin/brisvox-bench v2v --sim --agent bench/agents/mock-models.toml --fixture fixtures/librivox_0870.wav --fixture fixtures/en_pause_in_sentence.wav --fixture fixtures/phone_pls_hold_while_try_8k.wav --runs 6 --label "in-process brisvox server, agent mock-models (Silero + Smart Turn), edge $tree run $n" --out $out/$tag > $out/$tag.stdout 2> $out/$tag.stderr ;;
  hot) cd $wt/crates/brisvox-engine && $bin/engine-lib hot_path --nocapture --test-threads 1 > $out/$tag.stdout 2> $out/$tag.stderr ;;
  mem) cd $wt/crates/brisvox-engine && CI=1 $bin/memory_per_call --nocapture --test-threads 1 > $out/$tag.stdout 2> $out/$tag.stderr ;;
esac
rc=$?
echo "end $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg) rc $rc" >> $out/$tag.meta
cat $out/$tag.meta
