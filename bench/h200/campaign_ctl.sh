#!/usr/bin/env bash
# Device-side control of bench/h200/mechanisms_campaign.py (one device command each; the campaign runs as a daemon
# between them):
#   campaign_ctl.sh start END_EPOCH WAIT   copy the campaign to /tmp, start it detached (setsid), wait WAIT s, pack
#   campaign_ctl.sh wait SECONDS      wait until it is DONE or SECONDS have passed, then pack
# Packing writes $OUT/camp.tgz (everything so far; logs compressed) and prints the campaign's log tail.
set -u
cmd=$1; arg=$2
camp=/tmp/camp
pack() {
  mkdir -p /tmp/pack && rm -rf /tmp/pack/* && cp -r $camp /tmp/pack/ 2>/dev/null
  find /tmp/pack -name '*.log' -o -name '*.prom' -o -name '*.json' | xargs -r gzip -9 -f 2>/dev/null
  tar czf "$OUT/camp.tgz" -C /tmp/pack camp /tmp/camp.out 2>/dev/null
  ls -la "$OUT"; tail -n 40 /tmp/camp.out; nvidia-smi --query-gpu=memory.used,memory.free --format=csv
}
if [ "$cmd" = start ]; then
  mkdir -p /tmp/camp-code /tmp/camp-repo $camp && cp bench/h200/mechanisms_campaign.py bench/h200/catalog_configs.json /tmp/camp-code/
  cp -r planner /tmp/camp-repo/  # the prefix-caching points run this checkout's load test
  nproc; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
  cd /tmp/camp-code && PYTHONPATH=/tmp/vllm-site setsid nohup python3 mechanisms_campaign.py $camp --end-epoch "$arg" \
    --models "${CAMP_MODELS:-}" --repo /tmp/camp-repo \
    > /tmp/camp.out 2>&1 < /dev/null &
  sleep 5; cat /tmp/camp.out; sleep "$3"
  pack
else
  end=$(( $(date +%s) + arg ))
  while [ ! -f $camp/DONE ] && [ "$(date +%s)" -lt "$end" ]; do sleep 5; done
  pack
fi
