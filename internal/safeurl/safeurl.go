// Package safeurl builds and checks the download URLs hybridctl makes from
// spec values: every URL stays under the prefix it was built for, also
// after dot-segment removal (RFC 3986 section 5.2.4), whatever a version or
// a name holds.
package safeurl

import (
	"fmt"
	"net/url"
	"strings"
)

// Join returns prefix (an absolute http or https URL ending in "/")
// followed by elems, each one path segment. It refuses an element that is
// empty, "." or "..", or holds '/', '\', '%', '?', '#', white space or a
// control character: an element can neither leave its place in the path
// nor add a query. The result is checked with Under.
func Join(prefix string, elems ...string) (string, error) {
	var b strings.Builder
	b.WriteString(prefix)
	for i, e := range elems {
		if err := checkSegment(e); err != nil {
			return "", fmt.Errorf("URL under %s: %w", prefix, err)
		}
		if i > 0 {
			b.WriteByte('/')
		}
		b.WriteString(e)
	}
	u := b.String()
	if err := Under(prefix, u); err != nil {
		return "", err
	}
	return u, nil
}

func checkSegment(e string) error {
	switch e {
	case "":
		return fmt.Errorf("an empty path segment")
	case ".", "..":
		return fmt.Errorf("the path segment %q is a dot segment", e)
	}
	for _, r := range e {
		if r <= ' ' || r == 0x7f || (r >= 0x80 && r <= 0x9f) || strings.ContainsRune(`/\%?#`, r) {
			return fmt.Errorf("the path segment %q holds %q", e, r)
		}
	}
	return nil
}

// Under reports, as an error naming both, when u is not an absolute URL
// under prefix: the same scheme and host, a path that starts with prefix's
// path both as written and after dot-segment removal, no dot segment at
// all (a "." or ".." segment is refused even when the result would stay
// under the prefix: a URL hybridctl builds never needs one), no
// percent-encoding or backslash in the path (servers decode %2e%2e and
// some read '\' as '/'), no user, query or fragment beyond prefix's.
// prefix ends in "/".
func Under(prefix, u string) error {
	bad := func(why string) error { return fmt.Errorf("URL %q is not under %s: %s", u, prefix, why) }
	if !strings.HasSuffix(prefix, "/") {
		return fmt.Errorf("URL prefix %q does not end in /", prefix)
	}
	p, err := url.Parse(prefix)
	if err != nil || !p.IsAbs() || p.Host == "" || p.Opaque != "" {
		return fmt.Errorf("URL prefix %q is not an absolute URL", prefix)
	}
	if strings.ContainsFunc(u, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return bad("it holds white space or a control character")
	}
	v, err := url.Parse(u)
	if err != nil {
		return bad(err.Error())
	}
	switch {
	case v.Scheme != p.Scheme || v.Host != p.Host:
		return bad("another scheme or host")
	case v.User != nil || v.Opaque != "" || v.RawQuery != "" || v.ForceQuery || v.Fragment != "" || strings.ContainsAny(u, "?#"):
		return bad("it has a user, a query or a fragment")
	case strings.ContainsAny(v.EscapedPath(), `%\`) || strings.ContainsRune(u, '\\'):
		return bad("its path holds percent-encoding or a backslash")
	}
	clean := v.ResolveReference(v) // removes dot segments, RFC 3986 5.2.4
	if !strings.HasPrefix(clean.EscapedPath(), p.EscapedPath()) || !strings.HasPrefix(v.EscapedPath(), p.EscapedPath()) {
		return bad("its path leaves " + p.EscapedPath() + " once its dot segments are removed (" + clean.EscapedPath() + ")")
	}
	if clean.EscapedPath() != v.EscapedPath() {
		return bad("its path holds a dot segment")
	}
	return nil
}
