package migration

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	policyv1beta1 "github.com/lifeline-k8s/lifeline/api/policy/v1beta1"
)

// Seed 001's hook labels: its operator releases a hook by setting them
// "false".
const (
	inPlaceHook = "example.com/unready-blocker-inplace"
	deleteHook  = "example.com/unready-blocker-delete"
)

// workloads is what a user runs under OpenKruise before the swap: a seed
// 001 CloneSet with one pod held in PreparingUpdate and one in
// PreparingDelete, an Advanced StatefulSet with seed 001's hooks and one
// pod held in PreparingUpdate, a guarded CloneSet under a budget that
// allows nothing, and a StatefulSet whose pods a PersistentPodState keeps
// on their nodes.
type workloads struct {
	ns string
	// before are the pods as the swap found them.
	before map[string]podFacts
	// revisions are the web CloneSet's ControllerRevisions and its update
	// revision before the swap.
	revisions      []string
	updateRevision string
	held           struct{ update, delete string }
	// ordered is the Advanced StatefulSet's part of the scene, agent the
	// Advanced DaemonSet's.
	ordered orderedScene
	agent   agentScene
}

type podFacts struct {
	uid      types.UID
	restarts int32
	hash     string
	state    string
	image    string
	node     string
}

// createUnderOpenKruise builds the scene with OpenKruise and seed 001's
// operator running, and leaves the two pods held with the operator
// stopped.
//
// withOrdered adds the Advanced StatefulSet and an Advanced DaemonSet
// (stored as v1beta1 only): the set's hooks are v1beta1-only fields, which CRDs storing v1alpha1 prune (OpenKruise's own loss, which
// Lifeline's conversion keeps; see docs/statefulset.md).
func createUnderOpenKruise(t *testing.T, consul string, withOrdered bool) *workloads {
	ctx := context.Background()
	w := &workloads{ns: newNamespace(t)}
	startOperator(t, consul)
	web := seedCloneSet(w.ns)
	if err := k8s.Create(ctx, web); err != nil {
		t.Fatal(err)
	}
	waitPods(t, w.ns, "app=web", "3 web pods Normal and registered", func(pods []corev1.Pod) bool {
		return len(pods) == 3 && all(pods, func(p corev1.Pod) bool {
			return p.Labels[pub.LifecycleStateKey] == string(pub.LifecycleStateNormal) && p.Labels["example.com/newly-create"] == "false"
		})
	})
	if withOrdered {
		createOrderedUnderOpenKruise(t, w.ns)
		w.agent = createAgentUnderOpenKruise(t, w.ns)
	}
	stopOperator(t)
	if withOrdered {
		w.ordered = holdOrderedUpdate(t, w.ns)
	}

	// A scale-in that names its pod: OpenKruise holds it in
	// PreparingDelete for the operator, which is stopped.
	pods := listPods(t, w.ns, "app=web")
	w.held.delete = pods[0].Name
	patchCloneSet(t, w.ns, "web", fmt.Sprintf(`{"spec":{"replicas":2,"scaleStrategy":{"podsToDelete":[%q]}}}`, w.held.delete))
	waitPods(t, w.ns, "app=web", "the named pod held in PreparingDelete", func(pods []corev1.Pod) bool {
		return stateOf(pods, w.held.delete) == string(pub.LifecycleStatePreparingDelete)
	})
	// An in-place update of one pod of two: it waits in PreparingUpdate.
	patchCloneSet(t, w.ns, "web", `{"spec":{"updateStrategy":{"partition":1},"template":{"spec":{"containers":[{"name":"main","image":"nginx:1.28"}]}}}}`)
	waitPods(t, w.ns, "app=web", "one pod held in PreparingUpdate", func(pods []corev1.Pod) bool {
		n := 0
		for _, p := range pods {
			if p.Labels[pub.LifecycleStateKey] == string(pub.LifecycleStatePreparingUpdate) {
				w.held.update = p.Name
				n++
			}
		}
		return n == 1 && w.held.update != w.held.delete
	})

	guarded := plainCloneSet(w.ns, "guarded", 2)
	if err := k8s.Create(ctx, guarded); err != nil {
		t.Fatal(err)
	}
	// The budget is written in v1beta1, as a user of the module may have.
	zero := intstr.FromInt32(0)
	budget := &policyv1beta1.PodUnavailableBudget{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "guarded"},
		Spec: policyv1beta1.PodUnavailableBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "guarded"}}, MaxUnavailable: &zero}}
	if err := k8s.Create(ctx, budget); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, "OpenKruise's budget status: 2 pods, none may go", func(ctx context.Context) (bool, string, error) {
		b := &policyv1beta1.PodUnavailableBudget{}
		if err := k8s.Get(ctx, ctrlclient.ObjectKeyFromObject(budget), b); err != nil {
			return false, err.Error(), nil
		}
		return b.Status.TotalReplicas == 2 && b.Status.CurrentAvailable == 2 && b.Status.UnavailableAllowed == 0, fmt.Sprintf("%+v", b.Status), nil
	})

	createStatefulSetWithState(t, w.ns)
	w.before = snapshot(t, w.ns)
	w.revisions, w.updateRevision = revisionsOf(t, w.ns, "web")
	return w
}

