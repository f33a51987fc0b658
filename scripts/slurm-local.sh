#!/usr/bin/env bash
# A one-node SLURM cluster on this machine, for trying the workflow on a real scheduler (docs/testing.md).
#
#   eval "$(scripts/slurm-local.sh start [DIR] [--gpu-site])"   # prints `export PATH=DIR/bin:$PATH`
#   scripts/slurm-local.sh stop [DIR]
#
# Run as root. `start` installs Debian's slurm-wlm and munge with apt-get when missing, writes DIR/slurm.conf for
# this machine (CPUs and memory from `slurmd -C`, no accounting, MinJobAge 2 h so `squeue` still shows
# finished jobs), starts munged, slurmctld and slurmd with their sockets, state, logs and pid files in DIR
# (default /tmp/slurm-local), and waits until `sinfo` shows the node idle. Nothing is written to /etc/slurm:
# SLURM's commands reach this cluster through DIR/bin, where each (sbatch, srun, squeue, scontrol, ...) runs
# the installed one with SLURM_CONF=DIR/slurm.conf. An environment variable alone would not do: the SLURM
# jobstep executor drops SLURM_* variables before its `srun` inside a job. Without DIR/bin on PATH the
# commands find no configuration and fail at once instead of waiting 10 s for a controller that is gone
# (every Snakemake start runs `scontrol show config`). `stop` cancels the jobs and ends the daemons
# `start` recorded in DIR/pids; a failed `start` stops what it had started.
#
# --gpu-site: the node is declared as a GPU node of the paper's cluster instead of measured: 64 CPUs,
# 512,000 MB and four GPUs as GRES (gpu:h100:4, no devices behind them), in partitions `cpu` (the default)
# and `gpu`, as workflow/profiles/slurm asks for (SlurmdParameters=config_overrides: slurmd takes the
# declared size for the node's own). The controller accepts or refuses a request as such a site would,
# `sbatch --test-only` included (tests/test_slurm_submit.py); the jobs it runs share this machine's CPUs
# and memory, and a job given a GPU has none.
set -Eeuo pipefail

cmd=${1:-}
shift || true
dir=${SLURM_LOCAL_DIR:-/tmp/slurm-local}
gpu_site=false
for arg in "$@"; do
  case $arg in
    --gpu-site) gpu_site=true ;;
    -*) echo "slurm-local: unknown option $arg" >&2; exit 2 ;;
    *) dir=$arg ;;
  esac
done
conf=$dir/slurm.conf

log() { echo "slurm-local: $*" >&2; }

stop() {
  [[ -f $dir/pids ]] || { log "nothing recorded in $dir/pids"; return 0; }
  if [[ -f $conf ]] && command -v scancel >/dev/null; then
    SLURM_CONF=$conf timeout 10 scancel --full --signal=KILL --user="$(id -un)" 2>/dev/null || true
    for _ in $(seq 20); do  # the jobs' slurmstepd end with their jobs
      [[ -z $(SLURM_CONF=$conf timeout 5 squeue -h -t running,completing 2>/dev/null) ]] && break
      sleep 0.5
    done
  fi
  local pids
  pids=$(tac "$dir/pids")  # slurmd, slurmctld, then munged
  for pid in $pids; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in $pids; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -KILL "$pid" 2>/dev/null || true
  done
  rm -f "$dir/pids"
  log "stopped ($dir)"
}

