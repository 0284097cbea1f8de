package procedure

import (
	"context"
	"fmt"
	"strings"

	"github.com/hybridctl/hybridctl/internal/finding"

	"k8s.io/client-go/rest"

	"github.com/hybridctl/hybridctl/internal/checks"
	"github.com/hybridctl/hybridctl/internal/provision/engine"
	"github.com/hybridctl/hybridctl/internal/report"
)

// doctorPhase audits the new cluster with every check of `hybridctl doctor`
// (read-only). Errors fail the phase with each finding; warnings are
// reported as warnings of the step; the summary ends the output.
type doctorPhase struct {
	restConfig func(ctx context.Context) (*rest.Config, error)
}

func (p *doctorPhase) DryRun(context.Context, engine.Host) ([]string, error) {
	return []string{"run every check of hybridctl doctor against the cluster (read-only): errors fail the phase, warnings are reported"}, nil
}

func (p *doctorPhase) Run(ctx context.Context, _ engine.Host) error {
	cfg, err := p.restConfig(ctx)
	if err != nil {
		return err
	}
	res, objects, err := checks.Audit(ctx, cfg, checks.Options{}, "")
	if err != nil {
		return fmt.Errorf("doctor: %w", err)
	}
	var errs []string
	counts := map[finding.Severity]int{}
	for _, f := range res.Findings {
		counts[f.Severity]++
		line := fmt.Sprintf("%s %s %s: %s (fix: %s)", f.Check, f.Name, f.Object, f.Message, f.Fix)
		switch f.Severity {
		case finding.Error:
			errs = append(errs, line)
		case finding.Warning:
			engine.Warn(ctx, "%s", line)
		}
	}
	for _, s := range res.Skipped {
		engine.Warn(ctx, "doctor skipped %s: %s", s.Check, s.Reason)
	}
	summary := fmt.Sprintf("doctor: %s, %s, %d info over %s; %s skipped",
		report.Plural(counts[finding.Error], "error"), report.Plural(counts[finding.Warning], "warning"), counts[finding.Info],
		report.Plural(objects, "object"), report.Plural(len(res.Skipped), "check"))
	if len(errs) > 0 {
		return fmt.Errorf("%s:\n  %s\nrun `hybridctl doctor` for the full report", summary, strings.Join(errs, "\n  "))
	}
	engine.Warn(ctx, "%s", summary)
	return nil
}
