#!/bin/bash
# hosts.sh — emulated cluster nodes on this one machine, for multi-node tests
# of mpirun and Slurm without a cluster. Run as root (Linux namespaces).
#
# Each host (head, node1..nodeN) is a set of namespaces that share no memory:
#   * network: its own netns. The nodes' eth0 are veth pairs joined to a bridge
#     in head's netns; addresses are 10.77.0.K/24 for nodeK and 10.77.0.254 for
#     head. Nothing is added to, or routed through, this machine's own network
#     namespace, so no traffic leaves the emulated hosts and several instances
#     can use the same addresses at once.
#   * UTS: its own hostname (head, node1, ...): PMIx and Open MPI identify a
#     node by gethostname().
#   * IPC and mount: its own /etc/hosts (bind-mounted; every host's name and
#     address), its own tmpfs /tmp and /dev/shm (Open MPI's shared-memory
#     segments and session directories). The checkout holding this script and
#     every --share directory are bound back in, as NFS would give them; the
#     rest of the file system is this machine's.
# Each host's namespaces are kept by one process in them, its holder
# (`sleep infinity`, named rsag-host-NAME-HOST; its pid in
# /run/rsag-hosts/NAME/HOST.pid), and entered through /proc/PID/ns, which
# works from this machine and from inside any host alike (a launcher on head
# enters the nodes as it would ssh to them). The network namespaces are
# named in /run/netns for `ip -n`, but `ip netns exec` is not used: it
# remounts /sys and loses the cgroup tree slurmd needs.
#
# Usage:
#   hosts.sh up [--nodes N] [--share DIR]...
#                         bring the hosts up (N nodes, default 2). Idempotent:
#                         an instance already up with the same nodes and
#                         shares is left alone; a half-made or different one
#                         is taken down and made afresh. Bounded (seconds).
#   hosts.sh down         end every process inside the instance's hosts
#                         (SIGTERM, then SIGKILL), remove its namespaces and
#                         state. Works on a half-made instance, or none.
#   hosts.sh status       each host's address and process count; exit 0 only
#                         when the instance is fully up.
#   hosts.sh on HOST CMD...
#                         what `ssh HOST CMD...` does: the words joined and run
#                         by /bin/sh -c in HOST's namespaces, in $HOME, with a
#                         fresh login environment (HOME, PATH, USER, LOGNAME,
#                         SHELL, LANG), so that only what a launcher forwards
#                         reaches the remote side. Open MPI's plm_rsh_agent.
#   hosts.sh exec HOST CMD [ARG]...
#                         run CMD with exactly these arguments, this
#                         environment and this working directory in HOST's
#                         namespaces (for scripts and tests).
#   hosts.sh pids HOST    the pids of every process on HOST, one a line.
#   hosts.sh env          the Open MPI settings that make mpirun reach the
#                         nodes through `on` instead of ssh:
#                         eval "$(scripts/hosts.sh env)"
#   hosts.sh gc           take down every instance whose owner is gone.
#
# Environment:
#   RSAG_HOSTS        the instance's name (letters, digits, '-'; default rsag):
#                     namespaces NAME-head, NAME-node1, ...
#   RSAG_HOSTS_SHARE  more directories to share, ':'-separated (with --share).
#   RSAG_HOSTS_OWNER  a pid: `gc` takes the instance down once that process is
#                     gone (tests set it, so a killed test leaves nothing
#                     behind for long). Unset: kept until `down`.
set -uo pipefail

NAME=${RSAG_HOSTS:-rsag}
BASE=/run/rsag-hosts
STATE=$BASE/$NAME
SUBNET=10.77.0
HEAD_ADDR=$SUBNET.254
MAX_NODES=200
SELF=$(realpath -e "${BASH_SOURCE[0]}")
REPO=$(dirname "$(dirname "$SELF")")
LOGIN_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

log() { echo "hosts: $*" >&2; }
err() { echo "hosts: ERROR: $*" >&2; }

check_name() {
	if ! [[ $NAME =~ ^[A-Za-z0-9][A-Za-z0-9-]{0,30}$ ]]; then
		err "RSAG_HOSTS=$NAME: want letters, digits and '-' (at most 31)"
		exit 2
	fi
}

