// Package bench holds the side-by-side benchmarks of doctor and lint
// (bench_test.go): each reports its time and peak memory beside a floor or
// a peer measured in the same run, as ratios. bench/run.sh runs them with
// the render benchmark; bench/README.md has the numbers.
package bench
