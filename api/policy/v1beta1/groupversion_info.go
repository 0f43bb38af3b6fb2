// Package v1beta1 holds the policy.kruise.io/v1beta1 type Lifeline serves:
// PodUnavailableBudget, as OpenKruise's Go module v1.9.0 declares it. The
// annotations both versions share are declared once, in package v1alpha1.
//
// +kubebuilder:object:generate=true
// +groupName=policy.kruise.io
package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of every type in this package.
	GroupVersion = schema.GroupVersion{Group: "policy.kruise.io", Version: "v1beta1"}

	// SchemeBuilder registers the types of this package with a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the types of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme

	knownTypes []runtime.Object
)

// register adds types to those AddToScheme adds, without controller-runtime,
// for the same reason as in package apps/v1alpha1.
func register(types ...runtime.Object) { knownTypes = append(knownTypes, types...) }

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, knownTypes...)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
