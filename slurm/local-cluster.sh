#!/bin/bash
# local-cluster.sh — a throw-away Slurm 22.05 cluster on this one machine (Debian
# packages), for testing slurm/ch7.sbatch in CI and by hand. Run as root.
#
# Usage:
#   slurm/local-cluster.sh [--nodes N] start|stop|status|env   (--nodes may
#                                   also follow the verb; default
#                                   $RSAG_SLURM_NODES or 1)
#   slurm/local-cluster.sh start    install slurm-wlm and munge if missing, start
#                                   munged, slurmctld and slurmd, wait (bounded)
#                                   until every node is idle. Idempotent: a
#                                   healthy cluster with the same config is left
#                                   alone; a half-started one, or one whose
#                                   config changed, is torn down and started
#                                   afresh (never `scontrol reconfigure`d).
#   slurm/local-cluster.sh stop     cancel all jobs, stop every process this
#                                   script started (daemons, step daemons, job
#                                   tasks), delete all state. Bounded (~70 s at
#                                   worst); succeeds even if start half-failed
#                                   or nothing runs.
#   slurm/local-cluster.sh restore  on a running cluster: start a node's slurmd
#                                   that is gone, resume a node drained or
#                                   down, wait (bounded) until every node is
#                                   idle; what a test that killed a slurmd
#                                   or drained a node leaves for the next.
#   slurm/local-cluster.sh status   daemon pids and `sinfo`; exit 0 only when
#                                   the cluster is up and every node usable.
#   slurm/local-cluster.sh env      print SLURM_CONF=<path> (and RSAG_HOSTS=<name>
#                                   with --nodes 2 or more), for clients:
#                                   eval "export $(slurm/local-cluster.sh env)"
#
# Environment:
#   RSAG_SLURM_DIR    everything the cluster writes lives here (config, munge
#                     socket, state, spool, per-step tmp, logs, pid files);
#                     `stop` deletes it. Default /var/lib/rsag-slurm.
#   RSAG_SLURM_WAIT   seconds `start` waits for the nodes to become idle (60).
#   RSAG_SLURM_NODES  number of nodes (1), as --nodes. One node is this
#                     machine itself (its hostname, 127.0.0.1). Two or more are
#                     hosts emulated by scripts/hosts.sh, each with its own
#                     network, hostname, IPC, /tmp and /dev/shm, so that they
#                     share no memory, as real nodes: munged and slurmctld run
#                     on head (10.77.0.254), one slurmd on each of node1..N
#                     (10.77.0.K). Clients must then run on head, where the
#                     controller is reachable:
#                       RSAG_HOSTS=<name> scripts/hosts.sh exec head sbatch ...
#                     $RSAG_SLURM_DIR and the checkout are shared with every
#                     host; RSAG_HOSTS_SHARE names more (e.g. the submit dir).
#                     (An earlier version ran every slurmd on this host with
#                     one hostname: PMIx then handed node2's tasks node1's
#                     local peers and MPI_Comm_split_type crashed.)
#   RSAG_HOSTS        the hosts' instance name with --nodes 2+ (rsag-slurm);
#                     RSAG_HOSTS_OWNER, RSAG_HOSTS_SHARE: see scripts/hosts.sh.
#   RSAG_SLURMD_TIMEOUT  SlurmdTimeout, seconds (60): how long a node whose
#                     slurmd stopped answering stays up before its jobs are
#                     killed (tests of a dying node lower it).
#   RSAG_SLURM_PORTS  "CTLD,SLURMD": the one-node cluster's SlurmctldPort and
#                     slurmd Port. Unset: those of the cluster already in
#                     $RSAG_SLURM_DIR, else two free ones picked at start
#                     (emulated hosts have networks of their own: 6817, 6818).
#
# What it sets up (facts that matter, learnt the hard way):
#   * Debian's slurm-wlm and munge (apt-get update && install if missing; the
#     packages' init scripts are kept from starting daemons meanwhile).
#   * munged runs as the munge user with the stock key /etc/munge/munge.key
#     (created if missing; munge:munge, mode 0400) but with its own socket,
#     pid, seed and log files under $RSAG_SLURM_DIR/munge, so that a system
#     munged, if any, is left alone; slurm.conf points Slurm at that socket
#     (AuthInfo=socket=...).
#   * Several clusters may run on one machine at once (two `make test`, each
#     with its own $RSAG_SLURM_DIR): nothing of one is another's. On one node
#     the daemons listen on this machine's network, so each cluster picks free
#     ports (RSAG_SLURM_PORTS) instead of Slurm's 6817 and 6818, and its job
#     ids start at FirstJobId = SlurmctldPort x 1000, which no other cluster
#     alive here has (job ids name Open MPI's and PMIx's per-job files in this
#     machine's /tmp and /dev/shm); emulated clusters take a random block of
#     1000 ids, for the same reason.
#   * slurm.conf names this host (`hostname -s`, address 127.0.0.1), or head and
#     node1..N, with CPUs=4 per node and SlurmdParameters=config_overrides, so 4
#     tasks fit on a 2-core box; SlurmUser=root, proctrack/linuxproc, task/none,
#     select/cons_tres (CR_CPU), partition `debug` (default, no time limit),
#     JobRequeue=0 (a job on a failed node ends instead of rerunning). No accounting
#     (slurmdbd): `sacct` does not work, use `scontrol show job -o ID`;
#     MinJobAge=3600 keeps finished jobs visible to it for an hour. (Slurm's
#     docs say 0 never purges; 22.05 makes it 2 s, `scontrol show config`
#     says so, and a client that asked a few seconds late on a loaded machine
#     found no job: `sbatch --wait` said "no longer found" and exited 0.)
#     With it `sbatch --wait` polls at 2, 10, 42 s and then every 32 s (a
#     15 s job takes 42 s to be seen done): the tests poll `scontrol show
#     job` themselves instead.
#   * MpiDefault=none; `srun --mpi=pmix` works through Debian's mpi_pmix_v4
#     plugin. Its per-step directories go under TmpFS=$RSAG_SLURM_DIR/tmp/%n:
#     in /tmp, one left behind by a step that `stop` killed makes the step with
#     the same job/step id fail to launch in a later cluster (one that picks
#     the same ports starts at the same job id) — and srun then exits 0 (see
#     ch7.sbatch).
#   * No GresTypes: there are no GPUs; submit with --gpus-per-node=0.
#   * Clients find the config through SLURM_CONF (see `env`). In addition
#     /etc/slurm/slurm.conf is made a symlink to it when that file does not
#     exist yet (and removed again by `stop`), so plain `sbatch` works too.
#   * Daemons are started directly (no systemd) with RSAG_SLURM_OWNER=<dir> in
#     their environment; slurmstepd inherits it and job tasks carry
#     SLURM_CLUSTER_NAME/SLURM_CONF of this cluster, which is how `stop` finds
#     what is left when pid files or the controller are gone.
set -uo pipefail

