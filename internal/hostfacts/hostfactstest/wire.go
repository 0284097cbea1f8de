// Package hostfactstest writes gathering output in hostfacts's section
// protocol for tests: fixtures stay readable, one header line per section.
package hostfactstest

import (
	"strings"

	"github.com/hybridctl/hybridctl/internal/hostfacts"
)

// Wire writes text, whose sections start with lines "HEADER NAME" (header
// is the prefix, such as "### "), in hostfacts's protocol with marker, as
// a gathering script prints them: each section opened with its begin line
// and closed with its end line and exit status 0.
func Wire(marker, header, text string) string {
	var b strings.Builder
	cur := ""
	closeCur := func() {
		if cur != "" {
			b.WriteString("\n" + hostfacts.EndLine(marker, cur, 0) + "\n")
		}
	}
	for _, line := range strings.SplitAfter(text, "\n") {
		if name, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), header); ok {
			closeCur()
			cur = name
			b.WriteString("\n" + hostfacts.BeginLine(marker, name) + "\n")
			continue
		}
		b.WriteString(line)
	}
	closeCur()
	return b.String()
}
