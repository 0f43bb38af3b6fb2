// Package v1alpha1 holds the policy.kruise.io/v1alpha1 types Lifeline serves:
// PodUnavailableBudget, whose JSON is that of OpenKruise v1.9.
//
// +kubebuilder:object:generate=true
// +groupName=policy.kruise.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of every type in this package.
	GroupVersion = schema.GroupVersion{Group: "policy.kruise.io", Version: "v1alpha1"}

	// SchemeBuilder registers the types of this package with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
