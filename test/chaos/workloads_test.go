package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	policyv1alpha1 "github.com/lifeline-k8s/lifeline/api/policy/v1alpha1"
	"github.com/lifeline-k8s/lifeline/hack/cluster"
	"github.com/lifeline-k8s/lifeline/internal/bridge"
)

// registered is the seeds' hook label: the bridge sets it "true" once
// the pod is in the registry and "false" once it is out.
const registered = "example.com/registered"

// workload is one workload of the run and what it is held to.
type workload struct {
	Workload
	obj ctrlclient.Object
	// replicas is what it should run now; maxUnavailable its rollouts'
	// limit; budget its PodUnavailableBudget's (0: none).
	replicas       int32
	maxUnavailable int
	budget         int
	// real: its pods run on the real nodes.
	real bool
}

func template(name string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "app:1"}}},
	}
}

func percent(n int32, p int) int { return max(1, int(n)*p/100) }

// hookedCloneSet is the seeds' scenario: preNormal, inPlaceUpdate and
// preDelete hooks on the registered label, markPodNotReady, driven by the
// bridge, guarded against direct deletes and evictions.
func hookedCloneSet(ns string, n int32) *workload {
	hook := &pub.LifecycleHook{LabelsHandler: map[string]string{registered: "true"}}
	marked := &pub.LifecycleHook{LabelsHandler: map[string]string{registered: "true"}, MarkPodNotReady: true}
	t := template("hooked")
	t.Labels[registered] = "false"
	cs := &appsv1alpha1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hooked", Labels: map[string]string{"registry": "chaos"},
			Annotations: map[string]string{"lifeline.dev/guard-hooks": "true"}},
		Spec: appsv1alpha1.CloneSetSpec{
			Replicas: ptr.To(n), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "hooked"}}, Template: t,
			Lifecycle: &pub.Lifecycle{PreNormal: hook, InPlaceUpdate: marked, PreDelete: marked},
			UpdateStrategy: appsv1alpha1.CloneSetUpdateStrategy{Type: appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType,
				MaxUnavailable: ptr.To(intstr.FromString("20%"))},
		},
	}
	return &workload{Workload: Workload{Name: "hooked", Kind: "CloneSet", Hold: map[string]string{registered: "true"},
		PreNormal: true, InPlaceUpdate: true, PreDelete: true, InstanceIDs: true}, obj: cs, replicas: n, maxUnavailable: percent(n, 20)}
}

// realCloneSet is the seeds' hooked CloneSet on the real nodes: its pods
// run hack/testapp's containers, whose readiness a kubelet's exec probe
// decides and whose in-place update a real container restart makes. The
// same bridge registers them.
func realCloneSet(ns string, n int32) *workload {
	w := hookedCloneSet(ns, n)
	cs := w.obj.(*appsv1alpha1.CloneSet)
	cs.Name, w.Name = "real", "real"
	cs.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "real"}}
	t := &cs.Spec.Template
	t.Labels["app"] = "real"
	t.Spec.NodeSelector = map[string]string{cluster.RealNodeLabel: "true"}
	t.Spec.Tolerations = []corev1.Toleration{cluster.RealNodeToleration()}
	t.Spec.TerminationGracePeriodSeconds = ptr.To[int64](5)
	t.Spec.Containers = []corev1.Container{{Name: "main", Image: realImage(1), ImagePullPolicy: corev1.PullNever,
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"/testapp", "probe"}}}, PeriodSeconds: 1}}}
	w.real = true
	return w
}

// realImage is the test application's image for a release: the versions
// that become ready, in turn.
func realImage(release int) string {
	return cluster.TestAppImage([]string{"v1", "v2", "v3"}[release%3])
}

// image is a release's image for a workload's pods.
func (w *workload) image(release int) string {
	if w.real {
		return realImage(release)
	}
	return "app:" + strconv.Itoa(release)
}

// budgetedCloneSet has no hooks and a PodUnavailableBudget tighter than
// its maxUnavailable.
func budgetedCloneSet(ns string, n int32) *workload {
	cs := &appsv1alpha1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "budgeted"},
		Spec: appsv1alpha1.CloneSetSpec{
			Replicas: ptr.To(n), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "budgeted"}}, Template: template("budgeted"),
			UpdateStrategy: appsv1alpha1.CloneSetUpdateStrategy{Type: appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType,
				MaxUnavailable: ptr.To(intstr.FromString("20%"))},
		},
	}
	return &workload{Workload: Workload{Name: "budgeted", Kind: "CloneSet", InstanceIDs: true}, obj: cs, replicas: n,
		maxUnavailable: percent(n, 20), budget: percent(n, 10)}
}

func (w *workload) budgetObject() *policyv1alpha1.PodUnavailableBudget {
	return &policyv1alpha1.PodUnavailableBudget{ObjectMeta: metav1.ObjectMeta{Namespace: w.obj.GetNamespace(), Name: w.Name},
		Spec: policyv1alpha1.PodUnavailableBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": w.Name}},
			MaxUnavailable: ptr.To(intstr.FromInt(w.budget))}}
}

