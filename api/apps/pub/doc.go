// Package pub is the vocabulary that workloads, Lifeline's controllers and
// hook operators share: the lifecycle hooks a workload declares, the pod label
// that carries a pod's lifecycle state, the annotations that record in-place
// updates, and the readiness gates Lifeline drives.
//
// Every key and value here is wire-compatible with OpenKruise's apps/pub
// package, so operators written for OpenKruise read and write the same
// labels, annotations and conditions unchanged.
//
// +kubebuilder:object:generate=true
package pub
