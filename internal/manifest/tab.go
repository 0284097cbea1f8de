package manifest

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
)

var errLine = regexp.MustCompile(`line (\d+):`)

// TabIndent finds the tab that made the YAML decoder fail with err: YAML
// indents with spaces only, and yaml.v3 says so as "found character that
// cannot start any token" or as a tab that violates indentation. It
// returns the 1-based line and column of the first tab in the leading
// white space (spaces and "- " item indicators) of the line err names, or
// else of the first such line of doc; ok is false when err is not about a
// tab or doc has no tab where indentation is.
func TabIndent(doc []byte, err error) (line, col int, ok bool) {
	if err == nil {
		return 0, 0, false
	}
	msg := err.Error()
	if !strings.Contains(msg, "cannot start any token") && !strings.Contains(msg, "tab character") {
		return 0, 0, false
	}
	at := 0
	if m := errLine.FindStringSubmatch(msg); m != nil {
		at, _ = strconv.Atoi(m[1])
	}
	first, firstCol := 0, 0
	for i, l := 0, doc; len(l) > 0 || i == 0; i++ {
		var t []byte
		t, l, _ = bytes.Cut(l, []byte{'\n'})
		if c := leadingTab(t); c > 0 {
			if i+1 == at {
				return at, c, true
			}
			if first == 0 {
				first, firstCol = i+1, c
			}
		}
		if len(l) == 0 {
			break
		}
	}
	return first, firstCol, first > 0
}

// leadingTab returns the 1-based column of the first tab in a line's
// indentation, or 0.
func leadingTab(t []byte) int {
	for j, c := range t {
		switch c {
		case '\t':
			return j + 1
		case ' ', '-':
		default:
			return 0
		}
	}
	return 0
}
