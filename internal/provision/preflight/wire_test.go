package preflight

import (
	"time"

	"github.com/hybridctl/hybridctl/internal/hostfacts"
)

// clockAt is a clock sample skew off this machine's, with no round trip.
func clockAt(skew time.Duration) hostfacts.Clock {
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	return hostfacts.Clock{Sampled: true, Node: now.Add(skew), Before: now, After: now}
}
