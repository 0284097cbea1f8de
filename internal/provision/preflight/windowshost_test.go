package preflight

import (
	"slices"
	"strings"
	"testing"
)

// windowsOK are the facts of a prepared Windows worker that passes every
// check.
func windowsOK() *Facts {
	return &Facts{Host: winWorker.Name, WindowsBuild: "26100", WindowsInstallationType: "Server Core", ProductUUID: "u", MachineID: "m",
		TimeSynced: "yes", Clock: clockAt(0), Resolved: []string{"192.168.10.23"}, Listening: map[int]bool{}, AutoUpdate: "off", LanguageMode: "FullLanguage"}
}

// TestParseWindowsHostState: the update policy, the pending reboot and the
// language mode as the gathering script prints them, with the near misses
// of each (a NoAutoUpdate that is not exactly 1, a line that only looks
// like a reboot source, a section that never came).
func TestParseWindowsHostState(t *testing.T) {
	const head = "### windows\nCurrentBuild=26100\n"
	for _, tc := range []struct {
		name, out          string
		autoUpdate, auOpts string
		pending            []string
		languageMode       string
	}{
		{"manual", head + "### wu-policy\nNoAutoUpdate=1\nAUOptions=\n### language-mode\nFullLanguage\n", "off", "", nil, "FullLanguage"},
		{"no policy", head + "### wu-policy\nNoAutoUpdate=\nAUOptions=\n", "on", "", nil, ""},
		{"automatic by policy", head + "### wu-policy\r\nNoAutoUpdate=0\r\nAUOptions=4\r\n", "on", "4", nil, ""},
		{"near miss: 10 is not 1", head + "### wu-policy\nNoAutoUpdate=10\n", "on", "", nil, ""},
		{"section missing", head, "", "", nil, ""},
		{"both reboots pending", head + "### reboot-pending\nComponent Based Servicing\r\nWindows Update\n### language-mode\nConstrainedLanguage\n", "", "", []string{"Component Based Servicing", "Windows Update"}, "ConstrainedLanguage"},
		{"near miss: other text", head + "### reboot-pending\nComponent Based Servicing pending\nTrue\n", "", "", nil, ""},
	} {
		f := parse(t, winWorker, tc.out)
		if f.AutoUpdate != tc.autoUpdate || f.AUOptions != tc.auOpts || !slices.Equal(f.RebootPending, tc.pending) || f.LanguageMode != tc.languageMode {
			t.Errorf("%s: got %q %q %q %q, want %q %q %q %q", tc.name, f.AutoUpdate, f.AUOptions, f.RebootPending, f.LanguageMode,
				tc.autoUpdate, tc.auOpts, tc.pending, tc.languageMode)
		}
	}
	// A Linux host's output with these sections sets none of them.
	f := parse(t, linuxWorker, "### wu-policy\nNoAutoUpdate=1\n### language-mode\nFullLanguage\n")
	if f.AutoUpdate != "" || f.LanguageMode != "" {
		t.Errorf("Linux: %q %q", f.AutoUpdate, f.LanguageMode)
	}
}

// TestWindowsHostChecks: each new check on both sides, with the messages.
func TestWindowsHostChecks(t *testing.T) {
	if got := CheckHost(windowsOK(), winWorker, labExpect); len(got) != 0 {
		t.Fatalf("a good Windows node: %v", got)
	}
	for _, tc := range []struct {
		name   string
		change func(*Facts)
		want   []string // preflight's findings, then post-prepare's after "|"
	}{
		{"constrained language", func(f *Facts) { f.LanguageMode = "ConstrainedLanguage" },
			[]string{"error: [language-mode] PowerShell runs in ConstrainedLanguage mode for this account (AppLocker or WDAC application control)", "|"}},
		{"language mode unknown", func(f *Facts) { f.LanguageMode = "" },
			[]string{"warning: [language-mode] could not read PowerShell's language mode", "|"}},
		{"reboot pending on a new node", func(f *Facts) { f.RebootPending = []string{"Component Based Servicing"} },
			[]string{"warning: [reboot-pending] a reboot is pending (Component Based Servicing): prepare.ps1 stops before changing Windows features until it is done, and apply reboots the node", "|"}},
		{"reboot pending on a member", func(f *Facts) {
			f.RebootPending = []string{"Component Based Servicing", "Windows Update"}
			f.KubeletConfigured = true
		},
			[]string{"warning: [reboot-pending] a reboot is pending (Component Based Servicing, Windows Update): drain the node, reboot it, uncordon it", "|"}},
		{"updates automatic by default", func(f *Facts) { f.AutoUpdate = "on" },
			[]string{"warning: [windows-update] automatic updates are on (policy not set: the server default downloads updates and schedules their restarts)",
				"|", "error: [windows-update] automatic updates are on (policy not set"}},
		{"updates automatic by policy", func(f *Facts) { f.AutoUpdate, f.AUOptions = "on", "4" },
			[]string{"warning: [windows-update] automatic updates are on (policy AUOptions 4, NoAutoUpdate not 1)",
				"|", "error: [windows-update] automatic updates are on (policy AUOptions 4, NoAutoUpdate not 1)"}},
		{"update policy unknown", func(f *Facts) { f.AutoUpdate = "" },
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

// TestWindowsResolveLiteral: an IPv4 literal as the API host is printed as
// it is (Resolve-DnsName would look for an A record of it and find none);
// a name, and text that only starts like an address, are resolved.
func TestWindowsResolveLiteral(t *testing.T) {
	for _, tc := range []struct{ host, want string }{
		{"192.168.10.23", "s resolve; '192.168.10.23'\n"},
		{"k8s-lab-api.example.com", "s resolve; (Resolve-DnsName -Name 'k8s-lab-api.example.com' -Type A -DnsOnly).IPAddress\n"},
		{"192.168.10.23.example.com", "s resolve; (Resolve-DnsName -Name '192.168.10.23.example.com' -Type A -DnsOnly).IPAddress\n"},
		{"fd00::23", "s resolve; (Resolve-DnsName -Name 'fd00::23' -Type A -DnsOnly).IPAddress\n"},
	} {
		if s := WindowsScript(testMarker, tc.host); !strings.Contains(s, tc.want) {
			t.Errorf("%s: the script lacks %q", tc.host, tc.want)
		}
	}
	// What the literal prints parses as the resolved address.
	f := parse(t, winWorker, "### resolve\n192.168.10.23\n")
	x := labExpect
	x.APIName, x.APIAddresses = "192.168.10.23", []string{"192.168.10.23"}
	if got := findingsOf(CheckPrepared(f, winWorker, x), CheckAPIName); len(got) != 0 {
		t.Errorf("literal endpoint: %v", got)
	}
}
