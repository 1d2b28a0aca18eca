#!/bin/bash
# sweep-submit.sh [LIST] [pipebench run flags...]: submits sweep.sbatch as a job array with one task per
# line of LIST (default: sweep.list next to this script), and merge.sbatch to merge the tasks' files
# once all of them completed (--dependency=afterok). Prints the two job ids: ARRAY MERGE.
# Run it from the directory the results should go to. Extra sbatch options: SBATCH_* environment
# variables (e.g. SBATCH_PARTITION, SBATCH_ACCOUNT), which sbatch reads itself.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LIST=$HERE/sweep.list
if [[ $# -gt 0 && -f $1 ]]; then LIST=$(cd "$(dirname "$1")" && pwd)/$(basename "$1"); shift; fi
n=$(grep -cvE '^[[:space:]]*(#|$)' "$LIST" || true)
if ((n == 0)); then echo "sweep-submit.sh: $LIST has no task lines" >&2; exit 2; fi
command -v sbatch >/dev/null || { echo "sweep-submit.sh: sbatch not found: run it on a Slurm login node" >&2; exit 2; }
export PIPEBENCH_SWEEP_LIST=$LIST PIPEBENCH_RUN_SBATCH=$HERE/run.sbatch PIPEBENCH_SWEEP_TASKS=$n
array=$(sbatch --parsable --array=0-$((n - 1)) "$HERE/sweep.sbatch" "$@")
array=${array%%;*}
merge=$(sbatch --parsable --dependency=afterok:"$array" --kill-on-invalid-dep=yes "$HERE/merge.sbatch" "$array")
echo "$array ${merge%%;*}"