need_root() {
	if [[ $(id -u) -ne 0 ]]; then
		err "must run as root (it creates network, UTS, IPC and mount namespaces)"
		exit 1
	fi
}

# install_tools: ip (iproute2), nsenter, unshare (util-linux) and mount,
# from the distribution's packages when missing.
install_tools() {
	local missing=() c
	for c in ip nsenter unshare setsid mount umount; do
		command -v "$c" >/dev/null 2>&1 || missing+=("$c")
	done
	[[ ${#missing[@]} -eq 0 ]] && return 0
	if ! command -v apt-get >/dev/null 2>&1; then
		err "missing ${missing[*]}: install iproute2 and util-linux"
		exit 1
	fi
	log "installing iproute2, util-linux and mount (missing: ${missing[*]})"
	export DEBIAN_FRONTEND=noninteractive
	if ! { apt-get update -q && apt-get install -y -q iproute2 util-linux mount; } >&2; then
		err "apt-get failed installing iproute2 util-linux mount"
		exit 1
	fi
}

netns() { echo "$NAME-$1"; }                        # HOST: its netns name
hosts_of() { cat "$STATE/hosts.list" 2>/dev/null; } # this instance's hosts

addr_of() { # HOST
	case $1 in
	head) echo "$HEAD_ADDR" ;;
	node*) echo "$SUBNET.${1#node}" ;;
	esac
}

# holder HOST: the pid of HOST's holder if it is alive (and is the process
# that was started: same start time); empty otherwise.
holder() {
	local pid started
	read -r pid started 2>/dev/null <"$STATE/$1.pid" || return 0
	[[ -n $pid && -n $started && $(start_time "$pid") == "$started" ]] && echo "$pid"
}

# enter HOST: sets ENTER to the nsenter words that enter HOST's namespaces.
enter() {
	local h=$1 pid
	if ! grep -qx "$h" <(hosts_of); then
		err "no host $h in instance $NAME (hosts: $(hosts_of | paste -sd' '); is it up? see '$0 status')"
		return 1
	fi
	pid=$(holder "$h")
	if [[ -z $pid ]]; then
		err "host $h of instance $NAME is down (its holder process is gone): run '$0 down' and '$0 up'"
		return 1
	fi
	ENTER=(nsenter --net="/proc/$pid/ns/net" --uts="/proc/$pid/ns/uts" --ipc="/proc/$pid/ns/ipc" --mount="/proc/$pid/ns/mnt")
}

start_time() { # PID: its start time in clock ticks since boot ("" if gone)
	local stat f
	{ read -r stat <"/proc/$1/stat"; } 2>/dev/null || return 0
	# Field 22; the name (field 2) may hold spaces, so count after its ")".
	read -ra f <<<"${stat##*) }"
	echo "${f[19]}"
}

# pids_on HOST: live processes in HOST's network or mount namespace (its
# holder among them), except this script and its ancestors.
pids_on() {
	local h=$1 net="" mnt="" keep=" " p=$$ d pid k v ppid
	pid=$(holder "$h")
	if [[ -n $pid ]]; then
		net=$(readlink "/proc/$pid/ns/net" 2>/dev/null)
		mnt=$(readlink "/proc/$pid/ns/mnt" 2>/dev/null)
	elif [[ -e /run/netns/$(netns "$h") ]]; then
		net=$(stat -L -c %i "/run/netns/$(netns "$h")" 2>/dev/null)
		[[ -n $net ]] && net="net:[$net]"
	fi
	[[ -z $net && -z $mnt ]] && return 0
	while [[ -n $p && $p -gt 1 ]]; do
		keep+="$p "
		# read, not awk: no process per ancestor (this runs in loops).
		ppid=""
		{ while read -r k v; do [[ $k == PPid: ]] && { ppid=$v; break; }; done <"/proc/$p/status"; } 2>/dev/null
		p=$ppid
	done
	# One stat over every process (a loop of readlinks is slow).
	stat -L -c '%i %n' /proc/[0-9]*/ns/net /proc/[0-9]*/ns/mnt 2>/dev/null |
		awk -v net="${net//[^0-9]/}" -v mnt="${mnt//[^0-9]/}" -v keep="$keep" '
			($1 == net && $2 ~ /\/net$/) || ($1 == mnt && $2 ~ /\/mnt$/) {
				split($2, part, "/")
				if (index(keep, " " part[3] " ") == 0) print part[3]
			}' | sort -un
	return 0 # stat fails on processes that ended meanwhile
}

# all_hosts: every host of the instance that has anything left: the list,
# and whatever netns or holder exists (a half-made instance).
all_hosts() {
	{
		hosts_of
		local f
		for f in /run/netns/"$NAME"-* "$STATE"/*.pid; do
			[[ -e $f ]] || continue
			f=${f#/run/netns/"$NAME"-}
			f=${f##*/}
			echo "${f%.pid}"
		done
	} | grep -E '^(head|node[0-9]+)$' | sort -u
}