// statefulSet is an Advanced StatefulSet whose PersistentPodState
// requires each pod back in its zone.
func statefulSet(ns string, n int32) *workload {
	t := template("stateful")
	// OpenKruise asks for the gate with InPlaceIfPossible.
	t.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: pub.InPlaceUpdateReady}}
	set := &appsv1beta1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "stateful"},
		Spec: appsv1beta1.StatefulSetSpec{
			Replicas: ptr.To(n), PodManagementPolicy: "Parallel", ServiceName: "stateful",
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "stateful"}}, Template: t,
			UpdateStrategy: appsv1beta1.StatefulSetUpdateStrategy{Type: "RollingUpdate", RollingUpdate: &appsv1beta1.RollingUpdateStatefulSetStrategy{
				MaxUnavailable: ptr.To(intstr.FromString("20%")), PodUpdatePolicy: appsv1beta1.InPlaceIfPossiblePodUpdateStrategyType}},
		},
	}
	return &workload{Workload: Workload{Name: "stateful", Kind: "StatefulSet", RequiredZone: true}, obj: set, replicas: n, maxUnavailable: percent(n, 20)}
}

func (w *workload) placementObject() *appsv1alpha1.PersistentPodState {
	return &appsv1alpha1.PersistentPodState{ObjectMeta: metav1.ObjectMeta{Namespace: w.obj.GetNamespace(), Name: w.Name},
		Spec: appsv1alpha1.PersistentPodStateSpec{
			TargetReference:            appsv1alpha1.TargetReference{APIVersion: "apps.kruise.io/v1beta1", Kind: "StatefulSet", Name: w.Name},
			RequiredPersistentTopology: &appsv1alpha1.NodeTopologyTerm{NodeTopologyKeys: []string{corev1.LabelTopologyZone}}}}
}

// daemonSet is an Advanced DaemonSet on every node, updated in place.
func daemonSet(ns string, nodes int) *workload {
	set := &appsv1beta1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "daemon"},
		Spec: appsv1beta1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "daemon"}}, Template: template("daemon"),
			UpdateStrategy: appsv1beta1.DaemonSetUpdateStrategy{Type: "RollingUpdate", RollingUpdate: &appsv1beta1.RollingUpdateDaemonSet{
				Type: appsv1beta1.InplaceRollingUpdateType, MaxUnavailable: ptr.To(intstr.FromInt(1))}},
		},
	}
	return &workload{Workload: Workload{Name: "daemon", Kind: "DaemonSet"}, obj: set, replicas: int32(nodes), maxUnavailable: 1}
}

// podTemplate is the workload's pod template, to change in place.
func podTemplate(obj ctrlclient.Object) *corev1.PodTemplateSpec {
	switch o := obj.(type) {
	case *appsv1alpha1.CloneSet:
		return &o.Spec.Template
	case *appsv1beta1.StatefulSet:
		return &o.Spec.Template
	case *appsv1beta1.DaemonSet:
		return &o.Spec.Template
	}
	panic(fmt.Sprintf("no template in %T", obj))
}

func setSelector(obj ctrlclient.Object, app string) {
	obj.(*appsv1alpha1.CloneSet).Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}
}

func setReplicas(obj ctrlclient.Object, n int32) {
	switch o := obj.(type) {
	case *appsv1alpha1.CloneSet:
		o.Spec.Replicas = &n
	case *appsv1beta1.StatefulSet:
		o.Spec.Replicas = &n
	default:
		panic(fmt.Sprintf("%T does not scale", obj))
	}
}

// change reads the workload, changes it and writes it, retrying through
// conflicts and outages for a minute.
func (e *env) change(ctx context.Context, w *workload, f func(ctrlclient.Object)) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if last = e.k8s.Get(ctx, ctrlclient.ObjectKeyFromObject(w.obj), w.obj); last != nil {
			return false, nil
		}
		f(w.obj)
		last = e.k8s.Update(ctx, w.obj)
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("changing %s: %v (%w)", w.Name, last, err)
	}
	return nil
}

// settled says whether the workload runs what it should, judged from its
// pods, not its status: replicas live pods, each Ready, Normal and of the
// current template; for the bridge's workload, the registry holding
// exactly those pods.
func (e *env) settled(ctx context.Context, w *workload) (bool, string, error) {
	pods, err := e.client.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + w.Name})
	if err != nil {
		return false, err.Error(), nil
	}
	want := RevOf(&corev1.Pod{Spec: podTemplate(w.obj).Spec}, time.Time{}, false).Spec
	live, ok := map[string]bool{}, 0
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.DeletionTimestamp != nil {
			continue
		}
		live[string(p.UID)] = true
		if r := RevOf(p, time.Time{}, false); r.Available() && r.Spec == want {
			ok++
		}
	}
	why := fmt.Sprintf("%s: %d live pods, %d available and current, want %d", w.Name, len(live), ok, w.replicas)
	if len(live) != int(w.replicas) || ok != int(w.replicas) {
		return false, why, nil
	}
	if w.PreNormal {
		// The etcd client waits out its context for a registry that is
		// down; a step's poll must see that, not hang on it.
		readCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		resp, err := e.reg.Get(readCtx, "/services/"+e.ns+"/"+w.Name+"/", clientv3.WithPrefix())
		if err != nil {
			return false, "reading the registry: " + err.Error(), nil
		}
		in := 0
		for _, kv := range resp.Kvs {
			var inst bridge.Instance
			if json.Unmarshal(kv.Value, &inst) == nil && live[inst.UID] {
				in++
			} else {
				return false, fmt.Sprintf("%s: registry holds %s of no live pod", w.Name, kv.Key), nil
			}
		}
		if in != len(live) {
			return false, fmt.Sprintf("%s: %d of %d pods registered", w.Name, in, len(live)), nil
		}
	}
	return true, why, nil
}
