package finding

import (
	"encoding/xml"
	"io"

	"github.com/hybridctl/hybridctl/internal/termtext"
)

// JUnitSuite is one <testsuite>: a name and its cases, counted by Add.
type JUnitSuite struct {
	XMLName  xml.Name    `xml:"testsuite"`
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Cases    []JUnitCase `xml:"testcase"`
}

// JUnitCase is one <testcase>: passed (neither Failure nor Skipped),
// failed or skipped.
type JUnitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Failure   *JUnitFailure `xml:"failure,omitempty"`
	Skipped   *JUnitSkipped `xml:"skipped,omitempty"`
}

// JUnitFailure is why a case failed: a one-line message, an optional type
// (the finding's severity) and a body of several lines (evidence, fix).
type JUnitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

// JUnitSkipped is why a case did not run.
type JUnitSkipped struct {
	Message string `xml:"message,attr"`
}

// Add appends c and counts it.
func (s *JUnitSuite) Add(c JUnitCase) {
	s.Cases = append(s.Cases, c)
	s.Tests++
	switch {
	case c.Failure != nil:
		s.Failures++
	case c.Skipped != nil:
		s.Skipped++
	}
}

// WriteJUnit writes one <testsuite> document.
func WriteJUnit(w io.Writer, s JUnitSuite) error {
	return termtext.EncodeXML(w, safeSuite(s))
}

// WriteJUnitSuites writes a <testsuites> document named name, its counts
// the sums of the suites'.
func WriteJUnitSuites(w io.Writer, name string, suites []JUnitSuite) error {
	all := struct {
		XMLName  xml.Name     `xml:"testsuites"`
		Name     string       `xml:"name,attr"`
		Tests    int          `xml:"tests,attr"`
		Failures int          `xml:"failures,attr"`
		Skipped  int          `xml:"skipped,attr"`
		Suites   []JUnitSuite `xml:"testsuite"`
	}{Name: termtext.Line(name)}
	for _, s := range suites {
		all.Tests += s.Tests
		all.Failures += s.Failures
		all.Skipped += s.Skipped
		all.Suites = append(all.Suites, safeSuite(s))
	}
	return termtext.EncodeXML(w, all)
}

// safeSuite escapes every text of s as termtext does for a terminal (XML
// cannot hold most control characters: encoding/xml would write U+FFFD
// for them; escaped first, they stay readable). Escaping is idempotent,
// so text a caller escaped already is unchanged.
func safeSuite(s JUnitSuite) JUnitSuite {
	out := s
	out.Name = termtext.Line(s.Name)
	out.Cases = make([]JUnitCase, len(s.Cases))
	for i, c := range s.Cases {
		c.Name, c.Classname = termtext.Line(c.Name), termtext.Line(c.Classname)
		if c.Failure != nil {
			c.Failure = &JUnitFailure{Message: termtext.Line(c.Failure.Message), Type: termtext.Line(c.Failure.Type), Text: termtext.Text(c.Failure.Text)}
		}
		if c.Skipped != nil {
			c.Skipped = &JUnitSkipped{Message: termtext.Line(c.Skipped.Message)}
		}
		out.Cases[i] = c
	}
	return out
}
