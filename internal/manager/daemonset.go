package manager

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	"github.com/lifeline-k8s/lifeline/internal/conversion"
	daemonsetwebhook "github.com/lifeline-k8s/lifeline/internal/daemonset/webhook"
)

// DaemonSet serves Advanced DaemonSets (apps.kruise.io DaemonSet): both
// versions with their conversion, its defaults and validation.
func DaemonSet() *Feature {
	return &Feature{
		Name:        "daemonset",
		AddToScheme: schemes(appsv1alpha1.AddToScheme, appsv1beta1.AddToScheme),
		Conversions: []schema.GroupKind{conversion.DaemonSet},
		Webhooks: func(_ ctrl.Manager, _ *Shared, w Webhooks) {
			daemonsetwebhook.Register(w.Server, w.Decoder)
		},
	}
}
