// Package hook makes a hook operator a few lines: the program says what to
// do at each moment of a pod's life, and the SDK watches the pods, calls it
// exactly then, and releases the hook.
//
// An operator follows CloneSets by default. Options.Follow names the kinds
// it follows, and which of them by label: CloneSet and the Advanced
// StatefulSet (apps.kruise.io StatefulSet). The handlers are the same for
// every kind; Event.Workload names the pod's workload, whatever its kind
// (Event.CloneSet is set for a CloneSet's pods only).
//
// The moments are those of the seeds: BeforeNormal (a Ready pod waits in
// PreparingNormal for the preNormal hook), Registered (a new pod is Normal
// and Ready), BeforeUpdate (PreparingUpdate), AfterUpdate (Updated and
// Ready) and BeforeDelete (PreparingDelete). Which labels and finalizers
// hold a pod is read from the workload's spec.lifecycle, unless
// Options.Lifecycle names the handlers this operator owns.
//
// Releasing is one JSON patch of the pod, guarded by the labels and
// finalizers the decision read, so a release never lands on a pod whose
// state moved on: holding hooks (inPlaceUpdate before the update,
// preDelete) lose their handlers, a handler label "true" turning "false";
// waiting hooks (preNormal, inPlaceUpdate after the update) get them. The
// same write records the moment and revision in the annotation
// hook.lifeline.dev/<name>, which is how Registered knows a pod is new, and
// how a restarted operator knows what it already did.
//
// A failing handler is called again with backoff, and the hook stays held
// however long it fails: a registry that is down delays a rollout, it never
// lets an unregistered pod serve or a registered one be deleted. With
// Options.Timeout, a pod whose moment stays undone is flagged (a Warning
// event and the condition hook.lifeline.dev/<name> False) rather than left
// silently stuck.
//
// A failed call is a Warning on the pod (HookHandlerFailed), always posted;
// a release is a HookCompleted Event on the workload, combined and
// rate-limited per workload as the controllers' routine Events are (package
// recorder), as the pod keeps its own record of the moment. The metrics
// lifeline_hook_handler_duration_seconds, lifeline_hook_handler_failures_total
// and lifeline_hook_timeouts_total are served by the manager's metrics
// endpoint.
//
// An operator that registers pods with a service registry, as seed 001's:
//
//	mgr, _ := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{})
//	register := func(ctx context.Context, e hook.Event) error {
//		return registry.Put(ctx, e.Pod.Name, e.Pod.Status.PodIP)
//	}
//	unregister := func(ctx context.Context, e hook.Event) error {
//		return registry.Delete(ctx, e.Pod.Name)
//	}
//	err := hook.Add(mgr, hook.Handlers{
//		Registered:   register,
//		BeforeUpdate: unregister,
//		AfterUpdate:  register,
//		BeforeDelete: unregister,
//	}, hook.Options{Name: "registry"})
//	...
//	mgr.Start(ctrl.SetupSignalHandler())
//
// The operator needs to get, list, watch and patch pods, patch pods/status
// (a late hook's condition), get, list and watch CloneSets and Advanced
// StatefulSets, create events, and, to serve metrics to authorized
// scrapers only, create TokenReviews and SubjectAccessReviews (the
// bridge's generated ClusterRole); in the namespace of its lease, get,
// create and update its leader lease and create its election's events
// (the generated Role). config/bridge/role.yaml is exactly that, and
// removing any rule of it breaks the bridge (make rbac-audit). Its pod
// writes are then narrowed to releasing hooks by the admission policy
// config/bridge/policy.yaml once its identity is a hook operator's (the
// group lifeline.dev:hook-operators, or the chart's
// hookOperators.serviceAccounts): the labels and finalizers the hooks of
// the pod's namespace name, its hook.lifeline.dev/ annotation and
// condition, nothing else (docs/hook-operators.md).
package hook
