package release

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"

	utilversion "k8s.io/apimachinery/pkg/util/version"
)

// Source is what a release is built from and stamped with.
type Source struct {
	// Dir is the main module's root.
	Dir string
	// Version is a v-prefixed semantic version: the tag on the commit, or
	// the pseudo-version v0.0.0-YYYYMMDDhhmmss-abcdefabcdef.
	Version string
	// Commit is the full commit hash.
	Commit string
	// Time is the commit's time: the release's SOURCE_DATE_EPOCH, every
	// file's time in the archives and the binaries' build date.
	Time time.Time
}

// Date is Time as the binaries carry it: RFC 3339, UTC.
func (s Source) Date() string { return s.Time.UTC().Format(time.RFC3339) }

var commitRE = regexp.MustCompile(`^[0-9a-f]{40}([0-9a-f]{24})?$`)

// Check says what is wrong with s, naming the field.
func (s Source) Check() error {
	var errs []error
	if _, err := utilversion.ParseSemantic(s.Version); err != nil || !strings.HasPrefix(s.Version, "v") {
		errs = append(errs, fmt.Errorf("version %q is not a semantic version with a leading v (v1.2.3)", s.Version))
	}
	if !commitRE.MatchString(s.Commit) {
		errs = append(errs, fmt.Errorf("commit %q is not a full commit hash (40 or 64 lowercase hex digits)", s.Commit))
	}
	if s.Time.IsZero() || s.Time.Unix() <= 0 {
		errs = append(errs, fmt.Errorf("the source date is not set (SOURCE_DATE_EPOCH, seconds since 1970)"))
	}
	return errors.Join(errs...)
}

// PseudoVersion is the version of a commit without a tag, as Go names one:
// v0.0.0-YYYYMMDDhhmmss-abcdefabcdef (the commit's UTC time, its first 12
// hex digits).
func PseudoVersion(commit string, t time.Time) string {
	c := commit
	if len(c) > 12 {
		c = c[:12]
	}
	return "v0.0.0-" + t.UTC().Format("20060102150405") + "-" + c
}

// ParseEpoch reads SOURCE_DATE_EPOCH (decimal seconds since 1970, UTC).
func ParseEpoch(s string) (time.Time, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || n <= 0 {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH %q: want a positive number of seconds since 1970", s)
	}
	return time.Unix(n, 0).UTC(), nil
}

// Describe reads the version, commit and commit time of the checkout at
// dir with git: the highest semantic-version tag on HEAD, else the
// pseudo-version. A checkout with uncommitted changes to tracked files is
// refused: its binaries would not be the commit's.
func Describe(ctx context.Context, dir string) (Source, error) {
	s := Source{Dir: dir}
	git := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		// No pager, no prompt, no configuration from the environment that
		// changes the output.
		cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_PAGER=cat", "LC_ALL=C")
		if err := cmd.Run(); err != nil {
			return "", fmt.Errorf("git %s in %s: %w: %s", strings.Join(args, " "), dir, err, strings.TrimSpace(errb.String()))
		}
		return strings.TrimSpace(out.String()), nil
	}
	var err error
	if s.Commit, err = git("rev-parse", "--verify", "HEAD^{commit}"); err != nil {
		return Source{}, err
	}
	ct, err := git("log", "-1", "--format=%ct", "HEAD")
	if err != nil {
		return Source{}, err
	}
	if s.Time, err = ParseEpoch(ct); err != nil {
		return Source{}, fmt.Errorf("the commit time of %s: %w", s.Commit, err)
	}
	dirty, err := git("status", "--porcelain", "--untracked-files=no")
	if err != nil {
		return Source{}, err
	}
	if dirty != "" {
		return Source{}, fmt.Errorf("%s has uncommitted changes (git status: %s): commit or stash them; a release is built from a commit", dir, strings.ReplaceAll(dirty, "\n", "; "))
	}
	tags, err := git("tag", "--points-at", "HEAD", "--list", "v*")
	if err != nil {
		return Source{}, err
	}
	s.Version = highestTag(strings.Fields(tags))
	if s.Version == "" {
		s.Version = PseudoVersion(s.Commit, s.Time)
	}
	return s, nil
}

// highestTag is the highest of the tags that are semantic versions with a
// leading v, or "".
func highestTag(tags []string) string {
	best, bestV := "", (*utilversion.Version)(nil)
	for _, t := range tags {
		v, err := utilversion.ParseSemantic(t)
		if err != nil || !strings.HasPrefix(t, "v") {
			continue
		}
		if bestV == nil || v.GreaterThan(bestV) {
			best, bestV = t, v
		}
	}
	return best
}
