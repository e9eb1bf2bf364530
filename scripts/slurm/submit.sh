#!/usr/bin/env bash
# Runs an `orrery sweep` as a Slurm job array of SHARDS tasks, then merges it:
#   scripts/slurm/submit.sh SCENARIO OUT SHARDS [orrery sweep flags...]
# Results land in OUT/merged once the merge job has run (squeue shows it waiting).
set -euo pipefail
if [ $# -lt 3 ]; then
  echo "usage: $0 SCENARIO OUT SHARDS [orrery sweep flags...]" >&2
  exit 2
fi
scenario=$1 out=$2 shards=$3
shift 3
case $shards in '' | *[!0-9]* | 0) echo "SHARDS: a whole number from 1" >&2; exit 2 ;; esac
here=$(cd "$(dirname "$0")" && pwd)
array=$(sbatch --parsable --array="0-$((shards - 1))" "$here/sweep-shard.sbatch" "$scenario" "$out" "$@")
merge=$(sbatch --parsable --dependency="afterok:${array%%;*}" "$here/merge.sbatch" "$out")
echo "array job $array ($shards shards), merge job $merge: results in $out/merged"