// checkAfterSwap is what Lifeline must show once it runs in OpenKruise's
// place: the same pods, the held hooks still held until the operator
// releases them and then carried through, the budget refusing, a rebuilt
// StatefulSet pod back on its recorded node, and a new rollout finishing
// with the revision names OpenKruise gave.
func checkAfterSwap(t *testing.T, w *workloads, consul string) {
	ctx := context.Background()
	waitLifelineReconciled(t, w.ns, "web")
	after := snapshot(t, w.ns)
	for name, b := range w.before {
		a, ok := after[name]
		switch {
		case !ok:
			t.Errorf("pod %s is gone after the swap", name)
		case a.uid != b.uid:
			t.Errorf("pod %s was recreated by the swap (uid %s → %s)", name, b.uid, a.uid)
		case a.restarts != b.restarts:
			t.Errorf("pod %s restarted in the swap (%d → %d restarts)", name, b.restarts, a.restarts)
		case a.state != b.state || a.hash != b.hash || a.image != b.image:
			t.Errorf("pod %s changed in the swap: %+v → %+v", name, b, a)
		}
	}
	for name := range after {
		if _, ok := w.before[name]; !ok {
			t.Errorf("the swap created pod %s", name)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	t.Logf("OpenKruise → Lifeline: %d pods carried over, 0 deleted or recreated, 0 containers restarted; held: %s (PreparingUpdate), %s (PreparingDelete)",
		len(w.before), w.held.update, w.held.delete)

	startOperator(t, consul)
	waitPods(t, w.ns, "app=web", "the held pods released: one deleted, one updated in place", func(pods []corev1.Pod) bool {
		if len(pods) != 2 || slices.ContainsFunc(pods, func(p corev1.Pod) bool { return p.Name == w.held.delete }) {
			return false
		}
		for _, p := range pods {
			if p.UID != w.before[p.Name].uid || p.Labels[pub.LifecycleStateKey] != string(pub.LifecycleStateNormal) || p.Labels[inPlaceHook] != "true" {
				return false
			}
			if p.Name == w.held.update && (p.Spec.Containers[0].Image != "nginx:1.28" || p.Labels["controller-revision-hash"] != w.updateRevision) {
				return false
			}
		}
		return true
	})

	if w.ordered.held != "" {
		checkOrderedAfterSwap(t, w.ns, w.ordered, w.before)
		checkAgentAfterSwap(t, w.ns, w.agent)
	}
	checkBudgetRefuses(t, w.ns)
	checkStatefulSetPodReturns(t, w.ns)

	// A new rollout under Lifeline: the last pod, through the hook.
	patchCloneSet(t, w.ns, "web", `{"spec":{"updateStrategy":{"partition":0}}}`)
	waitPods(t, w.ns, "app=web", "both web pods updated in place to OpenKruise's update revision", func(pods []corev1.Pod) bool {
		return len(pods) == 2 && all(pods, func(p corev1.Pod) bool {
			return p.UID == w.before[p.Name].uid && p.Spec.Containers[0].Image == "nginx:1.28" &&
				p.Labels["controller-revision-hash"] == w.updateRevision && p.Labels[pub.LifecycleStateKey] == string(pub.LifecycleStateNormal)
		})
	})
	revisions, updateRevision := revisionsOf(t, w.ns, "web")
	if updateRevision != w.updateRevision || !slices.Equal(revisions, w.revisions) {
		t.Errorf("revisions after the swap %v (update %s), OpenKruise's %v (update %s)", revisions, updateRevision, w.revisions, w.updateRevision)
	}
	cs := &appsv1alpha1.CloneSet{}
	if err := k8s.Get(ctx, ctrlclient.ObjectKey{Namespace: w.ns, Name: "web"}, cs); err != nil {
		t.Fatal(err)
	}
	if cs.Status.UpdatedReplicas != 2 || cs.Status.CurrentRevision != w.updateRevision {
		t.Errorf("CloneSet status after the rollout: %+v", cs.Status)
	}
}

func seedCloneSet(ns string) *appsv1alpha1.CloneSet {
	cs := plainCloneSet(ns, "web", 3)
	cs.Spec.Lifecycle = &pub.Lifecycle{
		InPlaceUpdate: &pub.LifecycleHook{LabelsHandler: map[string]string{inPlaceHook: "true"}},
		PreDelete:     &pub.LifecycleHook{LabelsHandler: map[string]string{deleteHook: "true"}},
	}
	for k, v := range map[string]string{inPlaceHook: "true", deleteHook: "true", "example.com/newly-create": "true"} {
		cs.Spec.Template.Labels[k] = v
	}
	cs.Spec.UpdateStrategy.Type = appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType
	cs.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(1))
	return cs
}

func plainCloneSet(ns, name string, replicas int32) *appsv1alpha1.CloneSet {
	// Two maps: the template gains hook labels the selector must not.
	return &appsv1alpha1.CloneSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: appsv1alpha1.CloneSetSpec{
		Replicas: ptr.To(replicas), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "nginx:1.27"}}}}}}
}

