// Package v1beta1 holds the apps.kruise.io/v1beta1 types Lifeline serves:
// CloneSet and PersistentPodState, as OpenKruise's Go module v1.9.0 declares
// them. Their JSON is that module's, so a v1beta1 manifest written for
// OpenKruise applies unchanged. The labels and annotations these kinds share
// with v1alpha1 are declared once, in package v1alpha1.
//
// +kubebuilder:object:generate=true
// +groupName=apps.kruise.io
package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of every type in this package.
	GroupVersion = schema.GroupVersion{Group: "apps.kruise.io", Version: "v1beta1"}

	// SchemeBuilder registers the types of this package with a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the types of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme

	knownTypes []runtime.Object
)

// register adds types to those AddToScheme adds, without controller-runtime,
// for the same reason as in package v1alpha1.
func register(types ...runtime.Object) { knownTypes = append(knownTypes, types...) }

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, knownTypes...)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
