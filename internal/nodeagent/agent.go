package nodeagent

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/lifeline-k8s/lifeline/pkg/podfacts"
)

var restarts = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "lifeline_node_agent_container_restarts_total",
	Help: "Containers the node agent stopped so that the kubelet starts them with the env of their pod's labels and annotations now.",
})

func init() { metrics.Registry.MustRegister(restarts) }

// kubeletWait is how soon a stop waiting for the kubelet's copy of the
// pod is tried again: the kubelet's watch is rarely more than a second
// behind.
const kubeletWait = 200 * time.Millisecond

// Agent reconciles the pods of one node (its client's cache holds only
// them).
type Agent struct {
	Client   client.Client
	Runtime  Runtime
	Kubelet  Kubelet
	Recorder events.EventRecorder
	// Settle holds each stop until the kubelet has had the pod's new
	// values for Settle.For.
	Settle *Settle
}

// due keeps the stops the kubelet is ready for: its copy of the pod has
// the new values (KubeletHolds), for long enough (Settle); wait is when
// to look again at the others.
func (a *Agent) due(ctx context.Context, pod *corev1.Pod, stops []Stop) (ready []Stop, wait time.Duration, err error) {
	if len(stops) == 0 {
		a.Settle.Forget(pod.UID)
		return nil, 0, nil
	}
	kubeletPod, err := a.Kubelet.Pod(ctx, pod.UID)
	if err != nil {
		return nil, 0, err
	}
	held, waiting := KubeletHolds(pod, kubeletPod, stops)
	ready, wait = a.Settle.Ready(pod, held, time.Now())
	if waiting && (wait == 0 || kubeletWait < wait) {
		wait = kubeletWait
	}
	return ready, wait, nil
}

// SetupWithManager registers the agent for pods.
func (a *Agent) SetupWithManager(mgr ctrl.Manager) error {
	// Several at once: a stop waits for the container's grace period.
	return ctrl.NewControllerManagedBy(mgr).For(&corev1.Pod{}).Named("nodeagent").
		WithOptions(controller.Options{MaxConcurrentReconciles: 4}).Complete(a)
}

// Reconcile reads the pod and its containers' env from the runtime, plans,
// then stops what the plan says and writes its report.
func (a *Agent) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	pod := &corev1.Pod{}
	if err := a.Client.Get(ctx, req.NamespacedName, pod); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if pod.DeletionTimestamp != nil {
		return ctrl.Result{}, nil
	}
	runtime, err := a.containers(ctx, pod)
	if err != nil {
		return ctrl.Result{}, err
	}
	plan := PlanPod(pod, runtime)
	var result ctrl.Result
	if plan.Stops, result.RequeueAfter, err = a.due(ctx, pod, plan.Stops); err != nil {
		return ctrl.Result{}, err
	}
	for _, s := range plan.Stops {
		log.FromContext(ctx).Info("stopping container", "container", s.Container, "containerID", s.ContainerID, "reason", s.Reason)
		if err := a.stop(ctx, pod, s); err != nil {
			return ctrl.Result{}, err
		}
	}
	if plan.Report == nil {
		return result, nil
	}
	patch, err := ReportPatch(pod.UID, plan.Report)
	if err != nil {
		return ctrl.Result{}, err
	}
	err = a.Client.Patch(ctx, pod, client.RawPatch(types.MergePatchType, patch))
	if apierrors.IsNotFound(err) {
		return ctrl.Result{}, nil
	}
	return result, err
}

// containers asks the runtime about the running containers whose env
// reads the pod's metadata.
func (a *Agent) containers(ctx context.Context, pod *corev1.Pod) (map[string]Container, error) {
	reads := map[string]bool{}
	for _, c := range pod.Spec.Containers {
		reads[c.Name] = len(podfacts.MetadataEnv(c)) > 0
	}
	out := map[string]Container{}
	for _, cs := range pod.Status.ContainerStatuses {
		if !reads[cs.Name] || cs.ContainerID == "" || cs.State.Running == nil {
			continue
		}
		c, ok, err := a.Runtime.Container(ctx, cs.ContainerID)
		if err != nil {
			return nil, err
		}
		if ok {
			out[cs.ContainerID] = c
		}
	}
	return out, nil
}

func (a *Agent) stop(ctx context.Context, pod *corev1.Pod, s Stop) error {
	grace := int64(corev1.DefaultTerminationGracePeriodSeconds)
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		grace = *pod.Spec.TerminationGracePeriodSeconds
	}
	a.Recorder.Eventf(pod, nil, corev1.EventTypeNormal, "RestartingContainer", "Restart", "Stopping container %s: %s; the kubelet starts it again", s.Container, s.Reason)
	if err := a.Runtime.Stop(ctx, s.ContainerID, grace); err != nil {
		a.Recorder.Eventf(pod, nil, corev1.EventTypeWarning, "FailedRestartContainer", "Restart", "Stopping container %s: %v", s.Container, err)
		return fmt.Errorf("stopping container %s of %s/%s: %w", s.Container, pod.Namespace, pod.Name, err)
	}
	restarts.Inc()
	return nil
}
