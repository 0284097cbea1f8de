package preflight

import (
	"strings"
	"testing"

	"github.com/hybridctl/hybridctl/internal/hostfacts"
	"github.com/hybridctl/hybridctl/internal/hostfacts/hostfactstest"
)

// windowsOK are the facts of a prepared Windows worker that passes every
// check.
func windowsOK() *hostfacts.Host {
	return &hostfacts.Host{Host: winWorker.Name, WindowsBuild: "26100", WindowsInstallationType: "Server Core", ProductUUID: "u", MachineID: "m",
		TimeSynced: "yes", Clock: clockAt(0), Resolved: []string{"192.168.10.23"}, Listening: map[int]bool{}, AutoUpdate: "off", LanguageMode: "FullLanguage"}
}

// TestWindowsHostChecks: each new check on both sides, with the messages.
func TestWindowsHostChecks(t *testing.T) {
	if got := CheckHost(windowsOK(), winWorker, labExpect); len(got) != 0 {
		t.Fatalf("a good Windows node: %v", got)
	}
	for _, tc := range []struct {
		name   string
		change func(*hostfacts.Host)
		want   []string // preflight's findings, then post-prepare's after "|"
	}{
		{"constrained language", func(f *hostfacts.Host) { f.LanguageMode = "ConstrainedLanguage" },
			[]string{"error: [language-mode] PowerShell runs in ConstrainedLanguage mode for this account (AppLocker or WDAC application control)", "|"}},
		{"language mode unknown", func(f *hostfacts.Host) { f.LanguageMode = "" },
			[]string{"warning: [language-mode] could not read PowerShell's language mode", "|"}},
		{"reboot pending on a new node", func(f *hostfacts.Host) { f.RebootPending = []string{"Component Based Servicing"} },
			[]string{"warning: [reboot-pending] a reboot is pending (Component Based Servicing): prepare.ps1 stops before changing Windows features until it is done, and apply reboots the node", "|"}},
		{"reboot pending on a member", func(f *hostfacts.Host) {
			f.RebootPending = []string{"Component Based Servicing", "Windows Update"}
			f.KubeletConfigured = true
		},
			[]string{"warning: [reboot-pending] a reboot is pending (Component Based Servicing, Windows Update): drain the node, reboot it, uncordon it", "|"}},
		{"updates automatic by default", func(f *hostfacts.Host) { f.AutoUpdate = "on" },
			[]string{"warning: [windows-update] automatic updates are on (policy not set: the server default downloads updates and schedules their restarts)",
				"|", "error: [windows-update] automatic updates are on (policy not set"}},
		{"updates automatic by policy", func(f *hostfacts.Host) { f.AutoUpdate, f.AUOptions = "on", "4" },
			[]string{"warning: [windows-update] automatic updates are on (policy AUOptions 4, NoAutoUpdate not 1)",
				"|", "error: [windows-update] automatic updates are on (policy AUOptions 4, NoAutoUpdate not 1)"}},
		{"update policy unknown", func(f *hostfacts.Host) { f.AutoUpdate = "" },
			[]string{"warning: [windows-update] could not read the Windows Update policy", "|", "warning: [windows-update] could not read the Windows Update policy"}},
	} {
		f := windowsOK()
		tc.change(f)
		got := append(messages(CheckHost(f, winWorker, labExpect)), "|")
		got = append(got, messages(CheckPrepared(f, winWorker, labExpect))...)
		ok := len(got) == len(tc.want)
		for i := 0; ok && i < len(got); i++ {
			ok = strings.HasPrefix(got[i], tc.want[i])
		}
		if !ok {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
	// The Windows checks do not run on Linux nodes.
	f := preparedOK()
	f.LanguageMode, f.AutoUpdate, f.RebootPending = "ConstrainedLanguage", "on", []string{"Windows Update"}
	if got := CheckHost(f, linuxWorker, labExpect); len(got) != 0 {
		t.Errorf("Linux node: %v", got)
	}
}

// TestWindowsResolveLiteral: what the host script prints for an IPv4
// literal as the API host (hostfacts's TestHostWindowsResolveLiteral)
// passes the check.
func TestWindowsResolveLiteral(t *testing.T) {
	// What the literal prints parses as the resolved address.
	f := hostfactstest.ParseHost(t, winWorker, "### resolve\n192.168.10.23\n")
	x := labExpect
	x.APIName, x.APIAddresses = "192.168.10.23", []string{"192.168.10.23"}
	if got := findingsOf(CheckPrepared(f, winWorker, x), CheckAPIName); len(got) != 0 {
		t.Errorf("literal endpoint: %v", got)
	}
}
