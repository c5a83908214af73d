#!/usr/bin/env bash
# Start a real single-node Slurm cluster on this machine (Debian bookworm, run as root).
#
# What it does, each step skipped when already done (so running it twice is safe):
#   1. installs Debian's slurm-wlm and munge with apt-get (apt-get update only when needed);
#   2. creates the munge key and starts munged (no systemd here: daemons are started directly);
#   3. writes /etc/slurm/slurm.conf for ONE node, this host, with `nproc` CPUs, CR_CPU
#      scheduling (so 1-CPU array tasks run side by side), linuxproc process tracking,
#      no cgroups, no accounting database, requeue enabled, finished jobs kept for an hour;
#   4. starts slurmctld and slurmd (restarting them when the config changed), waits until
#      `sinfo` shows the node idle, and resumes the node if it is down or drained.
#
# Client commands (sbatch, squeue, scontrol, scancel, sinfo) find /etc/slurm/slurm.conf on
# their own: no SLURM_CONF needed. Stop everything with tools/slurm/stop.sh.
#
# Environment knobs (all optional):
#   SLURM_SETUP_TIMEOUT  seconds to wait for the node to become idle (default 90)
#   SLURM_CRED_EXPIRE    credential lifetime in seconds; Slurm also holds a requeued job back
#                        for this long before it may start again (default here 10; Slurm's 120)
set -euo pipefail

SLURM_CONF_DIR=/etc/slurm
SLURM_CONF_FILE=$SLURM_CONF_DIR/slurm.conf
RUN_DIR=/run/slurm
SPOOL_DIR=/var/spool/slurm
LOG_DIR=/var/log/slurm
MUNGE_KEY=/etc/munge/munge.key
TIMEOUT=${SLURM_SETUP_TIMEOUT:-90}
CRED_EXPIRE=${SLURM_CRED_EXPIRE:-10}

log() { echo "[slurm-setup] $*"; }
die() { echo "[slurm-setup] ERROR: $*" >&2; exit 1; }

[[ $(id -u) -eq 0 ]] || die "must run as root (installs packages and starts daemons)"

# A process is "running" when its pid file names a live process with the expected name.
pid_alive() { # pidfile name
    local pid
    [[ -r $1 ]] || return 1
    pid=$(cat "$1" 2>/dev/null) || return 1
    [[ -n $pid ]] && [[ $(cat "/proc/$pid/comm" 2>/dev/null) == "$2" ]]
}

# Stop a daemon started from this script (by the pid in its pid file) and wait for it to exit.
stop_daemon() { # pidfile name
    local pid i
    pid_alive "$1" "$2" || return 0
    pid=$(cat "$1")
    log "stopping $2 (pid $pid)"
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 100; i++)); do
        [[ -d /proc/$pid ]] || return 0
        sleep 0.1
    done
    die "$2 (pid $pid) did not exit within 10 s"
}

dump_logs() {
    local f
    for f in "$LOG_DIR/slurmctld.log" "$LOG_DIR/slurmd.log" /var/log/munge/munged.log; do
        [[ -f $f ]] || continue
        echo "----- last lines of $f -----" >&2
        tail -n 40 "$f" >&2
    done
}

