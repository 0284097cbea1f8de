package hosts

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

// Down removes everything the state file records, newest first, then
// sweeps for anything of this lab the state missed (a crash between a
// step and its record cannot happen, since records come first, but a state
// file removed by hand can). It is idempotent: a second Down finds nothing.
func Down(ctx context.Context, lab *Lab, log func(string, ...any)) error {
	if log == nil {
		log = func(string, ...any) {}
	}
	st, err := LoadState(lab.StatePath())
	if err != nil {
		return err
	}
	var errs []error
	// The nodes' veth links on the bridge: the kernel removes them after
	// their network namespaces go, some time after the nodes stop. A next
	// up of the same machine names fails while one is left ("Failed to
	// add new veth interfaces: File exists"): Down waits for them.
	veths := bridgePorts(lab.Bridge())
	// Processes first, wherever they are recorded: a node must be gone
	// before its tree is removed.
	for i := len(st.Resources) - 1; i >= 0; i-- {
		if r := st.Resources[i]; r.Kind == KindCgroup {
			if err := removeResource(ctx, r, log); err != nil {
				errs = append(errs, err)
			} else if err := st.Drop(ctx, r); err != nil {
				errs = append(errs, err)
			}
		}
	}
	var machines []string
	for _, n := range lab.Nodes {
		machines = append(machines, n.Name)
	}
	sc := Scope{ClustersDir: filepath.Dir(lab.Dir), Name: lab.Name, Machines: machines}
	// Then what runs outside them: a copy or chroot of an interrupted up.
	for _, r := range labProcesses(sc) {
		_ = killProcess(r.Name)
	}
	for i := len(st.Resources) - 1; i >= 0; i-- {
		r := st.Resources[i]
		if err := removeResource(ctx, r, log); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := st.Drop(ctx, r); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	// The sweep: this lab's markers, whatever the state says.
	sweep := Leftovers(sc)
	// processes and mounts before directories
	sort.SliceStable(sweep, func(i, j int) bool { return sweep[i].Kind != KindDir && sweep[j].Kind == KindDir })
	for _, r := range sweep {
		if err := removeResource(ctx, r, log); err != nil {
			errs = append(errs, err)
		}
	}
	if err := awaitLinksGone(ctx, veths, 30*time.Second, log); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// bridgePorts lists the links enslaved to bridge (none when it is gone).
func bridgePorts(bridge string) []string {
	ents, err := os.ReadDir(filepath.Join("/sys/class/net", bridge, "brif"))
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// awaitLinksGone waits until none of links exists, deleting those still
// there after timeout.
func awaitLinksGone(ctx context.Context, links []string, timeout time.Duration, log func(string, ...any)) error {
	deadline := time.Now().Add(timeout)
	for {
		var left []string
		for _, l := range links {
			if _, err := os.Stat(filepath.Join("/sys/class/net", l)); err == nil {
				left = append(left, l)
			}
		}
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			var errs []error
			for _, l := range left {
				log("delete link %s (still there %s after its node stopped)", l, timeout)
				if _, err := run(ctx, "ip", "link", "del", l); err != nil {
					errs = append(errs, err)
				}
			}
			return errors.Join(errs...)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func removeResource(ctx context.Context, r Resource, log func(string, ...any)) error {
	switch r.Kind {
	case KindCgroup:
		if _, err := os.Stat(r.Name); err == nil {
			log("stop processes in %s", r.Name)
		}
		return killCgroup(ctx, r.Name)
	case KindLink:
		if _, err := os.Stat(filepath.Join("/sys/class/net", r.Name)); errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		log("delete link %s", r.Name)
		_, err := run(ctx, "ip", "link", "del", r.Name)
		return err
	case KindHosts:
		return editHostsFile(r.Name, nil)
	case KindNspawnRun:
		for _, d := range nspawnRunDirs(r.Name) {
			if err := os.RemoveAll(d); err != nil {
				return err
			}
		}
		return nil
	case KindProcess:
		return killProcess(r.Name)
	case "file":
		return os.Remove(r.Name)
	case "mount":
		_, err := run(ctx, "umount", "-l", r.Name)
		return err
	case KindDir:
		if _, err := os.Stat(r.Name); errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if m := mountsUnder(r.Name); len(m) > 0 {
			return fmt.Errorf("not removing %s: still mounted: %s", r.Name, strings.Join(m, ", "))
		}
		log("remove %s", r.Name)
		// nspawn's lock of a node's tree, named by its device and inode.
		if st, err := os.Stat(filepath.Join(r.Name, "root")); err == nil {
			if sys, ok := st.Sys().(*syscall.Stat_t); ok {
				_ = os.Remove(fmt.Sprintf("/run/systemd/nspawn/locks/inode-%d:%d", sys.Dev, sys.Ino))
			}
		}
		return os.RemoveAll(r.Name)
	}
	return fmt.Errorf("unknown resource %s", r)
}

// nspawnRunDirs are the per-machine directories systemd-nspawn leaves under
// /run/systemd/nspawn.
func nspawnRunDirs(machine string) []string {
	var out []string
	for _, sub := range []string{"propagate", "unix-export", "incoming"} {
		p := filepath.Join("/run/systemd/nspawn", sub, machine)
		if _, err := os.Lstat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// mountsUnder lists the host's mount points at or below dir.
func mountsUnder(dir string) []string {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	return MountsUnder(string(data), dir)
}

// MountsUnder lists the mount points at or below dir in mountinfo content.
func MountsUnder(mountinfo, dir string) []string {
	var out []string
	for _, line := range strings.Split(mountinfo, "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		mp := unescapeMount(f[4])
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			out = append(out, mp)
		}
	}
	return out
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			v := 0
			ok := true
			for _, c := range s[i+1 : i+4] {
				if c < '0' || c > '7' {
					ok = false
					break
				}
				v = v*8 + int(c-'0')
			}
			if ok {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
