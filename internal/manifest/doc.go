// Package manifest reads YAML and JSON documents that come from outside
// hybridctl: manifests, Helm output, kubeconfigs, configuration files. It
// bounds what YAML aliases may expand to, per document and over a whole
// input, before any parser expands them.
package manifest
