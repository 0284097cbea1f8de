// Package hostfacts owns every read of a host's facts: the read-only
// scripts hybridctl runs on a host to learn about it (Linux sh and Windows
// PowerShell each), their parsed results, the marker protocol that cuts a
// script's output into sections, and the sampling of a host's clock
// against this machine's with the one clock limit (MaxClockSkew).
//
// There are three reads, each a Gather function over the transport:
//
//   - GatherHost: a host before anything is installed (OS, identity, swap,
//     time, name resolution, ports), which preflight's checks read;
//   - GatherInstalled: what a host has installed (versions, configuration
//     files, kernel settings), which inventory and diff compare with the
//     spec;
//   - GatherNode: a cluster node at run time (services, runtime, kubelet
//     log, API reachability, CNI files, overlay tables), which node
//     diagnose's checks read.
//
// The packages that read them (preflight, inventory, diagnose) never run a
// script of their own.
//
// The protocol: a script prints each section as
//
//	@@MARKER begin NAME
//	...the section's content...
//	@@MARKER end NAME RC
//
// where MARKER is random for each run (NewMarker), so that nothing the host
// prints (a login banner, a log line, a file) can open, close or forge a
// section; RC is the exit status of the section's last command, 0 to 255
// (PowerShell sections report 0). The end line follows a line break of its own, so
// content without a final newline cannot hide it.
package hostfacts

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Limits of one output: a host that prints more is not believed beyond
// them.
const (
	MaxSections     = 256
	MaxSectionBytes = 4 << 20
)

// NewMarker returns a marker for one run: "hybridctl-" and 24 random hex
// digits from crypto/rand.
func NewMarker() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (it aborts the program instead)
	return "hybridctl-" + hex.EncodeToString(b)
}

// ValidMarker refuses a marker a script could not carry as one plain word
// (a script embeds it literally): only letters, digits and '-', at least 8
// of them. It checks the form only: NewMarker's randomness is what keeps a
// host from forging a section.
func ValidMarker(marker string) error {
	if len(marker) < 8 {
		return fmt.Errorf("marker %q is shorter than 8 characters", marker)
	}
	for _, r := range marker {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
			return fmt.Errorf("marker %q holds %q: only letters, digits and '-'", marker, r)
		}
	}
	return nil
}

// BeginLine is the line that opens section name.
func BeginLine(marker, name string) string { return "@@" + marker + " begin " + name }

// EndLine is the line that closes section name with exit status rc.
func EndLine(marker, name string, rc int) string {
	return "@@" + marker + " end " + name + " " + strconv.Itoa(rc)
}

// ShellFunc is POSIX sh defining s: `s NAME` closes the open section (with
// the exit status of the command before it) and opens NAME; `s` alone only
// closes. A script is a list of `s NAME; COMMAND` lines ending with `s`.
func ShellFunc(marker string) string {
	return `m='` + marker + `'; hf_cur=
s() { hf_rc=$?; [ -z "$hf_cur" ] || printf '\n@@%s end %s %s\n' "$m" "$hf_cur" "$hf_rc"; hf_cur=$1; [ -z "$1" ] || printf '\n@@%s begin %s\n' "$m" "$1"; }
`
}

// PowerShellFunc is ShellFunc for PowerShell: `s NAME` and `s` likewise
// (the end line's RC is 0).
func PowerShellFunc(marker string) string {
	return `$hfM = '` + marker + `'; $global:hfCur = ''
function s($n) { if ($global:hfCur) { Write-Output ''; Write-Output "@@$hfM end $($global:hfCur) 0" }; $global:hfCur = $n; if ($n) { Write-Output ''; Write-Output "@@$hfM begin $n" } }
`
}

// Section is one section of an output.
type Section struct {
	Name string
	Out  string
	// RC is the exit status the end line reported, -1 when not closed.
	RC int
	// Closed is false when the output ended before the section's end line.
	Closed bool
}

// ErrNoSections is Split's error for an output without a single section
// of this run (not a POSIX shell, the output lost, the wrong marker).
var ErrNoSections = errors.New("no section of this run's marker in the output")

// Split cuts out at the marker's lines. Text outside sections (a login
// banner) is ignored; a line that looks like a marker line without this
// run's marker, or an end line naming another section, is content. An
// output with no section, a section name twice, more than MaxSections
// sections or a section over MaxSectionBytes is an error: the host is not
// believed. A section the output ends in is returned with Closed false.
func Split(out []byte, marker string) ([]Section, error) {
	if err := ValidMarker(marker); err != nil {
		return nil, err
	}
	begin, end := "@@"+marker+" begin ", "@@"+marker+" end "
	var secs []Section
	seen := map[string]bool{}
	var cur *Section
	var body strings.Builder
	open := func(name string) error {
		if seen[name] {
			return fmt.Errorf("section %q appears twice", name)
		}
		if len(secs) >= MaxSections {
			return fmt.Errorf("more than %d sections", MaxSections)
		}
		seen[name] = true
		cur = &Section{Name: name, RC: -1}
		body.Reset()
		return nil
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64*1024), MaxSectionBytes)
	for sc.Scan() {
		line := strings.TrimSuffix(sc.Text(), "\r")
		switch {
		case strings.HasPrefix(line, begin):
			if cur != nil {
				cur.Out = body.String()
				secs = append(secs, *cur)
				cur = nil
			}
			if err := open(strings.TrimPrefix(line, begin)); err != nil {
				return secs, err
			}
		case strings.HasPrefix(line, end) && cur != nil:
			rest := strings.TrimPrefix(line, end)
			i := strings.LastIndexByte(rest, ' ')
			rc := -1
			if i >= 0 {
				rc = exitStatus(rest[i+1:])
			}
			if rc < 0 || rest[:i] != cur.Name {
				body.WriteString(line + "\n")
				continue
			}
			cur.RC, cur.Closed = rc, true
			// The end line follows a line break of its own; take it off.
			cur.Out = strings.TrimSuffix(body.String(), "\n")
			secs = append(secs, *cur)
			cur = nil
			body.Reset()
		case cur != nil:
			if body.Len()+len(line) > MaxSectionBytes {
				return secs, fmt.Errorf("section %q is over %d bytes", cur.Name, MaxSectionBytes)
			}
			body.WriteString(line + "\n")
		}
	}
	if err := sc.Err(); err != nil {
		return secs, err
	}
	if cur != nil {
		cur.Out = body.String()
		secs = append(secs, *cur)
	}
	if len(secs) == 0 {
		return nil, ErrNoSections
	}
	return secs, nil
}

// exitStatus reads an end line's RC: 0 to 255 in decimal digits, -1 for
// anything else.
func exitStatus(s string) int {
	if s == "" || len(s) > 3 || strings.Trim(s, "0123456789") != "" {
		return -1
	}
	n, err := strconv.Atoi(s)
	if err != nil || n > 255 {
		return -1
	}
	return n
}

// ByName indexes sections by name (Split guarantees each name once).
func ByName(secs []Section) map[string]Section {
	m := make(map[string]Section, len(secs))
	for _, s := range secs {
		m[s.Name] = s
	}
	return m
}
