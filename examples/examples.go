// Package examples embeds the example cluster specs so that `hybridctl init`
// writes exactly the file the repository ships.
package examples

import _ "embed"

// Lab is examples/lab.yaml: the guide's lab.
//
//go:embed lab.yaml
var Lab []byte

// LabLinux is examples/lab-linux.yaml: the Linux half of the lab,
// air-gapped (a private registry and a bundle).
//
//go:embed lab-linux.yaml
var LabLinux []byte
