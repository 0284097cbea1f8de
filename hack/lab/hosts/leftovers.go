package hosts

import (
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

// KindProcess is a process of the lab found outside its cgroups (only
// Leftovers reports it; Up never starts one there).
const KindProcess = "process"

// Scope says what Leftovers looks for: one lab (Name set) or any.
type Scope struct {
	// ClustersDir holds the labs' directories (~/.cache/hybridctl/lab/clusters).
	ClustersDir string
	// Name is the lab's cluster name; empty: every lab.
	Name string
	// Machines are the lab's node names (for nspawn's run directories).
	Machines []string
}

// Leftovers lists what of the lab (or of every lab) is still on the host:
// cgroups, bridges, marked /etc/hosts lines, nspawn run directories, lab
// directories, mounts and processes. Empty after a clean lab down.
func Leftovers(sc Scope) []Resource {
	var out []Resource
	cgName := CgroupPrefix + sc.Name
	match := func(base string) bool {
		if sc.Name == "" {
			return strings.HasPrefix(base, CgroupPrefix)
		}
		return base == cgName
	}
	entries, _ := os.ReadDir(cgroupRoot)
	for _, e := range entries {
		top := filepath.Join(cgroupRoot, e.Name())
		_ = filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return nil
			}
			if strings.Count(strings.TrimPrefix(p, top), "/") > 4 {
				return filepath.SkipDir
			}
			if p != top && match(d.Name()) {
				out = append(out, Resource{KindCgroup, p})
				return filepath.SkipDir
			}
			return nil
		})
	}
	links, _ := os.ReadDir("/sys/class/net")
	for _, l := range links {
		n := l.Name()
		if sc.Name == "" && strings.HasPrefix(n, BridgePrefix) || sc.Name != "" && n == (&Lab{Name: sc.Name}).Bridge() {
			out = append(out, Resource{KindLink, n})
		}
	}
	if data, err := os.ReadFile("/etc/hosts"); err == nil {
		seen := map[string]bool{}
		for _, line := range MarkedHostsLines(string(data)) {
			i := strings.Index(line, " "+HostsMarkerPrefix)
			marker := line[i+1:]
			if (sc.Name == "" || marker == HostsMarkerPrefix+sc.Name) && !seen[marker] {
				seen[marker] = true
				out = append(out, Resource{KindHosts, marker})
			}
		}
	}
	for _, m := range sc.Machines {
		if len(nspawnRunDirs(m)) > 0 {
			out = append(out, Resource{KindNspawnRun, m})
		}
	}
	if sc.Name == "" {
		locks, _ := filepath.Glob("/run/systemd/nspawn/locks/inode-*")
		for _, l := range locks {
			out = append(out, Resource{"file", l})
		}
	}
	var dirs []string
	if sc.Name != "" {
		dirs = []string{filepath.Join(sc.ClustersDir, sc.Name)}
	} else if es, err := os.ReadDir(sc.ClustersDir); err == nil {
		for _, e := range es {
			dirs = append(dirs, filepath.Join(sc.ClustersDir, e.Name()))
		}
	}
	for _, d := range dirs {
		if _, err := os.Stat(d); err == nil {
			out = append(out, Resource{KindDir, d})
		}
	}
	for _, mp := range mountsUnder(filepath.Join(sc.ClustersDir, sc.Name)) {
		out = append(out, Resource{"mount", mp})
	}
	out = append(out, labProcesses(sc)...)
	return out
}

// labProcesses finds processes whose command line names a lab's directory
// or bridge.
func labProcesses(sc Scope) []Resource {
	needles := []string{filepath.Join(sc.ClustersDir, sc.Name)}
	if sc.Name != "" {
		needles = append(needles, "--interface="+(&Lab{Name: sc.Name}).Bridge(), "--network-bridge="+(&Lab{Name: sc.Name}).Bridge())
	} else {
		needles = append(needles, "--interface="+BridgePrefix, "--network-bridge="+BridgePrefix)
	}
	self := os.Getpid()
	var out []Resource
	ps, _ := os.ReadDir("/proc")
	var pids []int
	for _, p := range ps {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || pid == self {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		if err != nil || len(data) == 0 {
			continue
		}
		cmd := strings.ReplaceAll(string(data), "\x00", " ")
		if strings.Contains(cmd, "lab leftovers") || strings.Contains(cmd, "lab down") {
			continue
		}
		for _, n := range needles {
			if strings.Contains(cmd, n) {
				pids = append(pids, pid)
				break
			}
		}
	}
	sort.Ints(pids)
	for _, p := range pids {
		out = append(out, Resource{KindProcess, strconv.Itoa(p)})
	}
	return out
}

// killProcess kills a leftover process.
func killProcess(pid string) error {
	n, err := strconv.Atoi(pid)
	if err != nil || n <= 1 {
		return nil
	}
	if err := syscall.Kill(n, syscall.SIGKILL); err != nil && err != syscall.ESRCH {
		return err
	}
	return nil
}