DIR=${RSAG_SLURM_DIR:-/var/lib/rsag-slurm}
WAIT=${RSAG_SLURM_WAIT:-60}
NODES=${RSAG_SLURM_NODES:-1}
SLURMD_TIMEOUT=${RSAG_SLURMD_TIMEOUT:-60}
HOSTS_SH=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/scripts/hosts.sh
CONF=$DIR/etc/slurm.conf
MODE=$DIR/etc/mode # "NODES HOSTS": what start made, for stop and status
MUNGE_DIR=$DIR/munge
MUNGE_SOCKET=$MUNGE_DIR/munge.socket.2
MUNGE_KEY=/etc/munge/munge.key
CLUSTER=rsaglocal
PARTITION=debug
SYS_CONF=/etc/slurm/slurm.conf
MARK=RSAG_SLURM_OWNER=$DIR

export SLURM_CONF=$CONF

log() { echo "local-cluster: $*"; }
err() { echo "local-cluster: ERROR: $*" >&2; }

need_root() {
	if [[ $(id -u) -ne 0 ]]; then
		err "must run as root (it starts munged, slurmctld and slurmd)"
		exit 1
	fi
}

# node_names: this cluster's node names, one a line.
node_names() {
	local i
	if ! multi; then
		hostname -s
		return
	fi
	for ((i = 1; i <= NODES; i++)); do echo "node$i"; done
}