# ------------------------------------------------------------------- down ---

kill_all() { # SIGNAL HOST...: signal every process on the hosts; echo the pids
	local sig=$1 h pids=""
	shift
	for h in "$@"; do pids+="$(pids_on "$h" | tr '\n' ' ')"; done
	# shellcheck disable=SC2086
	[[ -n ${pids// /} ]] && kill "-$sig" $pids 2>/dev/null
	echo "$pids"
}

do_down() {
	local hosts h i left
	mapfile -t hosts < <(all_hosts)
	if [[ ${#hosts[@]} -gt 0 ]]; then
		# Processes first: a namespace lives as long as one of them does.
		left=$(kill_all TERM "${hosts[@]}")
		for ((i = 0; i < 25 && ${#left} > 0; i++)); do
			sleep 0.2
			left=$(for h in "${hosts[@]}"; do pids_on "$h"; done | tr '\n' ' ')
			left=${left// /}
		done
		if [[ -n $left ]]; then
			for ((i = 0; i < 10; i++)); do
				left=$(kill_all KILL "${hosts[@]}")
				[[ -z ${left// /} ]] && break
				sleep 0.2
			done
		fi
		for h in "${hosts[@]}"; do
			[[ -e /run/netns/$(netns "$h") ]] && ip netns delete "$(netns "$h")"
		done
	fi
	rm -rf --one-file-system "$STATE"
	left=$(all_hosts | tr '\n' ' ')
	if [[ -n ${left// /} ]]; then
		err "instance $NAME: hosts still present after down: $left"
		return 1
	fi
	return 0
}

# --------------------------------------------------------------------- up ---

# shares: the directories every host sees, resolved, one a line.
shares() {
	local d
	{
		echo "$REPO"
		for d in "${SHARES[@]}"; do echo "$d"; done
		if [[ -n ${RSAG_HOSTS_SHARE:-} ]]; then tr ':' '\n' <<<"$RSAG_HOSTS_SHARE"; fi
	} | while IFS= read -r d; do
		[[ -z $d ]] && continue
		realpath -e "$d" 2>/dev/null || { err "--share $d: no such directory"; echo "!"; }
	done | sort -u
}

# hold HOST: run inside HOST's new UTS, IPC and mount namespaces: set the
# host up, then become its holder. Shared directories under /tmp or /dev/shm
# are bound aside before the tmpfs hides them, then bound back.
hold() {
	local h=$1 d i=0 aside dirs
	set -e
	hostname "$h"
	mount --bind "$STATE/etc-hosts" /etc/hosts
	mapfile -t dirs <"$STATE/shares"
	for d in "${dirs[@]}"; do
		aside=$STATE/aside/$h.$i
		mkdir -p "$aside"
		mount --bind "$d" "$aside"
		i=$((i + 1))
	done
	mount -t tmpfs -o mode=1777 "tmp-$h" /tmp
	mount -t tmpfs -o mode=1777 "shm-$h" /dev/shm
	i=0
	for d in "${dirs[@]}"; do
		aside=$STATE/aside/$h.$i
		mkdir -p "$d"
		mount --bind "$aside" "$d"
		umount "$aside"
		i=$((i + 1))
	done
	cd /
	echo "$$ $(start_time $$)" >"$STATE/$h.pid.new"
	mv "$STATE/$h.pid.new" "$STATE/$h.pid"
	exec -a "rsag-host-$NAME-$h" sleep infinity
}

start_host() { # HOST: its netns, and its holder started (not waited for)
	local h=$1
	ip netns add "$(netns "$h")" || return 1
	ip -n "$(netns "$h")" link set lo up || return 1
	setsid nsenter --net="/run/netns/$(netns "$h")" \
		unshare --uts --ipc --mount --propagation private "$SELF" __hold "$h" \
		</dev/null >"$STATE/$h.log" 2>&1 &
}

wait_host() { # HOST: until its holder is up (bounded)
	local h=$1 i
	for ((i = 0; i < 100; i++)); do
		[[ -n $(holder "$h") ]] && return 0
		sleep 0.05
	done
	err "host $h did not come up:"
	cat "$STATE/$h.log" >&2
	return 1
}

do_up() {
	local nodes=$1 want h i
	if ! [[ $nodes =~ ^[1-9][0-9]*$ ]] || ((nodes > MAX_NODES)); then
		err "--nodes $nodes: want 1 to $MAX_NODES"
		return 2
	fi
	install_tools
	local sh
	sh=$(shares) || return 2
	if grep -qx '!' <<<"$sh"; then return 2; fi
	want=$(printf 'nodes %s\n%s\n' "$nodes" "$sh")
	if [[ -r $STATE/config && $(cat "$STATE/config") == "$want" ]] && all_up; then
		log "instance $NAME already up"
		return 0
	fi
	do_down >/dev/null || return 1
	mkdir -p "$STATE/aside"
	echo "$sh" >"$STATE/shares"
	{
		echo "head"
		for ((i = 1; i <= nodes; i++)); do echo "node$i"; done
	} >"$STATE/hosts.list"
	{
		echo "127.0.0.1 localhost"
		for h in $(hosts_of); do echo "$(addr_of "$h") $h"; done
	} >"$STATE/etc-hosts"
	if [[ -n ${RSAG_HOSTS_OWNER:-} ]]; then
		# Renamed into place: gc, running meanwhile, never reads half of it.
		echo "$RSAG_HOSTS_OWNER $(start_time "$RSAG_HOSTS_OWNER")" >"$STATE/owner.new"
		mv "$STATE/owner.new" "$STATE/owner"
	fi
	# Every holder is started before any is waited for: on a loaded machine
	# each takes a second or more to set its host up.
	for h in $(hosts_of); do
		start_host "$h" || { err "making host $h failed"; return 1; }
	done
	for h in $(hosts_of); do
		wait_host "$h" || { err "making host $h failed"; return 1; }
	done
	# The bridge lives in head's netns, so this machine's network never sees it.
	local H
	H=$(netns head)
	if ! ip -n "$H" link add br0 type bridge 2>/dev/null; then
		err "cannot create a bridge in a network namespace: the kernel needs bridge support (modprobe bridge)"
		return 1
	fi
	ip -n "$H" link set br0 up && ip -n "$H" addr add "$HEAD_ADDR/24" dev br0 || return 1
	for ((i = 1; i <= nodes; i++)); do
		local N
		N=$(netns "node$i")
		if ! ip -n "$H" link add "veth$i" type veth peer name eth0 netns "$N"; then
			err "cannot create a veth pair (kernel module veth) for node$i"
			return 1
		fi
		ip -n "$H" link set "veth$i" master br0 up &&
			ip -n "$N" addr add "$(addr_of "node$i")/24" dev eth0 &&
			ip -n "$N" link set eth0 up || return 1
	done
	echo "$want" >"$STATE/config"
	# The bridge forwards once its ports are up: wait (bounded) until every
	# node has a working address.
	for ((i = 0; i < 50; i++)); do
		all_up && return 0
		sleep 0.1
	done
	err "hosts are not up after 5 s:"
	do_status >&2
	return 1
}

# ----------------------------------------------------------------- status ---

# is_up HOST: its holder lives, it has its address, and its links are up.
is_up() {
	local h=$1 addrs links
	# Captured, not piped into grep -q: with pipefail an early exit of grep
	# makes the pipe fail at random.
	addrs=$(ip -n "$(netns "$h")" -o addr show 2>/dev/null)
	links=$(ip -n "$(netns "$h")" -o link show 2>/dev/null | grep -v ' lo:')
	enter "$h" 2>/dev/null && [[ $addrs == *"inet $(addr_of "$h")/"* && $links == *"state UP"* ]]
}

# all_up: every host of the instance is up. It is status without counting
# each host's processes, which is most of status's time (one stat over
# every process of the machine per host).
all_up() {
	local h
	[[ -r $STATE/hosts.list && -r $STATE/config ]] || return 1
	for h in $(hosts_of); do
		is_up "$h" || return 1
	done
}

do_status() {
	local ok=0 h n
	if [[ ! -r $STATE/hosts.list ]]; then
		echo "instance $NAME: not up"
		return 1
	fi
	for h in $(hosts_of); do
		n=$(pids_on "$h" | wc -l)
		if is_up "$h"; then
			printf '%-8s %-14s up    %d processes\n' "$h" "$(addr_of "$h")" "$n"
		else
			printf '%-8s %-14s DOWN  %d processes\n' "$h" "$(addr_of "$h")" "$n"
			ok=1
		fi
	done
	[[ -r $STATE/config ]] || ok=1
	return $ok
}

do_gc() {
	local d owner pid started
	for d in "$BASE"/*/; do
		[[ -r $d/owner ]] || continue
		read -r pid started <"$d/owner"
		if [[ -z $pid || -z ${started:-} || $(start_time "$pid") != "$started" ]]; then
			owner=$(basename "$d")
			log "taking down instance $owner (its owner $pid is gone)"
			RSAG_HOSTS=$owner "$SELF" down || true
		fi
	done
}

# ------------------------------------------------------------------- main ---

check_name
cmd=${1:-}
shift || true
case $cmd in
up)
	need_root
	nodes=2
	SHARES=()
	while [[ $# -gt 0 ]]; do
		case $1 in
		--nodes) nodes=${2:-}; shift 2 ;;
		--nodes=*) nodes=${1#--nodes=}; shift ;;
		--share) SHARES+=("${2:-}"); shift 2 ;;
		--share=*) SHARES+=("${1#--share=}"); shift ;;
		*) err "up: unknown argument $1 (want --nodes N, --share DIR)"; exit 2 ;;
		esac
	done
	if ! do_up "$nodes"; then
		err "up failed; taking the half-made instance $NAME down"
		do_down >/dev/null
		exit 1
	fi
	;;
down) need_root; do_down ;;
status) do_status ;;
on)
	[[ $# -ge 2 ]] || { err "usage: $0 on HOST CMD..."; exit 2; }
	h=$1
	shift
	enter "$h" || exit 255 # ssh's status for a connection failure
	exec "${ENTER[@]}" --wd="${HOME:-/root}" -- env -i HOME="${HOME:-/root}" PATH="$LOGIN_PATH" \
		USER="$(id -un)" LOGNAME="$(id -un)" SHELL=/bin/sh LANG="${LANG:-C.UTF-8}" /bin/sh -c "$*"
	;;
exec)
	[[ $# -ge 2 ]] || { err "usage: $0 exec HOST CMD [ARG]..."; exit 2; }
	h=$1
	shift
	enter "$h" || exit 255
	exec "${ENTER[@]}" --wd="$PWD" -- "$@"
	;;
pids)
	[[ $# -eq 1 ]] || { err "usage: $0 pids HOST"; exit 2; }
	pids_on "$1"
	;;
env)
	echo "export RSAG_HOSTS='$NAME'"
	echo "export OMPI_MCA_plm_rsh_agent='$SELF on'"
	# Tree spawn would have node1 start node2's daemon from inside node1,
	# where the other hosts' namespace files are not mounted.
	echo "export OMPI_MCA_plm_rsh_no_tree_spawn=1"
	;;
gc) need_root; do_gc ;;
__hold) hold "$1" ;;
*)
	echo "usage: $0 up [--nodes N] [--share DIR]... | down | status | on HOST CMD... | exec HOST CMD... | pids HOST | env | gc" >&2
	exit 2
	;;
esac
