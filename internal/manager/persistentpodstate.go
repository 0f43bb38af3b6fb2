package manager

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	"github.com/lifeline-k8s/lifeline/internal/conversion"
	"github.com/lifeline-k8s/lifeline/internal/podadmission"
	ppscontroller "github.com/lifeline-k8s/lifeline/internal/pps/controller"
	ppswebhook "github.com/lifeline-k8s/lifeline/internal/pps/webhook"
	ppsworkloads "github.com/lifeline-k8s/lifeline/internal/pps/workloads"
	"github.com/lifeline-k8s/lifeline/internal/protection"
	statefulsetcontroller "github.com/lifeline-k8s/lifeline/internal/statefulset/controller"
)

// PersistentPodState records where StatefulSet pods ran and places their
// successors there. Its controller and its webhooks share one whitelist
// of StatefulSet-like kinds.
func PersistentPodState(sts *statefulsetcontroller.Options) *Feature {
	configMap := "lifeline-system/kruise-configuration"
	whitelist := &ppsworkloads.Whitelist{}
	var once sync.Once
	bound := func(mgr ctrl.Manager) *ppsworkloads.Whitelist {
		once.Do(func() { whitelist.Reader = HubReader(mgr) })
		return whitelist
	}
	return &Feature{
		Name: "persistentpodstate",
		Flags: func(fs *flag.FlagSet) {
			fs.StringVar(&configMap, "pps-workload-whitelist", configMap,
				"namespace/name of the ConfigMap whose "+ppsworkloads.WhitelistKey+" lists the StatefulSet-like kinds PersistentPodStates may target (OpenKruise's kruise-configuration format).")
		},
		Validate: func() error {
			ns, name, ok := strings.Cut(configMap, "/")
			if !ok {
				return fmt.Errorf("--pps-workload-whitelist %q: want namespace/name", configMap)
			}
			whitelist.ConfigMap = types.NamespacedName{Namespace: ns, Name: name}
			return nil
		},
		AddToScheme: schemes(appsv1alpha1.AddToScheme, appsv1beta1.AddToScheme),
		Conversions: []schema.GroupKind{conversion.PersistentPodState},
		Controllers: func(ctx context.Context, mgr ctrl.Manager, s *Shared) error {
			r := &ppscontroller.Reconciler{Client: HubClient(mgr), Live: HubReader(mgr), Recorder: s.Events.For("persistentpodstate-controller"),
				Custom: bound(mgr), StartOrdinal: sts.StartOrdinal, Pods: s.PodScope}
			if err := r.SetupWithManager(ctx, mgr); err != nil {
				return err
			}
			g := &ppscontroller.Generator{Client: HubClient(mgr), Recorder: s.Events.For("persistentpodstate-generator"),
				Custom: bound(mgr), Mapper: mgr.GetRESTMapper()}
			return g.SetupWithManager(mgr)
		},
		Webhooks: func(mgr ctrl.Manager, s *Shared, w Webhooks) {
			ppswebhook.Register(w.Server, w.Decoder, HubClient(mgr), bound(mgr))
			w.Mutating.Register("persistentpodstate-placement", &ppswebhook.Injector{
				States: HubClient(mgr), Custom: bound(mgr), Recorder: s.Events.For("persistentpodstate-webhook"),
			}, ppswebhook.CreateTarget)
		},
		MatchConditions: map[string][]podadmission.MatchCondition{
			// Only pods a PersistentPodState could place: a controller
			// and a name ending in an ordinal (generated names are not
			// set yet at admission).
			"mpodcreate.lifeline.dev": {{Name: "ordinal-pod", Expression: "has(object.metadata.name) && object.metadata.name.matches('-[0-9]+$') && " +
				"has(object.metadata.ownerReferences) && object.metadata.ownerReferences.exists(r, has(r.controller) && r.controller)"}},
		},
		Protection: []protection.Source{{Kind: protection.Placement, Object: &appsv1beta1.PersistentPodState{}, List: &appsv1alpha1.PersistentPodStateList{}}},
		FailClosed: map[string]protection.Kind{"mpodcreate.lifeline.dev": protection.Placement},
	}
}
