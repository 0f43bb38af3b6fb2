package manager

import (
	"flag"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	"github.com/lifeline-k8s/lifeline/internal/hookguard"
	"github.com/lifeline-k8s/lifeline/internal/hookhandlers"
	"github.com/lifeline-k8s/lifeline/internal/phases"
	"github.com/lifeline-k8s/lifeline/internal/podadmission"
	"github.com/lifeline-k8s/lifeline/internal/protection"
	"github.com/lifeline-k8s/lifeline/pkg/workload"
)

// WorkloadOptions are the flags every kind of workload's controller reads.
type WorkloadOptions struct {
	// ExpectationTimeout bounds how long a write the cache never shows
	// holds a workload back.
	ExpectationTimeout time.Duration
	// HookWaitWarning is how long a pod may wait on a lifecycle hook
	// before a Warning event says so; 0 turns it off.
	HookWaitWarning time.Duration
}

// into sets the shared options of one kind's controller.
func (o *WorkloadOptions) into(c *phases.Options) {
	c.ExpectationTimeout, c.HookWaitWarning = o.ExpectationTimeout, o.HookWaitWarning
}

// shell is a workload controller's shell in mgr, its events by recorder
// (routine: see recorder.Broadcaster.For).
func shell(mgr ctrl.Manager, s *Shared, recorder string, routine ...string) phases.Shell {
	return phases.Shell{Client: HubClient(mgr), APIReader: HubReader(mgr), Recorder: s.Events.For(recorder, routine...), Budgets: s.Budgets, Pods: s.Pods}
}

// Workloads is what every kind of workload shares, whichever kinds the
// manager runs, for every kind registered in pkg/workload: the flags
// their controllers read, the hook guard (a workload that guards its
// hooks makes its namespace ask for the fail-closed disruption webhooks)
// and the hook handlers published for hook operators.
func Workloads(o *WorkloadOptions) *Feature {
	var protect []protection.Source
	var handlers []hookhandlers.Source
	for _, k := range workload.Kinds() {
		protect = append(protect, protection.Source{Kind: protection.Disruptions, Object: k.New(), List: k.NewList(),
			Holds: func(obj client.Object) bool {
				v := k.View(obj)
				guards, _ := hookguard.GuardsHooks(&v)
				return guards
			}})
		handlers = append(handlers, hookhandlers.Source{Object: k.New(), List: k.NewList(),
			Lifecycle: func(obj client.Object) *pub.Lifecycle { return k.View(obj).Lifecycle }})
	}
	return &Feature{
		Name: "workloads",
		Flags: func(fs *flag.FlagSet) {
			fs.DurationVar(&o.ExpectationTimeout, "expectation-timeout", 5*time.Minute, "How long a write the cache never shows may hold a workload (CloneSet, Advanced StatefulSet, Advanced DaemonSet) back.")
			fs.DurationVar(&o.HookWaitWarning, "hook-wait-warning", 10*time.Minute,
				"How long a pod may wait on a lifecycle hook before a LifecycleHookWaiting Warning event on its workload says so (again every as long while pods still wait); 0 turns it off.")
		},
		Webhooks: func(mgr ctrl.Manager, s *Shared, w Webhooks) {
			w.Validating.Register("hook-guard", &hookguard.HookGuard{
				Cache: HubClient(mgr), Live: HubReader(mgr), Writer: HubClient(mgr), Recorder: s.Events.For("hook-guard"),
				Exempt: map[string]bool{s.Self: true},
			}, podadmission.DisruptionTargets...)
		},
		MatchConditions: map[string][]podadmission.MatchCondition{
			// A pod already terminating is gone from service, and every
			// feature lets its final deletion through.
			"vpod.lifeline.dev": {{Name: "not-terminating", Expression: "!has(oldObject.metadata.deletionTimestamp)"}},
		},
		Protection:   protect,
		FailClosed:   map[string]protection.Kind{"vpod.lifeline.dev": protection.Disruptions, "vpodeviction.lifeline.dev": protection.Disruptions},
		HookHandlers: handlers,
	}
}
