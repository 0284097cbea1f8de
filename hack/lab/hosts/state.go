package hosts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/hybridctl/hybridctl/internal/atomicfile"
)

// Kinds of resources the lab makes. Down removes them in reverse order.
const (
	// KindDir is a directory the lab made (a node tree, the lab directory).
	KindDir = "dir"
	// KindLink is a network link (the bridge).
	KindLink = "link"
	// KindCgroup is a cgroup directory in one hierarchy; every process in
	// it is the lab's (nodes, dnsmasq, the registry) and is killed.
	KindCgroup = "cgroup"
	// KindHosts is the set of marked lines in the host's /etc/hosts.
	KindHosts = "hosts"
	// KindNspawnRun is a machine's files under /run/systemd/nspawn.
	KindNspawnRun = "nspawn-run"
)

// Resource is one thing the lab made.
type Resource struct {
	Kind string `json:"kind"`
	// Path of a directory or cgroup, the name of a link or machine, or the
	// marker of hosts lines.
	Name string `json:"name"`
}

func (r Resource) String() string { return r.Kind + " " + r.Name }

// State is the lab's record of what it made, in order.
type State struct {
	Lab       string     `json:"lab"`
	Resources []Resource `json:"resources"`
	path      string
}

// MaxStateBytes bounds the state file.
const MaxStateBytes = 1 << 20

// LoadState reads the state file at path; a missing file is an empty state.
func LoadState(path string) (*State, error) {
	s := &State{path: path}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading lab state: %w", err)
	}
	if len(data) > MaxStateBytes {
		return nil, fmt.Errorf("lab state %s: larger than %d bytes", path, MaxStateBytes)
	}
	if err := ParseState(data, s); err != nil {
		return nil, fmt.Errorf("lab state %s: %w", path, err)
	}
	return s, nil
}

// ParseState decodes and validates state file content into s.
func ParseState(data []byte, s *State) error {
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(s); err != nil {
		return err
	}
	for i, r := range s.Resources {
		if err := r.validate(); err != nil {
			return fmt.Errorf("resources[%d]: %w", i, err)
		}
	}
	return nil
}

// validate refuses a resource Down could not remove safely: a relative or
// unclean path, a cgroup outside /sys/fs/cgroup, a link not named like the
// lab's bridges.
func (r Resource) validate() error {
	switch r.Kind {
	case KindDir:
		if !filepath.IsAbs(r.Name) || filepath.Clean(r.Name) != r.Name || strings.Count(r.Name, "/") < 3 {
			return fmt.Errorf("dir %q: want a clean absolute path at least three levels deep", r.Name)
		}
	case KindCgroup:
		if filepath.Clean(r.Name) != r.Name || !strings.HasPrefix(r.Name, "/sys/fs/cgroup/") || !strings.Contains(r.Name, "/"+CgroupPrefix) {
			return fmt.Errorf("cgroup %q: want a clean path under /sys/fs/cgroup inside a %s* directory", r.Name, CgroupPrefix)
		}
	case KindLink:
		if !strings.HasPrefix(r.Name, BridgePrefix) || len(r.Name) > 15 {
			return fmt.Errorf("link %q: not a lab bridge name (%s..., at most 15 bytes)", r.Name, BridgePrefix)
		}
	case KindHosts:
		if !strings.HasPrefix(r.Name, HostsMarkerPrefix) {
			return fmt.Errorf("hosts marker %q: want it to start with %q", r.Name, HostsMarkerPrefix)
		}
	case KindNspawnRun:
		if validName(r.Name) != nil {
			return fmt.Errorf("machine %q: not a lab machine name", r.Name)
		}
	default:
		return fmt.Errorf("unknown kind %q", r.Kind)
	}
	return nil
}

// Has reports whether the state records r.
func (s *State) Has(r Resource) bool {
	for _, x := range s.Resources {
		if x == r {
			return true
		}
	}
	return false
}

// Add records r and writes the state file, before r is made.
func (s *State) Add(ctx context.Context, r Resource) error {
	if err := r.validate(); err != nil {
		return err
	}
	if s.Has(r) {
		return nil
	}
	s.Resources = append(s.Resources, r)
	return s.save(ctx)
}

// Drop forgets r once it is removed.
func (s *State) Drop(ctx context.Context, r Resource) error {
	out := s.Resources[:0]
	for _, x := range s.Resources {
		if x != r {
			out = append(out, x)
		}
	}
	s.Resources = out
	return s.save(ctx)
}

func (s *State) save(ctx context.Context) error {
	if len(s.Resources) == 0 {
		if err := os.Remove(s.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("removing lab state: %w", err)
		}
		return nil
	}
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(s.path), 0o700); err != nil {
		return fmt.Errorf("lab state: %w", err)
	}
	if err := atomicfile.Write(ctx, s.path, append(data, '\n'), 0o600, atomicfile.Options{}); err != nil {
		return fmt.Errorf("writing lab state: %w", err)
	}
	return nil
}
