package conversion

import (
	"fmt"
	"net/http"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	crconversion "sigs.k8s.io/controller-runtime/pkg/webhook/conversion"
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
