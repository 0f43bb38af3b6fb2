package hook_test

import (
	"context"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/lifeline-k8s/lifeline/pkg/hook"
)

// registry stands for the operator's service registry client.
type registry struct{}

func (registry) Put(ctx context.Context, name, ip string) error { return nil }
func (registry) Delete(ctx context.Context, name string) error  { return nil }

// An operator that keeps a service registry in step with CloneSet pods: a
// complete program but for the registry client. Run it with the
// permissions of config/bridge/role.yaml.
func Example() {
	var r registry
	register := func(ctx context.Context, e hook.Event) error {
		return r.Put(ctx, e.Pod.Namespace+"/"+e.Pod.Name, e.Pod.Status.PodIP)
	}
	unregister := func(ctx context.Context, e hook.Event) error {
		return r.Delete(ctx, e.Pod.Namespace+"/"+e.Pod.Name)
	}
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{})
	if err == nil {
		// BeforeNormal serves CloneSets with a preNormal hook (registered
		// before the pod counts as available), Registered those without.
		err = hook.Add(mgr, hook.Handlers{
			BeforeNormal: register,
			Registered:   register,
			BeforeUpdate: unregister,
			AfterUpdate:  register,
			BeforeDelete: unregister,
		}, hook.Options{Name: "registry"})
	}
	if err == nil {
		err = mgr.Start(ctrl.SetupSignalHandler())
	}
	if err != nil {
		fmt.Println(err)
	}
}
