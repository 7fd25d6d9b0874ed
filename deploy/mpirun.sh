#!/usr/bin/env bash
# Open MPI examples.
#  One host: nothing to set (the coordinator is 127.0.0.1 on a port from
#  Open MPI's job id, and the token is shared through a private file):
#    mpirun -np 4 build/bin/train_image_classifier --config F
#  Several hosts: Open MPI names no host, so say where rank 0 runs, and give
#  every rank the same token (-x exports a variable to all ranks):
set -euo pipefail
config=${1:?usage: deploy/mpirun.sh CONFIG HOSTFILE [NP]}
hostfile=${2:?usage: deploy/mpirun.sh CONFIG HOSTFILE [NP]}
np=${3:-$(grep -c . "$hostfile")}
first_host=$(awk 'NF { print $1; exit }' "$hostfile")
export MASTER_ADDR=${MASTER_ADDR:-$first_host}
export MASTER_PORT=${MASTER_PORT:-29500}
export FASTNN_JOB_TOKEN=${FASTNN_JOB_TOKEN:-$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')}
exec mpirun -np "$np" --hostfile "$hostfile" -x MASTER_ADDR -x MASTER_PORT -x FASTNN_JOB_TOKEN \
  build/bin/train_image_classifier --config "$config"
