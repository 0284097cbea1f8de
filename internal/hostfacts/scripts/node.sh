# hybridctl node diagnose: the Linux node's side, read-only.
# Arguments: MARKER API_HOST API_PORT. They are data: used only as "$n",
# never inside a string a shell evaluates again.
# Output: sections "@@MARKER begin NAME" ... "@@MARKER end NAME RC".
# The transport runs it with set -e; a failing probe is a section's RC here.
set +e
marker=$1
api_host=$2
api_port=$3
PATH=$PATH:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export LC_ALL=C

begin() { printf '\n@@%s begin %s\n' "$marker" "$1"; }
end() { printf '\n@@%s end %s %s\n' "$marker" "$1" "$2"; }
section() { # section NAME COMMAND...: the command's output and exit code
	name=$1
	shift
	begin "$name"
	"$@" 2>&1
	end "$name" $?
}
missing() { # missing NAME TOOL
	begin "$1"
	echo "$2: not found"
	end "$1" 127
}
have() { command -v "$1" >/dev/null 2>&1; }

section clock date +%s%N
if have timedatectl; then
	section time-sync timedatectl show -p NTPSynchronized
else
	missing time-sync timedatectl
fi

if have systemctl; then
	section services systemctl show kubelet containerd -p Id -p LoadState -p ActiveState -p SubState -p UnitFileState --no-pager
else
	missing services systemctl
fi

if have crictl; then
	section crictl crictl --runtime-endpoint unix:///run/containerd/containerd.sock --timeout 5s info
else
	missing crictl crictl
fi

if have journalctl; then
	section kubelet-log journalctl -u kubelet -n 300 --no-pager -o short-unix
else
	missing kubelet-log journalctl
fi

# shellcheck disable=SC2317 # called through section
api_probe() {
	if have getent; then
		getent ahostsv4 -- "$api_host" | head -n 3
	fi
	if have bash; then
		# The host and port are bash's $1 and $2: expanded once, as words.
		# shellcheck disable=SC2016
		timeout 5 bash -c 'exec 3<>"/dev/tcp/$1/$2" && echo connected' hybridctl "$api_host" "$api_port"
	elif have nc; then
		nc -z -w 5 -- "$api_host" "$api_port" && echo connected
	else
		echo "neither bash nor nc to test a TCP connection"
		return 127
	fi
}
section api api_probe

cni_dir=/etc/cni/net.d
begin cni-dir
if [ -d "$cni_dir" ]; then
	ls -1A "$cni_dir"
	end cni-dir 0
else
	echo "$cni_dir: no such directory"
	end cni-dir 2
fi
for f in "$cni_dir"/*.conf "$cni_dir"/*.conflist "$cni_dir"/*.json; do
	[ -f "$f" ] || continue
	case "$f" in *'
'*) continue ;; esac
	section "cni-file $f" head -c 65536 "$f"
done

if have ip; then
	section links ip -j -d link show
	section addrs ip -j -4 addr show
	section routes ip -j -4 route show table main
	for dev in $(ip -o link show type vxlan 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1); do
		case "$dev" in *[!A-Za-z0-9._-]*) continue ;; esac
		section "neigh $dev" ip -j -4 neigh show dev "$dev"
		if have bridge; then
			section "fdb $dev" bridge -j fdb show dev "$dev"
		fi
	done
else
	missing links ip
fi
section udp cat /proc/net/udp
exit 0