// createStatefulSetWithState runs a two-pod StatefulSet whose
// PersistentPodState (v1alpha1) requires each pod's node, and waits for
// OpenKruise to record both.
func createStatefulSetWithState(t *testing.T, ns string) {
	ctx := context.Background()
	labels := map[string]string{"app": "db"}
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"}, Spec: appsv1.StatefulSetSpec{
		Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: labels}, ServiceName: "db",
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "postgres:17"}}}}}}
	pps := &appsv1alpha1.PersistentPodState{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"}, Spec: appsv1alpha1.PersistentPodStateSpec{
		TargetReference:            appsv1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db"},
		RequiredPersistentTopology: &appsv1alpha1.NodeTopologyTerm{NodeTopologyKeys: []string{corev1.LabelHostname}}}}
	if err := k8s.Create(ctx, pps); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Create(ctx, sts); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, "OpenKruise records both StatefulSet pods", func(ctx context.Context) (bool, string, error) {
		got := &appsv1alpha1.PersistentPodState{}
		if err := k8s.Get(ctx, ctrlclient.ObjectKeyFromObject(pps), got); err != nil {
			return false, err.Error(), nil
		}
		return len(got.Status.PodStates) == 2, fmt.Sprintf("%+v", got.Status), nil
	})
}

// checkBudgetRefuses: Lifeline computes the budget (it alone writes its
// conditions) and refuses an eviction it does not allow.
func checkBudgetRefuses(t *testing.T, ns string) {
	ctx := context.Background()
	eventually(t, time.Minute, "Lifeline's budget status", func(ctx context.Context) (bool, string, error) {
		b := &policyv1beta1.PodUnavailableBudget{}
		if err := k8s.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: "guarded"}, b); err != nil {
			return false, err.Error(), nil
		}
		return len(b.Status.Conditions) > 0 && b.Status.UnavailableAllowed == 0 && b.Status.CurrentAvailable == 2, fmt.Sprintf("%+v", b.Status), nil
	})
	victim := listPods(t, ns, "app=guarded")[0]
	evict := func(ctx context.Context, dryRun []string) error {
		return client.PolicyV1().Evictions(ns).Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: victim.Name},
			DeleteOptions: &metav1.DeleteOptions{DryRun: dryRun}})
	}
	// Dry runs until the namespace's fail-closed webhooks are in force, so
	// that no pod is lost while they are not.
	eventually(t, time.Minute, "a dry-run eviction refused", func(ctx context.Context) (bool, string, error) {
		err := evict(ctx, []string{metav1.DryRunAll})
		return apierrors.IsTooManyRequests(err), fmt.Sprint(err), nil
	})
	if err := evict(ctx, nil); !apierrors.IsTooManyRequests(err) {
		t.Errorf("evicting %s under a budget that allows nothing: %v, want 429", victim.Name, err)
	}
	pod, err := client.CoreV1().Pods(ns).Get(ctx, victim.Name, metav1.GetOptions{})
	if err != nil || pod.UID != victim.UID || pod.DeletionTimestamp != nil {
		t.Errorf("the guarded pod is gone or going: %v", err)
	}
}

// checkStatefulSetPodReturns deletes db-0 and requires its successor on the
// node OpenKruise recorded, required there by Lifeline's placement
// webhook.
func checkStatefulSetPodReturns(t *testing.T, ns string) {
	ctx := context.Background()
	pps := &appsv1alpha1.PersistentPodState{}
	if err := k8s.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: "db"}, pps); err != nil {
		t.Fatal(err)
	}
	recorded := pps.Status.PodStates["db-0"].NodeName
	old, err := client.CoreV1().Pods(ns).Get(ctx, "db-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if recorded == "" || old.Spec.NodeName != recorded {
		t.Fatalf("db-0 runs on %s, recorded %q", old.Spec.NodeName, recorded)
	}
	if err := client.CoreV1().Pods(ns).Delete(ctx, "db-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, "db-0 rebuilt on "+recorded+", required there", func(ctx context.Context) (bool, string, error) {
		p, err := client.CoreV1().Pods(ns).Get(ctx, "db-0", metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		// Required placement is a nodeSelector, as OpenKruise writes it;
		// the annotation names the PersistentPodState that placed it.
		required := p.Spec.NodeSelector[corev1.LabelHostname] == recorded && p.Annotations[appsv1alpha1.InjectedPersistentPodStateKey] == "db"
		return p.UID != old.UID && p.Spec.NodeName == recorded && required,
			fmt.Sprintf("uid %s node %q nodeSelector %v annotations %v", p.UID, p.Spec.NodeName, p.Spec.NodeSelector, p.Annotations), nil
	})
}

