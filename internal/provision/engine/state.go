package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/hybridctl/hybridctl/internal/atomicfile"
)

// State kinds and versions of the state file.
const (
	stateAPIVersion = "hybridctl.dev/v1alpha1"
	stateKind       = "ApplyState"
)

// State records which phases finished on which host. It holds names and
// times only, never command output or secrets, so it is safe to keep next
// to the spec; it is still written 0600.
type State struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Cluster is the spec's metadata.name; a state file of another cluster
	// is refused.
	Cluster string `json:"cluster"`
	// Hosts maps a host name to the phases finished there.
	Hosts map[string]map[string]PhaseRecord `json:"hosts"`
}

// PhaseRecord is one finished phase on one host.
type PhaseRecord struct {
	FinishedAt time.Time `json:"finishedAt"`
	// AlreadyInPlace is set when the phase's check found its effect in
	// place and it was not run. (The reason is shown in the output but not
	// kept: the state file holds no free text, so nothing a phase prints can
	// end up in it.)
	AlreadyInPlace bool `json:"alreadyInPlace,omitempty"`
}

// NewState returns an empty state for cluster.
func NewState(cluster string) *State {
	return &State{APIVersion: stateAPIVersion, Kind: stateKind, Cluster: cluster, Hosts: map[string]map[string]PhaseRecord{}}
}

// Done reports whether phase finished on host.
func (s *State) Done(host, phase string) bool {
	_, ok := s.Hosts[host][phase]
	return ok
}

// Record marks phase finished on host.
func (s *State) Record(host, phase string, r PhaseRecord) {
	if s.Hosts[host] == nil {
		s.Hosts[host] = map[string]PhaseRecord{}
	}
	s.Hosts[host][phase] = r
}

// Forget removes every record of host (reset does this).
func (s *State) Forget(host string) { delete(s.Hosts, host) }

// Finished returns the phases finished on host, sorted.
func (s *State) Finished(host string) []string {
	var out []string
	for p := range s.Hosts[host] {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// LoadState reads the state file at path. A missing file is an empty state.
func LoadState(path, cluster string) (*State, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return NewState(cluster), nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading state file: %w", err)
	}
	var s State
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("state file %s: %w (delete it to start over; phases check the hosts before acting)", path, err)
	}
	if s.APIVersion != stateAPIVersion || s.Kind != stateKind {
		return nil, fmt.Errorf("state file %s: apiVersion %q kind %q, want %s %s", path, s.APIVersion, s.Kind, stateAPIVersion, stateKind)
	}
	if s.Cluster != cluster {
		return nil, fmt.Errorf("state file %s belongs to cluster %q, not %q", path, s.Cluster, cluster)
	}
	if s.Hosts == nil {
		s.Hosts = map[string]map[string]PhaseRecord{}
	}
	return &s, nil
}

// Save writes the state to path atomically (atomicfile: temporary file in
// the same directory, fsync, rename), mode 0600, creating what is missing
// of its directory (0700) without following links; path is the user's
// (--state, or .hybridctl/ beside the spec), followed as named.
func (s *State) Save(ctx context.Context, path string) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("writing state file: %w", err)
	}
	return atomicfile.Write(ctx, path, append(data, '\n'), 0o600, atomicfile.Options{})
}
