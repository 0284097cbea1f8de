package snapshot

import (
	"testing"
	"time"
)

// TestPullWatch: a first ErrImagePull is not lasting, nor one seen again
// just before the grace period ends; seen again at its end it is. The
// kubelet's back-off and the reasons no retry can help are lasting at
// once; a container that pulled in between starts over; containers are
// watched apart.
func TestPullWatch(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	w := &PullWatch{Grace: 10 * time.Second}
	steps := []struct {
		key, reason string
		at          time.Duration
		want        bool
	}{
		{"a/app", "ErrImagePull", 0, false},
		{"a/app", "ErrImagePull", 9*time.Second + 999*time.Millisecond, false},
		{"b/app", "ErrImagePull", 5 * time.Second, false},
		{"a/app", "ErrImagePull", 10 * time.Second, true},
		{"b/app", "ErrImagePull", 14 * time.Second, false},
		{"b/app", "ContainerCreating", 15 * time.Second, false}, // pulled: forgotten
		{"b/app", "ErrImagePull", 20 * time.Second, false},      // a new first failure
		{"b/app", "ErrImagePull", 29 * time.Second, false},
		{"b/app", "ErrImagePull", 30 * time.Second, true},
		{"c/app", "ImagePullBackOff", 0, true},
		{"d/app", "InvalidImageName", 0, true},
		{"e/app", "ErrImageNeverPull", 0, true},
		{"f/app", "CrashLoopBackOff", 0, false},
	}
	for i, s := range steps {
		if got := w.Lasting(s.key, s.reason, t0.Add(s.at)); got != s.want {
			t.Errorf("step %d: Lasting(%s, %s, +%s) = %v, want %v", i, s.key, s.reason, s.at, got, s.want)
		}
	}
	// The zero value waits DefaultPullGrace.
	var z PullWatch
	if z.Lasting("x", "ErrImagePull", t0) || z.Lasting("x", "ErrImagePull", t0.Add(DefaultPullGrace-time.Nanosecond)) || !z.Lasting("x", "ErrImagePull", t0.Add(DefaultPullGrace)) {
		t.Error("the zero value does not wait DefaultPullGrace")
	}
}