// waitLifelineReconciled waits until Lifeline's manager reports the
// CloneSet in its metrics: it has read it and planned.
func waitLifelineReconciled(t *testing.T, ns, name string) {
	eventually(t, time.Minute, "Lifeline reconciled CloneSet "+name, func(ctx context.Context) (bool, string, error) {
		families, err := lifeline.Scraper.Families(lifeline.MetricsURL)
		if err != nil {
			return false, err.Error(), nil
		}
		for _, m := range families["lifeline_cloneset_replicas"].GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["namespace"] == ns && labels["cloneset"] == name && labels["kind"] == "desired" {
				return true, "", nil
			}
		}
		return false, "not in lifeline_cloneset_replicas", nil
	})
}

func snapshot(t *testing.T, ns string) map[string]podFacts {
	t.Helper()
	pods, err := client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]podFacts{}
	for _, p := range pods.Items {
		f := podFacts{uid: p.UID, hash: p.Labels["controller-revision-hash"], state: p.Labels[pub.LifecycleStateKey],
			image: p.Spec.Containers[0].Image, node: p.Spec.NodeName}
		for _, s := range p.Status.ContainerStatuses {
			f.restarts += s.RestartCount
		}
		out[p.Name] = f
	}
	return out
}

// revisionsOf lists the names of a CloneSet's ControllerRevisions, sorted,
// and its update revision.
func revisionsOf(t *testing.T, ns, name string) ([]string, string) {
	t.Helper()
	cs := &appsv1alpha1.CloneSet{}
	if err := k8s.Get(context.Background(), ctrlclient.ObjectKey{Namespace: ns, Name: name}, cs); err != nil {
		t.Fatal(err)
	}
	return ownedRevisions(t, ns, cs.UID), cs.Status.UpdateRevision
}

// ownedRevisions lists the names of the ControllerRevisions owner
// controls, sorted.
func ownedRevisions(t *testing.T, ns string, owner types.UID) []string {
	t.Helper()
	list, err := client.AppsV1().ControllerRevisions(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, cr := range list.Items {
		if ref := metav1.GetControllerOf(&cr); ref != nil && ref.UID == owner {
			names = append(names, cr.Name)
		}
	}
	sort.Strings(names)
	return names
}

func patchCloneSet(t *testing.T, ns, name, patch string) {
	t.Helper()
	cs := &appsv1alpha1.CloneSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if err := k8s.Patch(context.Background(), cs, ctrlclient.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatalf("patching CloneSet %s with %s: %v", name, patch, err)
	}
}

func listPods(t *testing.T, ns, selector string) []corev1.Pod {
	t.Helper()
	pods, err := client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(pods.Items, func(i, j int) bool { return pods.Items[i].Name < pods.Items[j].Name })
	return pods.Items
}

func waitPods(t *testing.T, ns, selector, what string, ok func([]corev1.Pod) bool) {
	t.Helper()
	eventually(t, 2*time.Minute, what, func(ctx context.Context) (bool, string, error) {
		pods := listPods(t, ns, selector)
		var states []string
		for _, p := range pods {
			states = append(states, fmt.Sprintf("%s:%s:%s:%s", p.Name, p.Labels[pub.LifecycleStateKey], p.Spec.Containers[0].Image, p.UID))
		}
		return ok(pods), fmt.Sprint(states), nil
	})
}

func stateOf(pods []corev1.Pod, name string) string {
	for _, p := range pods {
		if p.Name == name {
			return p.Labels[pub.LifecycleStateKey]
		}
	}
	return ""
}

func all(pods []corev1.Pod, ok func(corev1.Pod) bool) bool {
	for _, p := range pods {
		if !ok(p) {
			return false
		}
	}
	return true
}

const operatorName = "seed001-operator"

func startOperator(t *testing.T, consul string) {
	t.Helper()
	if err := local.StartHookOperator(context.Background(), root(t), local.Dir, operatorName, "./test/e2e/seed001operator", false, "--consul="+consul); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = local.StopProcess(operatorName, syscall.SIGTERM) })
}

func stopOperator(t *testing.T) {
	t.Helper()
	if err := local.StopProcess(operatorName, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
}
