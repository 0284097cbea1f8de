package render

import (
	"strings"
)

// ShQuote quotes s as one word for POSIX shells (bash, sh): the result is a
// single-quoted string in which each quote is written as quote, backslash,
// quote, quote (close, escaped quote, reopen). Inside single quotes bash expands nothing: no $, no
// backtick, no backslash, so no value can run a command or split a word.
func ShQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// shWord returns s bare when it is made only of characters no shell treats
// specially, else ShQuote(s). It keeps commands in the runbook readable.
func shWord(s string) string {
	if s == "" {
		return "''"
	}
	for _, r := range s {
		if !isShSafe(r) {
			return ShQuote(s)
		}
	}
	return s
}

func isShSafe(r rune) bool {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		return true
	}
	return strings.ContainsRune("@%+=:,./_-", r)
}

// psSingleQuotes are the characters PowerShell's tokenizer treats as a
// single quote: ' and the typographic quotes U+2018, U+2019, U+201A, U+201B.
const psSingleQuotes = "'\u2018\u2019\u201a\u201b"

// PsQuote quotes s as a PowerShell single-quoted (verbatim) string. In it
// PowerShell expands nothing ($, backtick and " are literal); a single-quote
// character ends the string unless it is doubled, and a doubled one stands
// for the second of the two. So every single-quote character is doubled,
// including the typographic ones PowerShell also accepts as quotes.
func PsQuote(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('\'')
	for _, r := range s {
		if strings.ContainsRune(psSingleQuotes, r) {
			b.WriteRune(r)
		}
		b.WriteRune(r)
	}
	b.WriteByte('\'')
	return b.String()
}

// psWord returns s bare when PowerShell reads it as the same literal
// argument without quotes, else PsQuote(s).
func psWord(s string) string {
	if s == "" {
		return "''"
	}
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case strings.ContainsRune(`.:\/_-`, r):
		default:
			return PsQuote(s)
		}
	}
	if strings.HasPrefix(s, "-") {
		return PsQuote(s)
	}
	return s
}

// oneLine makes s safe inside a one-line comment of any script: line breaks
// and other control characters become spaces, so a value cannot end the
// comment and start a command.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == 0x85 || r == 0x2028 || r == 0x2029 {
			return ' '
		}
		return r
	}, s)
}
