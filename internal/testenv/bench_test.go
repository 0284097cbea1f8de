package testenv

import (
	"context"
	"testing"
	"time"
)

// BenchmarkStart measures a warm start (binaries built) of the environment,
// to /readyz ok, and the extra time for the Calico CRDs and the lab fixture;
// each iteration also stops it. Report with:
//
//	go test -run '^$' -bench Start -benchtime 3x ./internal/testenv/
func BenchmarkStart(b *testing.B) {
	for _, bc := range []struct {
		name string
		opts Options
	}{
		{"bare", Options{}},
		{"calico", Options{Calico: true}},
		{"lab", Options{Lab: true}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var stop time.Duration
			for b.Loop() {
				env, err := Start(context.Background(), bc.opts)
				if err != nil {
					b.Fatal(err)
				}
				t := time.Now()
				if err := env.Stop(); err != nil {
					b.Fatal(err)
				}
				stop += time.Since(t)
			}
			b.ReportMetric(float64(stop.Milliseconds())/float64(b.N), "stop-ms/op")
		})
	}
}