# multi: the nodes are emulated hosts (scripts/hosts.sh).
multi() { ((NODES > 1)); }

# on HOST CMD...: run CMD on HOST (head or a node) of an emulated cluster,
# here on a one-node one. Clients of the controller run on head.
on() {
	local h=$1
	shift
	if multi; then "$HOSTS_SH" exec "$h" "$@"; else "$@"; fi
}
client() { on head "$@"; }

# ---------------------------------------------------------------- install ---

install_packages() {
	local missing=() c
	for c in slurmctld slurmd sbatch srun sinfo scontrol munged munge; do
		command -v "$c" >/dev/null 2>&1 || missing+=("$c")
	done
	[[ ${#missing[@]} -eq 0 ]] && return 0
	log "installing slurm-wlm and munge (missing: ${missing[*]})"
	# Keep the packages' init scripts from starting system daemons.
	local own_policy=0 rc=0
	if [[ ! -e /usr/sbin/policy-rc.d ]]; then
		printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
		chmod 755 /usr/sbin/policy-rc.d
		own_policy=1
	fi
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q || rc=$?
	if [[ $rc -eq 0 ]]; then
		apt-get install -y -q slurm-wlm munge || rc=$?
	fi
	[[ $own_policy -eq 1 ]] && rm -f /usr/sbin/policy-rc.d
	if [[ $rc -ne 0 ]]; then
		err "apt-get failed (exit $rc) installing slurm-wlm munge"
		exit 1
	fi
	for c in "${missing[@]}"; do
		if ! command -v "$c" >/dev/null 2>&1; then
			err "$c still missing after installing slurm-wlm and munge"
			exit 1
		fi
	done
}

# ----------------------------------------------------------------- config ---

# The cluster's ports and first job id (choose_ids sets them).
CTLD_PORT=6817
SLURMD_PORT=6818
FIRST_JOB_ID=1

# conf_value KEY: KEY's value in $CONF (the first line or word KEY=...).
conf_value() {
	[[ -r $CONF ]] || return 0
	tr ' ' '\n' <"$CONF" | awk -F= -v k="$1" '$1 == k { print $2; exit }'
}

# used_ports: the TCP ports in use on this machine's network, one a line.
used_ports() {
	local f local rest
	for f in /proc/net/tcp /proc/net/tcp6; do
		[[ -r $f ]] || continue
		# sl local_address (hex ADDR:PORT) rem_address ...
		while read -r _ local rest; do
			[[ $local == *:* ]] && echo $((16#${local##*:}))
		done <"$f"
	done
}

# free_ports N: N distinct TCP ports nothing here uses, below the ephemeral
# range (where connections get theirs) and above 10000, picked at random, so
# that two clusters that start at once do not pick the same.
free_ports() {
	local n=$1 lo=10000 hi used p picked=" " got=0 tries=0
	hi=$(awk '{ print $1 - 1 }' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null)
	[[ $hi =~ ^[0-9]+$ && $hi -gt $((lo + 1000)) ]] || hi=32767
	used=" $(used_ports | sort -un | tr '\n' ' ') "
	while ((got < n && tries < 1000)); do
		tries=$((tries + 1))
		p=$((lo + (RANDOM * 32768 + RANDOM) % (hi - lo)))
		[[ $used == *" $p "* || $picked == *" $p "* ]] && continue
		picked+="$p "
		got=$((got + 1))
		echo "$p"
	done
	((got == n))
}

# choose_ids reuse|new: the ports and the first job id of the cluster to
# start. RSAG_SLURM_PORTS, if set, names the ports; with reuse, those of the
# cluster in $DIR (which is then left alone if healthy); else one node takes
# two free ones, and emulated hosts 6817 and 6818 in their own network. Job
# ids start at SlurmctldPort x 1000 on one node (unique among the clusters
# alive here, as the port is), at a random block of 1000 on emulated hosts.
choose_ids() {
	local ports
	if [[ -n ${RSAG_SLURM_PORTS:-} ]]; then
		if ! [[ $RSAG_SLURM_PORTS =~ ^[1-9][0-9]*,[1-9][0-9]*$ ]]; then
			err "RSAG_SLURM_PORTS=$RSAG_SLURM_PORTS: want CTLD,SLURMD (two port numbers)"
			exit 2
		fi
		CTLD_PORT=${RSAG_SLURM_PORTS%,*} SLURMD_PORT=${RSAG_SLURM_PORTS#*,}
	elif [[ $1 == reuse && -n $(conf_value SlurmctldPort) && -n $(conf_value Port) ]]; then
		CTLD_PORT=$(conf_value SlurmctldPort) SLURMD_PORT=$(conf_value Port)
	elif ! multi; then
		if ! ports=$(free_ports 2); then
			err "found no two free TCP ports to listen on"
			exit 1
		fi
		read -r CTLD_PORT SLURMD_PORT <<<"$(tr '\n' ' ' <<<"$ports")"
	fi
	if ! multi; then
		FIRST_JOB_ID=$((CTLD_PORT * 1000))
	elif [[ $1 == reuse && -n $(conf_value FirstJobId) ]]; then
		FIRST_JOB_ID=$(conf_value FirstJobId)
	else
		FIRST_JOB_ID=$((((RANDOM * 32768 + RANDOM) % 60000 + 1) * 1000))
	fi
}

NODE_HW="CPUs=4 Boards=1 SocketsPerBoard=1 CoresPerSocket=4 ThreadsPerCore=1 RealMemory=1000 State=UNKNOWN"

write_conf() { # $1: output file
	local ctl nodes i n
	ctl="$(hostname -s)(127.0.0.1)"
	multi && ctl="head(10.77.0.254)"
	nodes=$(node_names | paste -sd,)
	cat >"$1" <<EOF
# Generated by slurm/local-cluster.sh — a throw-away test cluster. Do not edit:
# 'local-cluster.sh stop && local-cluster.sh start' rewrites it.
ClusterName=$CLUSTER
SlurmctldHost=$ctl
SlurmctldPort=$CTLD_PORT
FirstJobId=$FIRST_JOB_ID
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$MUNGE_SOCKET
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool/%n
# Where the pmix plugin makes its per-step directories (spmix_appdir_*).
TmpFS=$DIR/tmp/%n
SlurmctldPidFile=$DIR/run/slurmctld.pid
SlurmdPidFile=$DIR/run/slurmd-%n.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
SwitchType=switch/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
ReturnToService=2
MinJobAge=3600
KillWait=5
InactiveLimit=0
SlurmctldTimeout=30
SlurmdTimeout=$SLURMD_TIMEOUT
JobRequeue=0
MailProg=/bin/true
SlurmdParameters=config_overrides
EOF
	i=0
	for n in $(node_names); do
		i=$((i + 1))
		if multi; then
			# Each node has its own network: every slurmd takes the same port.
			echo "NodeName=$n NodeHostname=$n NodeAddr=10.77.0.$i Port=$SLURMD_PORT $NODE_HW" >>"$1"
		else
			echo "NodeName=$n NodeHostname=$n NodeAddr=127.0.0.1 Port=$SLURMD_PORT $NODE_HW" >>"$1"
		fi
	done
	echo "PartitionName=$PARTITION Nodes=$nodes Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO" >>"$1"
}

# --------------------------------------------------------------- processes ---

# alive_pid PID: the process exists and is not a zombie (here pid 1 reaps
# daemonized processes late, so they linger as zombies for a while).
alive_pid() {
	status_field "$1" State && [[ -n $REPLY && $REPLY != Z* && $REPLY != X* ]]
}

# status_field PID KEY: REPLY is KEY's value in /proc/PID/status; false
# when the process or the key is not there. read, not awk: kill_wait asks
# alive_pid of every pid five times a second, and no fork is cheaper.
status_field() {
	local k v
	REPLY=""
	{ while read -r k v; do
		[[ $k == "$2:" ]] && { REPLY=$v; return 0; }
	done <"/proc/$1/status"; } 2>/dev/null
	return 1
}

# pid_of NAME [NODE]: the pid in NAME's pid file ($DIR/run/NAME.pid,
# $DIR/run/slurmd-NODE.pid, or munged's) if that process is alive and is
# indeed NAME; empty otherwise.
pid_of() {
	local name=$1 file pid
	case $name in
	munged) file=$MUNGE_DIR/munged.pid ;;
	slurmd) file=$DIR/run/slurmd-$2.pid ;;
	*) file=$DIR/run/$name.pid ;;
	esac
	[[ -r $file ]] || return 0
	pid=$(tr -dc '0-9' <"$file")
	[[ -n $pid ]] || return 0
	alive_pid "$pid" || return 0
	if { tr '\0' ' ' <"/proc/$pid/cmdline"; } 2>/dev/null | grep -q "$name"; then
		echo "$pid"
	fi
}

# marked_pids: live processes whose environment carries $MARK (our daemons and
# the slurmstepds they forked) or that are tasks of a job of this cluster
# (SLURM_CLUSTER_NAME=$CLUSTER together with our SLURM_CONF), except this
# script and its ancestors.
marked_pids() {
	local keep=" " p=$$ f pid
	while [[ -n $p && $p -gt 1 ]]; do
		keep+="$p "
		status_field "$p" PPid
		p=$REPLY
	done
	# Three greps over every process's environment, not a few processes per
	# process: on a loaded machine the machine's hundreds of processes made
	# a stop take 20 s.
	{
		grep -lszxF -e "$MARK" /proc/[0-9]*/environ
		comm -12 <(grep -lszxF -e "SLURM_CLUSTER_NAME=$CLUSTER" /proc/[0-9]*/environ | sort) \
			<(grep -lszxF -e "SLURM_CONF=$CONF" /proc/[0-9]*/environ | sort)
	} | while read -r f; do
		pid=${f#/proc/}
		pid=${pid%/environ}
		[[ $keep == *" $pid "* ]] && continue
		alive_pid "$pid" && echo "$pid"
	done | sort -un
	return 0
}

# kill_wait SECONDS PID...: SIGTERM, wait up to SECONDS, then SIGKILL.
kill_wait() {
	local secs=$1
	shift
	[[ $# -eq 0 ]] && return 0
	kill -TERM "$@" 2>/dev/null
	local i p alive=()
	for ((i = 0; i < secs * 5; i++)); do
		alive=()
		for p in "$@"; do alive_pid "$p" && alive+=("$p"); done
		[[ ${#alive[@]} -eq 0 ]] && return 0
		sleep 0.2
	done
	log "SIGKILL ${alive[*]}"
	kill -KILL "${alive[@]}" 2>/dev/null
	sleep 0.2
	return 0
}

# --------------------------------------------------------------------- stop ---

do_stop() {
	local pid pids f
	# 1. Cancel jobs while the controller still answers (bounded).
	if [[ -n $(pid_of slurmctld) && -r $CONF ]] && client timeout 5 scontrol ping >/dev/null 2>&1; then
		local jobs
		jobs=$(client timeout 5 squeue -h -o %i 2>/dev/null | tr '\n' ' ')
		if [[ -n ${jobs// /} ]]; then
			log "cancelling jobs: $jobs"
			# shellcheck disable=SC2086
			client timeout 10 scancel $jobs >/dev/null 2>&1
			local end=$((SECONDS + 10))
			while ((SECONDS < end)); do
				[[ -z $(client timeout 3 squeue -h -t R,CG,CF -o %i 2>/dev/null) ]] && break
				sleep 0.2
			done
		fi
	fi
	# 2. Daemons: slurmds, then the controller.
	pids=""
	for f in "$DIR"/run/slurmd-*.pid; do
		[[ -e $f ]] || continue
		f=${f##*/slurmd-}
		pids+="$(pid_of slurmd "${f%.pid}") "
	done
	if [[ -n ${pids// /} ]]; then
		log "stopping slurmd ($pids)"
		# shellcheck disable=SC2086
		kill_wait 10 $pids
	fi
	pid=$(pid_of slurmctld)
	[[ -n $pid ]] && { log "stopping slurmctld ($pid)"; kill_wait 10 "$pid"; }
	# 3. Anything else we started: step daemons, orphaned job tasks, a daemon
	#    whose pid file was lost. munged goes last (the others need it).
	local munged
	munged=$(pid_of munged)
	pids=$(marked_pids | grep -vxF "${munged:-none}" | tr '\n' ' ')
	if [[ -n ${pids// /} ]]; then
		log "stopping leftover processes: $pids"
		# A step daemon whose slurmd is gone (a failed node) ignores
		# SIGTERM: it would only cost kill_wait's 5 s.
		local p
		for p in $pids; do
			[[ $(cat "/proc/$p/comm" 2>/dev/null) == slurmstepd ]] && kill -KILL "$p" 2>/dev/null
		done
		# shellcheck disable=SC2086
		kill_wait 5 $pids
	fi
	pids=$(marked_pids | tr '\n' ' ')
	if [[ -n ${pids// /} ]]; then
		log "stopping munged ($pids)"
		# shellcheck disable=SC2086
		kill_wait 5 $pids
	fi
	# 4. The emulated hosts, with anything still running on them.
	if multi; then
		if RSAG_HOSTS=$HOSTS "$HOSTS_SH" down; then
			log "hosts $HOSTS down"
		else
			err "taking hosts $HOSTS down failed"
		fi
	fi
	# 5. Files.
	if [[ -L $SYS_CONF && $(readlink "$SYS_CONF") == "$CONF" ]]; then
		rm -f "$SYS_CONF"
	fi
	if [[ -d $DIR ]]; then
		case $DIR in
		/ | /var | /var/lib | /etc | /tmp | /usr | /root | "") err "refusing to remove $DIR" ;;
		*) rm -rf --one-file-system "$DIR" ;;
		esac
	fi
	pids=$(marked_pids | tr '\n' ' ')
	if [[ -n ${pids// /} ]]; then
		err "processes still alive after stop: $pids"
		return 1
	fi
	log "stopped"
	return 0
}

# ------------------------------------------------------------------- status ---

node_state() { # NODE: the node's state as sinfo shows it (idle, down*, ...)
	client timeout 5 sinfo -h -N -n "$1" -o %t 2>/dev/null | head -n1
}

healthy() {
	[[ -n $(pid_of munged) && -n $(pid_of slurmctld) ]] || return 1
	client timeout 5 scontrol ping >/dev/null 2>&1 || return 1
	local n
	for n in $(node_names); do
		[[ -n $(pid_of slurmd "$n") ]] || return 1
		case $(node_state "$n") in
		idle | mix | alloc | comp) ;;
		*) return 1 ;;
		esac
	done
}

do_status() {
	local n
	for n in munged slurmctld; do
		printf '%-16s %s\n' "$n" "$(pid_of $n)"
	done
	for n in $(node_names); do
		printf '%-16s %s\n' "slurmd $n" "$(pid_of slurmd "$n")"
	done
	if [[ -r $CONF ]]; then
		echo "SLURM_CONF=$CONF"
		client timeout 5 sinfo 2>&1
	else
		echo "not started (no $CONF)"
	fi
	healthy
}

# -------------------------------------------------------------------- start ---

start_munge() {
	mkdir -p "$MUNGE_DIR"
	chown munge:munge "$MUNGE_DIR"
	chmod 0755 "$MUNGE_DIR"
	if [[ ! -s $MUNGE_KEY ]]; then
		log "creating $MUNGE_KEY"
		mkdir -p /etc/munge
		chown munge:munge /etc/munge
		chmod 0700 /etc/munge
		dd if=/dev/urandom of="$MUNGE_KEY" bs=1024 count=1 status=none
	fi
	chown munge:munge "$MUNGE_KEY"
	chmod 0400 "$MUNGE_KEY"
	on head env "$MARK" runuser -u munge -- munged \
		--socket="$MUNGE_SOCKET" --key-file="$MUNGE_KEY" \
		--pid-file="$MUNGE_DIR/munged.pid" --seed-file="$MUNGE_DIR/munged.seed" \
		--log-file="$MUNGE_DIR/munged.log" >>"$DIR/log/munged.out" 2>&1 || {
		err "munged failed to start:"
		tail -n 20 "$DIR/log/munged.out" "$MUNGE_DIR/munged.log" >&2 2>/dev/null
		return 1
	}
	local i
	for ((i = 0; i < 50; i++)); do
		if munge -n --socket="$MUNGE_SOCKET" 2>/dev/null | unmunge --socket="$MUNGE_SOCKET" >/dev/null 2>&1; then
			return 0
		fi
		sleep 0.2
	done
	err "munge does not work (munge -n | unmunge on $MUNGE_SOCKET):"
	tail -n 20 "$MUNGE_DIR/munged.log" >&2 2>/dev/null
	return 1
}

start_slurm() {
	local i n
	on head env "$MARK" slurmctld -f "$CONF" >>"$DIR/log/slurmctld.out" 2>&1 || {
		err "slurmctld failed to start:"
		tail -n 20 "$DIR/log/slurmctld.out" "$DIR/log/slurmctld.log" >&2 2>/dev/null
		return 1
	}
	for ((i = 0; i < 100; i++)); do
		client timeout 5 scontrol ping >/dev/null 2>&1 && break
		sleep 0.2
	done
	if ! client timeout 5 scontrol ping >/dev/null 2>&1; then
		err "slurmctld does not answer 'scontrol ping':"
		tail -n 20 "$DIR/log/slurmctld.log" >&2 2>/dev/null
		return 1
	fi
	for n in $(node_names); do
		mkdir -p "$DIR/spool/$n" "$DIR/tmp/$n"
		chmod 1777 "$DIR/tmp/$n"
		on "$n" env "$MARK" slurmd -f "$CONF" -N "$n" >>"$DIR/log/slurmd-$n.out" 2>&1 || {
			err "slurmd for node $n failed to start:"
			tail -n 20 "$DIR/log/slurmd-$n.out" "$DIR/log/slurmd-$n.log" >&2 2>/dev/null
			return 1
		}
	done
	wait_idle
}

# wait_idle: wait (bounded by WAIT) until every node is idle, resuming one
# that is down or drained.
wait_idle() {
	local i n state all_idle
	for ((i = 0; i < WAIT * 2; i++)); do
		all_idle=1
		for n in $(node_names); do
			state=$(node_state "$n")
			case $state in
			idle) ;;
			down* | drain* | drng* | fail*)
				# A node left down by an earlier life of the controller.
				client timeout 5 scontrol update NodeName="$n" State=RESUME >/dev/null 2>&1
				all_idle=0
				;;
			*) all_idle=0 ;;
			esac
		done
		[[ $all_idle -eq 1 ]] && return 0
		sleep 0.5
	done
	err "nodes not idle after ${WAIT}s:"
	client timeout 5 sinfo -N -l >&2 2>&1
	echo "--- slurmctld.log" >&2
	tail -n 20 "$DIR/log/slurmctld.log" >&2 2>/dev/null
	for n in $(node_names); do
		echo "--- slurmd-$n.log" >&2
		tail -n 20 "$DIR/log/slurmd-$n.log" >&2 2>/dev/null
	done
	return 1
}

do_start() {
	install_packages
	local new nodes
	nodes=$(node_names | paste -sd,)
	new=$(mktemp)
	if [[ -r $CONF ]] && healthy; then
		choose_ids reuse
		write_conf "$new"
		if cmp -s "$new" "$CONF"; then
			rm -f "$new"
			log "already running (nodes $nodes idle); SLURM_CONF=$CONF"
			return 0
		fi
	fi
	choose_ids new
	write_conf "$new"
	# Not running, half running, or the config changed: restart from scratch.
	if [[ -d $DIR ]]; then
		log "cleaning up an earlier cluster in $DIR"
		# As it was made, which may differ from what is asked now.
		(
			[[ -r $MODE ]] && read -r NODES HOSTS <"$MODE"
			do_stop >/dev/null
		) || true
	fi
	mkdir -p "$DIR"/{etc,state,spool,log,run,tmp}
	chmod 0755 "$DIR"
	mv "$new" "$CONF"
	chmod 0644 "$CONF"
	echo "$NODES $HOSTS" >"$MODE"
	if multi; then
		# The cluster's directory is on every host, as NFS would give it.
		if ! RSAG_HOSTS=$HOSTS "$HOSTS_SH" up --nodes "$NODES" --share "$DIR"; then
			err "emulated hosts failed to come up (run '$0 stop' to clean up)"
			return 1
		fi
	fi
	if [[ ! -e $SYS_CONF && ! -L $SYS_CONF ]] || [[ -L $SYS_CONF && $(readlink "$SYS_CONF") == "$CONF" ]]; then
		mkdir -p "$(dirname "$SYS_CONF")"
		ln -sfn "$CONF" "$SYS_CONF"
	fi
	if start_munge && start_slurm; then
		log "up: nodes $nodes idle in partition $PARTITION (ports $CTLD_PORT, $SLURMD_PORT; job ids from $FIRST_JOB_ID); SLURM_CONF=$CONF"
		return 0
	fi
	err "start failed; logs are in $DIR/log and $MUNGE_DIR (run '$0 stop' to clean up)"
	return 1
}

# ----------------------------------------------------------------- restore ---

# do_restore: give a running cluster every node back, as a test that killed
# a slurmd or drained a node found it: a node's slurmd that is gone is
# started anew (ReturnToService=2 brings its node back when it registers),
# a node drained or down is resumed, and every node is idle (bounded by
# RSAG_SLURM_WAIT). Quiet when there was nothing to do.
do_restore() {
	local n
	if [[ ! -r $CONF || -z $(pid_of slurmctld) ]]; then
		err "no running cluster in $DIR"
		return 1
	fi
	for n in $(node_names); do
		[[ -n $(pid_of slurmd "$n") ]] && continue
		log "starting slurmd on $n (it was gone)"
		on "$n" env "$MARK" slurmd -f "$CONF" -N "$n" >>"$DIR/log/slurmd-$n.out" 2>&1 || {
			err "slurmd for node $n failed to start:"
			tail -n 20 "$DIR/log/slurmd-$n.out" "$DIR/log/slurmd-$n.log" >&2 2>/dev/null
			return 1
		}
	done
	wait_idle
}

# --------------------------------------------------------------------- main ---

verb=""
nodes_flag=""
while [[ $# -gt 0 ]]; do
	case $1 in
	--nodes) nodes_flag=${2:-}; shift 2 || shift ;;
	--nodes=*) nodes_flag=${1#--nodes=}; shift ;;
	start | stop | status | env | restore) [[ -z $verb ]] && verb=$1 || verb=bad; shift ;;
	*) verb=bad; shift ;;
	esac
done
[[ -n $nodes_flag ]] && NODES=$nodes_flag
HOSTS=${RSAG_HOSTS:-rsag-slurm}
# stop, status and env act on the cluster that start made, whatever --nodes.
if [[ $verb != start && -r $MODE ]]; then
	read -r NODES HOSTS <"$MODE"
fi
if ! [[ $NODES =~ ^[1-9][0-9]*$ ]]; then
	err "--nodes $NODES (or RSAG_SLURM_NODES): want a positive number"
	exit 2
fi
case $verb in
start) need_root; do_start ;;
stop) need_root; do_stop ;;
restore) need_root; do_restore ;;
status) do_status ;;
env) if multi; then echo "SLURM_CONF=$CONF RSAG_HOSTS=$HOSTS"; else echo "SLURM_CONF=$CONF"; fi ;;
*)
	echo "usage: $0 [--nodes N] start|stop|status|env|restore" >&2
	exit 2
	;;
esac