# --------------------------------------------------------------------------------------------
# 1. Packages
# --------------------------------------------------------------------------------------------
PACKAGES=(slurm-wlm munge)
missing=()
for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$' || missing+=("$p")
done
if ((${#missing[@]})); then
    export DEBIAN_FRONTEND=noninteractive
    # The package lists are refreshed only when apt does not know the packages yet; a failed
    # install (e.g. stale lists pointing at files that are gone) gets one update and a retry.
    # (Output captured first: `grep -q` closing the pipe early would fail it under pipefail.)
    policy=$(apt-cache policy "${missing[@]}" 2>/dev/null || true)
    if [[ $(grep -c 'Candidate: [0-9]' <<<"$policy") -lt ${#missing[@]} ]]; then
        log "apt-get update (package lists do not know ${missing[*]})"
        apt-get update -qq
    fi
    # No daemon may be started by the packages' maintainer scripts (there is no systemd, and we
    # start them ourselves with our own config): a policy-rc.d returning 101 forbids it. Ours is
    # removed again afterwards; one that was already there is left alone.
    policy_created=0
    if [[ ! -e /usr/sbin/policy-rc.d ]]; then
        printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
        chmod 755 /usr/sbin/policy-rc.d
        policy_created=1
    fi
    log "apt-get install ${missing[*]}"
    install_cmd=(apt-get install -y -qq --no-install-recommends "${missing[@]}")
    if ! "${install_cmd[@]}" >/tmp/slurm-setup-apt.log 2>&1; then
        log "install failed; apt-get update and one retry"
        apt-get update -qq
        "${install_cmd[@]}" >/tmp/slurm-setup-apt.log 2>&1 || {
            cat /tmp/slurm-setup-apt.log >&2
            ((policy_created)) && rm -f /usr/sbin/policy-rc.d
            die "apt-get install ${missing[*]} failed"
        }
    fi
    ((policy_created)) && rm -f /usr/sbin/policy-rc.d
    log "installed: $(dpkg-query -W -f='${Package} ${Version}  ' "${PACKAGES[@]}")"
else
    log "packages already installed: $(dpkg-query -W -f='${Package} ${Version}  ' "${PACKAGES[@]}")"
fi

# --------------------------------------------------------------------------------------------
# 2. munge: key and daemon
# --------------------------------------------------------------------------------------------
id munge >/dev/null 2>&1 || die "user 'munge' missing although the munge package is installed"
install -d -o munge -g munge -m 0700 /etc/munge /var/lib/munge /var/log/munge
install -d -o munge -g munge -m 0755 /run/munge
if [[ ! -s $MUNGE_KEY ]]; then
    log "creating munge key $MUNGE_KEY"
    dd if=/dev/urandom of="$MUNGE_KEY" bs=1024 count=1 status=none
fi
chown munge:munge "$MUNGE_KEY"
chmod 0400 "$MUNGE_KEY"

MUNGED_PID=/run/munge/munged.pid
if pid_alive "$MUNGED_PID" munged && munge -n </dev/null | unmunge >/dev/null 2>&1; then
    log "munged already running (pid $(cat "$MUNGED_PID"))"
else
    stop_daemon "$MUNGED_PID" munged
    log "starting munged"
    # --force: start even if a socket of a dead munged is still lying around.
    runuser -u munge -- /usr/sbin/munged --force --pid-file="$MUNGED_PID" ||
        { dump_logs; die "munged failed to start"; }
    for ((i = 0; i < 50; i++)); do
        munge -n </dev/null | unmunge >/dev/null 2>&1 && break
        sleep 0.1
    done
    munge -n </dev/null | unmunge >/dev/null 2>&1 || { dump_logs; die "munge round trip fails"; }
fi

# --------------------------------------------------------------------------------------------
# 3. slurm.conf
# --------------------------------------------------------------------------------------------
NODE=$(hostname -s)
CPUS=$(nproc)
mem_total_mb=$(awk '/^MemTotal:/ {print int($2 / 1024)}' /proc/meminfo)
# slurmd drains a node whose configured memory exceeds what it finds: stay ~5% below it.
REAL_MEMORY=$((mem_total_mb * 95 / 100))

install -d -m 0755 "$SLURM_CONF_DIR" "$RUN_DIR" "$LOG_DIR" "$SPOOL_DIR"
install -d -m 0755 "$SPOOL_DIR/ctld" "$SPOOL_DIR/d"

new_conf=$(
    cat <<EOF
# Written by tools/slurm/setup.sh (classwise): a single-node cluster for local runs and CI.
# Changes here are overwritten on the next run of that script.
ClusterName=classwise
SlurmctldHost=${NODE}(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
# cred_expire also sets how long a requeued job must wait before it may start again.
AuthInfo=cred_expire=${CRED_EXPIRE}
MpiDefault=none
# No cgroups in this container: plain /proc based process tracking, no task binding.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
# Scan the queue every 2 s (defaults: 60 s main loop, 30 s backfill): a job whose begin time
# passes (e.g. a requeued one) is otherwise only noticed up to 30 s later.
SchedulerParameters=sched_interval=2,bf_interval=2
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
JobRequeue=1
ReturnToService=2
# Keep finished jobs visible to 'scontrol show job' for an hour.
MinJobAge=3600
SlurmctldPort=6817
SlurmdPort=6818
SlurmctldPidFile=${RUN_DIR}/slurmctld.pid
SlurmdPidFile=${RUN_DIR}/slurmd.pid
StateSaveLocation=${SPOOL_DIR}/ctld
SlurmdSpoolDir=${SPOOL_DIR}/d
SlurmctldLogFile=${LOG_DIR}/slurmctld.log
SlurmdLogFile=${LOG_DIR}/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
NodeName=${NODE} NodeAddr=127.0.0.1 CPUs=${CPUS} RealMemory=${REAL_MEMORY} State=UNKNOWN
PartitionName=debug Nodes=${NODE} Default=YES MaxTime=INFINITE State=UP
EOF
)
conf_changed=0
if [[ ! -f $SLURM_CONF_FILE ]] || [[ $(cat "$SLURM_CONF_FILE") != "$new_conf" ]]; then
    log "writing $SLURM_CONF_FILE (node $NODE, $CPUS CPUs, RealMemory=${REAL_MEMORY}M)"
    printf '%s\n' "$new_conf" >"$SLURM_CONF_FILE"
    chmod 0644 "$SLURM_CONF_FILE"
    conf_changed=1
else
    log "$SLURM_CONF_FILE is up to date"
fi

# --------------------------------------------------------------------------------------------
# 4. slurmctld and slurmd
# --------------------------------------------------------------------------------------------
if ((conf_changed)); then
    # Running daemons would keep the old config: restart them.
    stop_daemon "$RUN_DIR/slurmd.pid" slurmd
    stop_daemon "$RUN_DIR/slurmctld.pid" slurmctld
fi
# Both daemons fork into the background themselves and write their pid files.
if pid_alive "$RUN_DIR/slurmctld.pid" slurmctld; then
    log "slurmctld already running (pid $(cat "$RUN_DIR/slurmctld.pid"))"
else
    log "starting slurmctld"
    # -i: ignore unreadable state files (e.g. left by another Slurm version) instead of failing.
    /usr/sbin/slurmctld -i || { dump_logs; die "slurmctld failed to start"; }
fi
if pid_alive "$RUN_DIR/slurmd.pid" slurmd; then
    log "slurmd already running (pid $(cat "$RUN_DIR/slurmd.pid"))"
else
    log "starting slurmd"
    /usr/sbin/slurmd || { dump_logs; die "slurmd failed to start"; }
fi

# Wait for the node to be idle (or busy with jobs: mixed/allocated), resuming it when it is
# down or drained (e.g. after an unclean stop). `%T` prints the long state name, with a
# suffix like `*` (not responding) or `~` (powered off).
deadline=$((SECONDS + TIMEOUT))
state=""
resumed_from=""
while :; do
    state=$(sinfo -h -n "$NODE" -o '%T' 2>/dev/null | head -n 1 || true)
    case $state in
    idle | mixed | allocated | completing) break ;;
    down* | drain* | fail*)
        # Refused while slurmd has not registered yet (state with `*`): tried again each second.
        [[ $state == "$resumed_from" ]] || log "node $NODE is $state: resuming it"
        resumed_from=$state
        scontrol update nodename="$NODE" state=resume 2>/dev/null || true
        ;;
    esac
    if ((SECONDS >= deadline)); then
        echo "[slurm-setup] node $NODE not idle after ${TIMEOUT}s (state: '${state:-no answer}')" >&2
        scontrol show node "$NODE" >&2 2>&1 || true
        dump_logs
        die "slurm cluster did not come up"
    fi
    sleep 1
done

log "OK: Slurm $(sinfo --version | awk '{print $2}') running, node $NODE $state, ${CPUS} CPUs, partition debug, config $SLURM_CONF_FILE"
