package manager

import (
	"context"
	"flag"

	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	"github.com/lifeline-k8s/lifeline/internal/conversion"
	daemonsetcontroller "github.com/lifeline-k8s/lifeline/internal/daemonset/controller"
	daemonsetwebhook "github.com/lifeline-k8s/lifeline/internal/daemonset/webhook"
)

// DaemonSet runs Advanced DaemonSets (apps.kruise.io DaemonSet): its
// controller, both versions with their conversion, its defaults and
// validation.
func DaemonSet(shared *WorkloadOptions) *Feature {
	o := &daemonsetcontroller.Options{}
	return &Feature{
		Name: "daemonset",
		Flags: func(fs *flag.FlagSet) {
			fs.IntVar(&o.Workers, "daemonset-workers", 3, "How many Advanced DaemonSets reconcile at once.")
			fs.BoolVar(&o.ReplaceUnavailableAtOnce, "daemonset-replace-unavailable-at-once", false,
				"Replace an Advanced DaemonSet's old pods that are not available whatever maxUnavailable says, as OpenKruise v1.9 does "+
					"(openkruise/kruise#1323: Ready pods under minReadySeconds count as not available, and a whole set can go at once). "+
					"Off: they are replaced within maxUnavailable.")
		},
		Controllers: func(_ context.Context, mgr ctrl.Manager, s *Shared) error {
			shared.into(&o.Options)
			r := &daemonsetcontroller.Reconciler{Shell: shell(mgr, s, "advanced-daemonset-controller"), Options: *o}
			return r.SetupWithManager(mgr)
		},
		AddToScheme: schemes(appsv1alpha1.AddToScheme, appsv1beta1.AddToScheme),
		Conversions: []schema.GroupKind{conversion.DaemonSet},
		Webhooks: func(_ ctrl.Manager, _ *Shared, w Webhooks) {
			daemonsetwebhook.Register(w.Server, w.Decoder)
		},
	}
}
