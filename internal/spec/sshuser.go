package spec

import (
	"fmt"
	"net/netip"
	"regexp"
	"strings"
)

// MaxPOSIXUserName is the longest POSIX user name (useradd's limit);
// MaxWindowsUserPart bounds the user part of a Windows account name
// (a UPN's user part is an e-mail local part, at most 64 characters).
const (
	MaxPOSIXUserName   = 32
	MaxWindowsUserPart = 64
)

// posixUserRE is the portable POSIX user name (useradd's default
// NAME_REGEX, with the trailing $ of machine accounts).
var posixUserRE = regexp.MustCompile(`^[a-z_][a-z0-9_-]*[$]?$`)

// windowsAccountPattern is a Windows account name: USER, DOMAIN\USER or
// USER@DOMAIN (a DNS name). Neither USER nor DOMAIN starts with '-' or
// holds a control character, a line or paragraph separator or one of
// "/\[]:;|=,+*?<>@. It is also the JSON Schema pattern of ssh.user (a
// POSIX user name is one too), written so that Go's regexp and ECMAScript
// read it the same: the separators are the characters themselves.
const windowsAccountPattern = `^(?:` + winPart + `\\)?` + winUser + `(?:@` + dnsNamePattern + `)?$`

const (
	winChar = "[^\\x00-\\x1f\\x7f-\\x9f\u2028\u2029\"/\\\\\\[\\]:;|=,+*?<>@]"
	// winPart is one character of a user or domain part; the first one
	// is not '-'.
	winPart = "(?:[^-\\x00-\\x1f\\x7f-\\x9f\u2028\u2029\"/\\\\\\[\\]:;|=,+*?<>@]" + winChar + "{0,254})"
	winUser = "[^-\\x00-\\x1f\\x7f-\\x9f\u2028\u2029\"/\\\\\\[\\]:;|=,+*?<>@]" + winChar + "{0,63}"
	// dnsNamePattern is a DNS name of letters, digits and '-' labels.
	dnsNamePattern = `[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*`
)

var windowsAccountRE = regexp.MustCompile(windowsAccountPattern)

// IsPOSIXUserName reports whether s is a POSIX user name:
// [a-z_][a-z0-9_-]*, optionally ending in $, at most MaxPOSIXUserName
// characters. Such a name never starts with '-', so no program reads it
// as an option.
func IsPOSIXUserName(s string) bool {
	return len(s) <= MaxPOSIXUserName && posixUserRE.MatchString(s)
}

// IsWindowsAccountName reports whether s is a Windows account name
// hybridctl logs in with: USER, DOMAIN\USER or USER@DOMAIN, without
// control characters, without "/\[]:;|=,+*?<>@ in USER or DOMAIN, USER at
// most MaxWindowsUserPart characters, neither starting with '-'.
func IsWindowsAccountName(s string) bool {
	if !windowsAccountRE.MatchString(s) {
		return false
	}
	user := s
	if i := strings.LastIndexByte(user, '\\'); i >= 0 {
		user = user[i+1:]
	}
	if i := strings.IndexByte(user, '@'); i >= 0 {
		user = user[:i]
	}
	return len([]rune(user)) <= MaxWindowsUserPart
}

// SSHUserProblem says what is wrong with a node's ssh.user, "" when
// nothing is. A Linux node takes a POSIX user name, a Windows node a
// Windows account name.
func SSHUserProblem(user string, windows bool) string {
	option := ""
	if strings.HasPrefix(user, "-") {
		option = "; it starts with '-', so ssh and scp would read it as an option"
	}
	if windows {
		if IsWindowsAccountName(user) {
			return ""
		}
		return fmt.Sprintf("%q is not a Windows account name (USER, DOMAIN\\USER or USER@DOMAIN; USER at most %d characters, neither part starting with '-' nor holding control characters or any of \"/\\[]:;|=,+*?<>@)%s", user, MaxWindowsUserPart, option)
	}
	if IsPOSIXUserName(user) {
		return ""
	}
	msg := fmt.Sprintf("%q is not a POSIX user name (lower-case letters, digits, '_' and '-', not starting with a digit or '-', optionally ending in '$', at most %d characters)%s", user, MaxPOSIXUserName, option)
	if IsWindowsAccountName(user) {
		msg += "; a Windows account name is only for a Windows node"
	}
	return msg
}

// SSHHostProblem says what is wrong with a node's ssh.host, "" when
// nothing is: it is an IP address or a DNS name, so it never starts with
// '-'.
func SSHHostProblem(host string) string {
	if a, err := netip.ParseAddr(host); err == nil && a.Zone() == "" {
		return ""
	}
	if isDNSName(host) {
		return ""
	}
	return fmt.Sprintf("%q is neither an IP address nor a DNS name", host)
}