free_port() {  # the first port from $1 on that nothing listens on
  local p=$1
  while (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; do p=$((p + 1)); done
  echo "$p"
}

wait_pidfile() {  # a daemon's pid file, recorded in DIR/pids once it exists
  for _ in $(seq 100); do
    if [[ -s $1 ]] && kill -0 "$(cat "$1")" 2>/dev/null; then cat "$1" >>"$dir/pids"; return 0; fi
    sleep 0.1
  done
  log "no running daemon behind $1"
  return 1
}

start() {
  [[ $(id -u) == 0 ]] || { log "run as root (it installs packages and starts munged)"; exit 1; }
  if [[ -f $dir/pids ]]; then log "$dir/pids exists: stop that cluster first"; exit 1; fi
  # One install at a time: two clusters started at once on a fresh machine (the tests' workers do), or a
  # test installing Chromium or TeX Live meanwhile, would run apt-get twice at once and the second fails on
  # apt's lock. The lock file is tests/apt.py's too; whoever waited finds the packages installed.
  mkdir -p /run/lock
  (
    flock 9
    if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v munged >/dev/null; then
      log "installing slurm-wlm and munge"
      # the packages' own services stay stopped (policy-rc.d): the daemons this script starts are its own
      if [[ ! -e /usr/sbin/policy-rc.d ]]; then
        printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
        chmod 755 /usr/sbin/policy-rc.d
        trap 'rm -f /usr/sbin/policy-rc.d' EXIT
      fi
      export DEBIAN_FRONTEND=noninteractive
      apt-get -o DPkg::Lock::Timeout=300 update -qq >&2
      apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends slurm-wlm munge >&2
    fi
  ) 9>/run/lock/reappraisal-apt.lock
  mkdir -p "$dir"
  chmod 700 "$dir"
  rm -rf "$dir/state" "$dir/spool" "$dir/munge" "$dir/gpu"
  mkdir -p "$dir/state" "$dir/spool" "$dir/munge"
  : >"$dir/pids"
  trap 'log "start failed; logs in $dir"; stop' ERR

  # munged with its own socket and key: a munged already running here is left alone.
  (umask 077 && head -c 1024 /dev/urandom >"$dir/munge/munge.key")
  munged --force --socket="$dir/munge/munge.socket" --key-file="$dir/munge/munge.key" \
    --pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" --seed-file="$dir/munge/munged.seed"
  wait_pidfile "$dir/munge/munged.pid"

  local node partitions site=""
  if $gpu_site; then
    node="NodeName=$(slurmd -C | sed -n 's/^NodeName=\([^ ]*\).*/\1/p') CPUs=64 RealMemory=512000"
    node+=" Gres=gpu:h100:4 Features=h100"
    # EnforcePartLimits: a job beyond its partition's MaxTime is refused at submission, not left pending.
    site=$'GresTypes=gpu\nSlurmdParameters=config_overrides\nEnforcePartLimits=ALL'
    partitions=$'PartitionName=cpu Nodes=ALL Default=YES MaxTime=1-00:00:00 State=UP\n'
    partitions+='PartitionName=gpu Nodes=ALL MaxTime=3-00:00:00 State=UP'
  else
    node=$(slurmd -C | head -n 1)  # NodeName=<host> CPUs=... RealMemory=...
    partitions="PartitionName=local Nodes=ALL Default=YES MaxTime=INFINITE State=UP"
  fi
  # Two clusters starting at once (the test files on two pytest-xdist workers) would pick the same free ports:
  # one start at a time from choosing them until both daemons listen. The daemons do not inherit the lock.
  local ctld_port slurmd_port lock
  exec {lock}>/tmp/slurm-local.ports.lock
  flock -w 300 "$lock"
  ctld_port=$(free_port 6817)
  slurmd_port=$(free_port $((ctld_port + 1)))
  cat >"$conf" <<EOF
# Written by scripts/slurm-local.sh: a one-node cluster for tests.
ClusterName=local
SlurmctldHost=$(hostname)(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.socket
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=2
MinJobAge=7200
$site
$node NodeAddr=127.0.0.1 State=UNKNOWN
$partitions
EOF
  if $gpu_site; then
    # The GPUs slurmd reports. SLURM 22.05 ignores a typed GPU without device files (`Count=4` alone: the node
    # goes INVAL, "gres/gpu count reported lower than configured") and wants character devices: four made here
    # with /dev/null's numbers, or /dev's own where mknod is not allowed. No job reads them (task/none).
    mkdir -p "$dir/gpu"
    local i files
    if (for i in 0 1 2 3; do mknod "$dir/gpu/nvidia$i" c 1 3 2>/dev/null || exit 1; done); then
      files="$dir/gpu/nvidia[0-3]"
    else
      files=/dev/null,/dev/zero,/dev/full,/dev/urandom
    fi
    echo "Name=gpu Type=h100 File=$files" >"$dir/gres.conf"
  else
    rm -f "$dir/gres.conf"
  fi
  mkdir -p "$dir/bin"
  local tool
  for tool in sbatch srun salloc squeue scontrol scancel sinfo sacct sstat; do
    printf '#!/bin/sh\nSLURM_CONF=%s exec %s "$@"\n' "$conf" "$(PATH=/usr/local/bin:/usr/bin:/bin command -v "$tool")" >"$dir/bin/$tool"
    chmod 755 "$dir/bin/$tool"
  done
  SLURM_CONF=$conf slurmctld -f "$conf" {lock}>&-  # SLURM_CONF: where the daemons look for gres.conf
  wait_pidfile "$dir/slurmctld.pid"
  SLURM_CONF=$conf slurmd -f "$conf" {lock}>&-
  wait_pidfile "$dir/slurmd.pid"

  for _ in $(seq 60); do
    if [[ $(SLURM_CONF=$conf sinfo -h -o %T 2>/dev/null | sort -u) == idle ]]; then  # one line a partition
      trap - ERR
      exec {lock}>&-
      log "node idle: $(SLURM_CONF=$conf sinfo -h -o '%N %c CPUs %m MB')"
      echo "export PATH=$dir/bin:\$PATH"
      return 0
    fi
    sleep 0.5
  done
  log "the node is not idle: $(SLURM_CONF=$conf sinfo -h -o '%T %E' 2>&1)"
  false
}

case $cmd in
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 start [DIR] [--gpu-site] | stop [DIR]" >&2; exit 2 ;;
esac
