package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/hybridctl/hybridctl/internal/suggest"
)

// FormatTable is the human output format's name in every command.
const FormatTable = "table"

// formatAliases are older names of output formats, accepted and not
// shown: apply, reset, diff, upgrade and version called the human format
// "text".
func formatAliases() map[string]string { return map[string]string{"text": FormatTable} }

// checkFormat returns the canonical name of the output format value, one
// of formats or an alias of one; anything else is a usage error naming
// the formats, with the closest one when the value looks like a typo.
func checkFormat(value string, formats []string) (string, error) {
	if a, ok := formatAliases()[value]; ok {
		value = a
	}
	for _, f := range formats {
		if value == f {
			return value, nil
		}
	}
	msg := fmt.Sprintf("-o/--output %q is not an output format: want %s", value, strings.Join(formats, ", "))
	if s, ok := suggest.Closest(value, formats); ok {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	}
	return "", Usagef("%s", msg)
}

// warnOldFlag warns on standard error when the hidden, older name old of a
// flag was used: render's and init's -o/--output named a destination
// before -o meant an output format everywhere, and still does for a
// release.
func warnOldFlag(cmd *cobra.Command, s Streams, old, now string) {
	if cmd.Flags().Changed(old) {
		fmt.Fprintf(s.Err, "Warning: -o/--%s of %s is deprecated and will be removed: use %s (-o selects an output format)\n", old, cmd.CommandPath(), now)
	}
}

// encodeAs writes v as format: "json" (indented) or "yaml". The YAML is
// the JSON document re-encoded: the same fields, names and values, so a
// script reads one object in either encoding.
func encodeAs(w io.Writer, format string, v any) error {
	if format != "yaml" {
		return writeJSON(w, v)
	}
	j, err := json.Marshal(v)
	if err != nil {
		return Incomplete(fmt.Errorf("writing output: %w", err))
	}
	y, err := yaml.JSONToYAML(j)
	if err != nil {
		return Incomplete(fmt.Errorf("writing output: %w", err))
	}
	if _, err := w.Write(y); err != nil {
		return Incomplete(fmt.Errorf("writing output: %w", err))
	}
	return nil
}
