package manager

import (
	"context"
	"flag"

	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	clonesetcontroller "github.com/lifeline-k8s/lifeline/internal/cloneset/controller"
	clonesetwebhook "github.com/lifeline-k8s/lifeline/internal/cloneset/webhook"
	"github.com/lifeline-k8s/lifeline/internal/conversion"
	daemonsetcontroller "github.com/lifeline-k8s/lifeline/internal/daemonset/controller"
	daemonsetwebhook "github.com/lifeline-k8s/lifeline/internal/daemonset/webhook"
	"github.com/lifeline-k8s/lifeline/internal/hookhandlers"
	"github.com/lifeline-k8s/lifeline/internal/protection"
)

// DaemonSet runs Advanced DaemonSets (apps.kruise.io DaemonSet): its
// controller, both versions with their conversion, its defaults and
// validation.
func DaemonSet(shared *clonesetcontroller.Options) *Feature {
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
			o.ExpectationTimeout, o.HookWaitWarning = shared.ExpectationTimeout, shared.HookWaitWarning
			r := &daemonsetcontroller.Reconciler{Client: HubClient(mgr), APIReader: HubReader(mgr), Recorder: mgr.GetEventRecorder("daemonset-controller"),
				Budgets: s.Budgets, Pods: s.Pods, Options: *o}
			return r.SetupWithManager(mgr)
		},
		AddToScheme: schemes(appsv1alpha1.AddToScheme, appsv1beta1.AddToScheme),
		Conversions: []schema.GroupKind{conversion.DaemonSet},
		Webhooks: func(_ ctrl.Manager, _ *Shared, w Webhooks) {
			daemonsetwebhook.Register(w.Server, w.Decoder)
		},
		// The hook guard (the CloneSet feature's pod admission handler)
		// serves a set that opts in; such a set makes its namespace ask
		// for the fail-closed disruption webhooks.
		Protection: []protection.Source{{Kind: protection.Disruptions, Object: &appsv1beta1.DaemonSet{}, List: &appsv1beta1.DaemonSetList{},
			Holds: func(obj client.Object) bool {
				guards, _ := clonesetwebhook.GuardsHooks(clonesetwebhook.GuardedDaemonSet(obj.(*appsv1beta1.DaemonSet)))
				return guards
			}}},
		FailClosed: map[string]protection.Kind{"vpod.lifeline.dev": protection.Disruptions, "vpodeviction.lifeline.dev": protection.Disruptions},
		HookHandlers: []hookhandlers.Source{{Object: &appsv1beta1.DaemonSet{}, List: &appsv1beta1.DaemonSetList{},
			Lifecycle: func(obj client.Object) *pub.Lifecycle { return obj.(*appsv1beta1.DaemonSet).Spec.Lifecycle }}},
	}
}
