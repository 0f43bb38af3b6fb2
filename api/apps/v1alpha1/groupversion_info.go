// Package v1alpha1 holds the apps.kruise.io/v1alpha1 types Lifeline serves:
// CloneSet and PersistentPodState. Their JSON is that of OpenKruise v1.9's
// v1alpha1, so existing manifests apply unchanged.
//
// +kubebuilder:object:generate=true
// +groupName=apps.kruise.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of every type in this package.
	GroupVersion = schema.GroupVersion{Group: "apps.kruise.io", Version: "v1alpha1"}

	// SchemeBuilder registers the types of this package with a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the types of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme

	knownTypes []runtime.Object
)

// register adds types to those AddToScheme adds. The API module depends on
// nothing but k8s.io/api and k8s.io/apimachinery, so hook operators can
// import it whatever controller-runtime they use.
func register(types ...runtime.Object) { knownTypes = append(knownTypes, types...) }

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, knownTypes...)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
