package apply

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/client-go/rest"

	"github.com/hybridctl/hybridctl/internal/checks"
	"github.com/hybridctl/hybridctl/internal/provision"
	"github.com/hybridctl/hybridctl/internal/report"
)

// doctorPhase audits the new cluster with every check of `hybridctl doctor`
// (read-only). Errors fail the phase with each finding; warnings are
// reported as warnings of the step; the summary ends the output.
type doctorPhase struct {
	restConfig func(ctx context.Context) (*rest.Config, error)
}

func (p *doctorPhase) Title() string { return "doctor" }
func (p *doctorPhase) Description() string {
	return "hybridctl doctor against the new cluster; its summary ends the output"
}
func (p *doctorPhase) Targets([]provision.Host) []provision.Host {
	return []provision.Host{provision.ClusterHost()}
}
func (p *doctorPhase) DryRun(context.Context, provision.Host) ([]string, error) {
	return []string{"run every check of hybridctl doctor against the cluster (read-only): errors fail the phase, warnings are reported"}, nil
}

func (p *doctorPhase) Run(ctx context.Context, _ provision.Host) error {
	if p.restConfig == nil {
		return fmt.Errorf("%w: phase doctor has no API access", provision.ErrNotImplemented)
	}
	cfg, err := p.restConfig(ctx)
	if err != nil {
		return err
	}
	res, objects, err := checks.Audit(ctx, cfg, checks.Options{}, "")
	if err != nil {
		return fmt.Errorf("doctor: %w", err)
	}
	var errs []string
	counts := map[checks.Severity]int{}
	for _, f := range res.Findings {
		counts[f.Severity]++
		line := fmt.Sprintf("%s %s %s: %s (fix: %s)", f.Check, f.Name, f.Object, f.Message, f.Fix)
		switch f.Severity {
		case checks.Error:
			errs = append(errs, line)
		case checks.Warning:
			provision.Warn(ctx, "%s", line)
		}
	}
	for _, s := range res.Skipped {
		provision.Warn(ctx, "doctor skipped %s: %s", s.Check, s.Reason)
	}
	summary := fmt.Sprintf("doctor: %s, %s, %d info over %s; %s skipped",
		report.Plural(counts[checks.Error], "error"), report.Plural(counts[checks.Warning], "warning"), counts[checks.Info],
		report.Plural(objects, "object"), report.Plural(len(res.Skipped), "check"))
	if len(errs) > 0 {
		return fmt.Errorf("%s:\n  %s\nrun `hybridctl doctor` for the full report", summary, strings.Join(errs, "\n  "))
	}
	provision.Warn(ctx, "%s", summary)
	return nil
}
