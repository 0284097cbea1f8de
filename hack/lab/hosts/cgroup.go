package hosts

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cgroupRoot is where the host mounts its cgroup hierarchies.
const cgroupRoot = "/sys/fs/cgroup"

// Hierarchy is one mounted cgroup hierarchy and this process's place in it.
type Hierarchy struct {
	// Mount is its mount point (/sys/fs/cgroup/cpu, .../systemd, .../unified).
	Mount string
	// Self is this process's cgroup in it ("/" or "/process_api/...").
	Self string
}

// ParseProcCgroup parses /proc/self/cgroup into hierarchies under root: a
// v1 line "ID:CONTROLLERS:PATH" maps to root/CONTROLLERS (name=X to root/X),
// the v2 line "0::PATH" to root/unified (hybrid mode) or root (pure v2).
func ParseProcCgroup(data, root string, exists func(string) bool) ([]Hierarchy, error) {
	var out []Hierarchy
	sc := bufio.NewScanner(strings.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 || !strings.HasPrefix(parts[2], "/") {
			return nil, fmt.Errorf("/proc/self/cgroup: cannot read %q", line)
		}
		var mount string
		if parts[1] == "" {
			mount = filepath.Join(root, "unified")
			if !exists(mount) {
				mount = root
			}
		} else {
			mount = filepath.Join(root, strings.TrimPrefix(parts[1], "name="))
		}
		if !exists(mount) {
			continue
		}
		out = append(out, Hierarchy{Mount: mount, Self: parts[2]})
	}
	return out, sc.Err()
}

// hierarchies returns this process's cgroup hierarchies.
func hierarchies() ([]Hierarchy, error) {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	return ParseProcCgroup(string(data), cgroupRoot, func(p string) bool {
		st, err := os.Stat(p)
		return err == nil && st.IsDir()
	})
}

// cgroupV1 reports whether the host runs cgroup v1 hierarchies.
func cgroupV1() bool {
	_, err := os.Stat(filepath.Join(cgroupRoot, "cpu", "cgroup.procs"))
	return err == nil
}

// makeCgroup creates dir and its missing parents; in a cpuset hierarchy it
// copies cpuset.cpus and cpuset.mems down so that tasks can join.
func makeCgroup(dir string) error {
	if filepath.Dir(dir) == dir {
		return nil
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		if err := makeCgroup(filepath.Dir(dir)); err != nil {
			return err
		}
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("cgroup %s: %w", dir, err)
		}
	}
	for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
		mine := filepath.Join(dir, f)
		if _, err := os.Stat(mine); err != nil {
			continue
		}
		if cur, _ := os.ReadFile(mine); strings.TrimSpace(string(cur)) != "" {
			continue
		}
		parent, err := os.ReadFile(filepath.Join(filepath.Dir(dir), f))
		if err != nil {
			return fmt.Errorf("cgroup %s: %w", dir, err)
		}
		if err := os.WriteFile(mine, parent, 0o644); err != nil {
			return fmt.Errorf("cgroup %s: %w", mine, err)
		}
	}
	return nil
}

// cgroupPids lists the processes in dir and every cgroup below it.
func cgroupPids(dir string) []int {
	var pids []int
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		data, err := os.ReadFile(filepath.Join(p, "cgroup.procs"))
		if err != nil {
			return nil
		}
		for _, f := range strings.Fields(string(data)) {
			if n, err := strconv.Atoi(f); err == nil && n > 1 {
				pids = append(pids, n)
			}
		}
		return nil
	})
	return pids
}

// killCgroup kills every process in dir and below (frozen first where the
// hierarchy is the freezer, so nothing forks away meanwhile), waits for them
// to go, then removes the cgroup directories bottom-up.
func killCgroup(ctx context.Context, dir string) error {
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	freezer := filepath.Join(dir, "freezer.state")
	frozen := os.WriteFile(freezer, []byte("FROZEN"), 0o644) == nil
	deadline := time.Now().Add(60 * time.Second)
	for {
		pids := cgroupPids(dir)
		if len(pids) == 0 {
			break
		}
		for _, p := range pids {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		if frozen {
			_ = os.WriteFile(freezer, []byte("THAWED"), 0o644)
			frozen = false
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cgroup %s: processes %v still there after SIGKILL", dir, pids)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	if frozen {
		_ = os.WriteFile(freezer, []byte("THAWED"), 0o644)
	}
	return removeCgroupTree(ctx, dir)
}

// removeCgroupTree removes empty cgroup directories bottom-up (cgroupfs
// refuses os.RemoveAll: its files cannot be unlinked, only the
// directories removed).
func removeCgroupTree(ctx context.Context, dir string) error {
	var dirs []string
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
	for _, d := range dirs {
		var err error
		for i := 0; i < 50; i++ { // a cgroup stays busy briefly after its last task exits
			if err = syscall.Rmdir(d); err == nil || errors.Is(err, syscall.ENOENT) {
				err = nil
				break
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
		}
		if err != nil {
			return fmt.Errorf("removing cgroup %s: %w", d, err)
		}
	}
	return nil
}
