package conversion

import (
	"context"
	"fmt"
	"net/http"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	crconversion "sigs.k8s.io/controller-runtime/pkg/webhook/conversion"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	policyv1alpha1 "github.com/lifeline-k8s/lifeline/api/policy/v1alpha1"
	policyv1beta1 "github.com/lifeline-k8s/lifeline/api/policy/v1beta1"
)

// Path is where the manager serves conversions (the CRDs' conversion
// webhook path, as OpenKruise's).
const Path = "/convert"

// Kinds a feature serves in two versions, each converted through its hub.
var (
	CloneSet             = schema.GroupKind{Group: "apps.kruise.io", Kind: "CloneSet"}
	PersistentPodState   = schema.GroupKind{Group: "apps.kruise.io", Kind: "PersistentPodState"}
	PodUnavailableBudget = schema.GroupKind{Group: "policy.kruise.io", Kind: "PodUnavailableBudget"}
	StatefulSet          = schema.GroupKind{Group: "apps.kruise.io", Kind: "StatefulSet"}
	DaemonSet            = schema.GroupKind{Group: "apps.kruise.io", Kind: "DaemonSet"}
)

// converters builds each kind's hub-and-spoke converter from the pure
// functions of this package.
var converters = map[schema.GroupKind]func(*runtime.Scheme) (crconversion.Converter, error){
	CloneSet: crconversion.NewHubSpokeConverter(&appsv1beta1.CloneSet{},
		crconversion.NewSpokeConverter(&appsv1alpha1.CloneSet{}, withContext(CloneSetFromHub), withContext(CloneSetToHub))),
	PersistentPodState: crconversion.NewHubSpokeConverter(&appsv1beta1.PersistentPodState{},
		crconversion.NewSpokeConverter(&appsv1alpha1.PersistentPodState{}, withContext(PersistentPodStateFromHub), withContext(PersistentPodStateToHub))),
	PodUnavailableBudget: crconversion.NewHubSpokeConverter(&policyv1beta1.PodUnavailableBudget{},
		crconversion.NewSpokeConverter(&policyv1alpha1.PodUnavailableBudget{}, withContext(PodUnavailableBudgetFromHub), withContext(PodUnavailableBudgetToHub))),
	StatefulSet: crconversion.NewHubSpokeConverter(&appsv1beta1.StatefulSet{},
		crconversion.NewSpokeConverter(&appsv1alpha1.StatefulSet{}, withContext(StatefulSetFromHub), withContext(StatefulSetToHub))),
	DaemonSet: crconversion.NewHubSpokeConverter(&appsv1beta1.DaemonSet{},
		crconversion.NewSpokeConverter(&appsv1alpha1.DaemonSet{}, withContext(DaemonSetFromHub), withContext(DaemonSetToHub))),
}

func withContext[S, D any](f func(S, D) error) func(context.Context, S, D) error {
	return func(_ context.Context, src S, dst D) error { return f(src, dst) }
}

// Handler serves ConversionReviews for kinds, whose types (both versions)
// scheme must know: controller-runtime's conversion webhook, with this
// package's converters in its registry.
func Handler(scheme *runtime.Scheme, kinds ...schema.GroupKind) (http.Handler, error) {
	registry := crconversion.NewRegistry()
	for _, gk := range kinds {
		build, ok := converters[gk]
		if !ok {
			return nil, fmt.Errorf("no conversion for %s", gk)
		}
		c, err := build(scheme)
		if err != nil {
			return nil, err
		}
		if err := registry.RegisterConverter(gk, c); err != nil {
			return nil, err
		}
	}
	return crconversion.NewWebhookHandler(scheme, registry), nil
}
