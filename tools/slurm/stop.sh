#!/usr/bin/env bash
# Stop the single-node Slurm cluster started by tools/slurm/setup.sh: slurmd, slurmctld, munged.
#
# Each daemon is stopped by the pid in its pid file (SIGTERM, then wait up to 15 s; SIGKILL only
# if it is still alive then). Jobs still running are killed by slurmd's shutdown; Slurm's state
# (queued jobs, finished jobs within MinJobAge) is saved and comes back with the next setup.sh.
# Safe to run when nothing is running.
set -euo pipefail

log() { echo "[slurm-stop] $*"; }

stop_daemon() { # pidfile name
    local pidfile=$1 name=$2 pid i
    if [[ ! -r $pidfile ]]; then
        log "$name: no pid file ($pidfile), not running"
        return 0
    fi
    pid=$(cat "$pidfile" 2>/dev/null || true)
    if [[ -z $pid ]] || [[ $(cat "/proc/$pid/comm" 2>/dev/null) != "$name" ]]; then
        log "$name: not running (stale pid file $pidfile)"
        rm -f "$pidfile"
        return 0
    fi
    log "$name: SIGTERM to pid $pid"
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 150; i++)); do
        [[ -d /proc/$pid ]] || { log "$name: stopped"; rm -f "$pidfile"; return 0; }
        sleep 0.1
    done
    log "$name: still alive after 15 s, SIGKILL to pid $pid"
    kill -KILL "$pid" 2>/dev/null || true
    rm -f "$pidfile"
}

# Order: the node daemon first, then the controller, then the authentication daemon they use.
stop_daemon /run/slurm/slurmd.pid slurmd
stop_daemon /run/slurm/slurmctld.pid slurmctld
stop_daemon /run/munge/munged.pid munged
log "done"
