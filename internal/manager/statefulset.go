package manager

import (
	"context"
	"flag"

	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	"github.com/lifeline-k8s/lifeline/internal/conversion"
	statefulsetcontroller "github.com/lifeline-k8s/lifeline/internal/statefulset/controller"
	statefulsetwebhook "github.com/lifeline-k8s/lifeline/internal/statefulset/webhook"
)

// StatefulSet runs Advanced StatefulSets (apps.kruise.io StatefulSet):
// its controller, both versions with their conversion, its defaults and
// validation.
func StatefulSet(shared *WorkloadOptions, c *statefulsetcontroller.Options) *Feature {
	o := &statefulsetwebhook.Options{}
	return &Feature{
		Name: "statefulset",
		Flags: func(fs *flag.FlagSet) {
			fs.BoolVar(&o.AutoDeletePVC, "statefulset-auto-delete-pvc", true,
				"Default an Advanced StatefulSet's persistentVolumeClaimRetentionPolicy to Retain/Retain (OpenKruise's StatefulSetAutoDeletePVC gate, on by default there too).")
			fs.IntVar(&c.Workers, "statefulset-workers", 3, "How many Advanced StatefulSets reconcile at once.")
			fs.BoolVar(&c.StartOrdinal, "statefulset-start-ordinal", false,
				"Honour an Advanced StatefulSet's spec.ordinals.start (OpenKruise's StatefulSetStartOrdinal gate, off by default there too).")
		},
		Controllers: func(_ context.Context, mgr ctrl.Manager, s *Shared) error {
			shared.into(&c.Options)
			r := &statefulsetcontroller.Reconciler{Shell: shell(mgr, s, "advanced-statefulset-controller"), Options: *c}
			return r.SetupWithManager(mgr)
		},
		AddToScheme: schemes(appsv1alpha1.AddToScheme, appsv1beta1.AddToScheme),
		Conversions: []schema.GroupKind{conversion.StatefulSet},
		Webhooks: func(_ ctrl.Manager, _ *Shared, w Webhooks) {
			statefulsetwebhook.Register(w.Server, w.Decoder, *o)
		},
	}
}
