package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
)

func statefulSet(ns, name string, replicas int32) *appsv1.StatefulSet {
	labels := map[string]string{"app": name}
	return &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: appsv1.StatefulSetSpec{
		Replicas: ptr.To(replicas), ServiceName: name, PodManagementPolicy: appsv1.ParallelPodManagement,
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "nginx:1.27"}}}}}}
}

// waitRecords waits until the PersistentPodState records exactly the
// pods named, each Ready pod on its node.
func waitRecords(t *testing.T, ns, name string, pods ...string) *appsv1alpha1.PersistentPodState {
	t.Helper()
	pps := &appsv1alpha1.PersistentPodState{}
	eventually(t, time.Minute, "records of "+strings.Join(pods, ","), func(ctx context.Context) (bool, string, error) {
		if err := k8s.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: name}, pps); err != nil {
			return false, err.Error(), nil
		}
		if len(pps.Status.PodStates) != len(pods) {
			return false, fmt.Sprintf("%d records", len(pps.Status.PodStates)), nil
		}
		for _, p := range pods {
			st, ok := pps.Status.PodStates[p]
			if !ok || st.NodeName == "" {
				return false, "no record of " + p, nil
			}
			live := readPod(t, ns, p)
			if live == nil || live.Spec.NodeName != st.NodeName {
				return false, p + " not where recorded", nil
			}
		}
		return true, "", nil
	})
	return pps
}

// rebuild deletes every pod of the StatefulSet and waits until each is
// back, Ready, as a new pod.
func rebuild(t *testing.T, ns string, pods []string) map[string]*corev1.Pod {
	t.Helper()
	ctx := context.Background()
	uids := map[string]types.UID{}
	for _, p := range pods {
		uids[p] = readPod(t, ns, p).UID
		if err := client.CoreV1().Pods(ns).Delete(ctx, p, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	out := map[string]*corev1.Pod{}
	eventually(t, 2*time.Minute, "pods rebuilt and Ready", func(ctx context.Context) (bool, string, error) {
		for _, p := range pods {
			pod := readPod(t, ns, p)
			if pod == nil || pod.UID == uids[p] || pod.DeletionTimestamp != nil || podCondition(pod, corev1.PodReady) != corev1.ConditionTrue {
				return false, p + " not rebuilt yet", nil
			}
			out[p] = pod
		}
		return true, "", nil
	})
	return out
}

func nodeZone(t *testing.T, name string) string {
	t.Helper()
	n, err := client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return n.Labels[corev1.LabelTopologyZone]
}

// TestPersistentPodStateRequiredZone: a StatefulSet of 5 whose
// PersistentPodState requires the zone: every pod is recorded, every pod
// deleted comes back in its recorded zone, with the zone in its node
// selector and the injected annotation.
func TestPersistentPodStateRequiredZone(t *testing.T) {
	ns := newNamespace(t)
	create(t, statefulSet(ns, "db", 5))
	create(t, &appsv1alpha1.PersistentPodState{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"}, Spec: appsv1alpha1.PersistentPodStateSpec{
		TargetReference:            appsv1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db"},
		RequiredPersistentTopology: &appsv1alpha1.NodeTopologyTerm{NodeTopologyKeys: []string{corev1.LabelTopologyZone}}}})
	pods := []string{"db-0", "db-1", "db-2", "db-3", "db-4"}
	pps := waitRecords(t, ns, "db", pods...)
	for name, pod := range rebuild(t, ns, pods) {
		zone := pps.Status.PodStates[name].NodeTopologyLabels[corev1.LabelTopologyZone]
		if zone == "" || pod.Spec.NodeSelector[corev1.LabelTopologyZone] != zone || nodeZone(t, pod.Spec.NodeName) != zone ||
			pod.Annotations[appsv1alpha1.InjectedPersistentPodStateKey] != "db" {
			t.Errorf("%s came back on %s (zone %s) with selector %v, recorded zone %s", name, pod.Spec.NodeName, nodeZone(t, pod.Spec.NodeName), pod.Spec.NodeSelector, zone)
		}
	}
}

// TestPersistentPodStatePreferredNode: generated from the StatefulSet's
// annotations (OpenKruise's own spec), the PersistentPodState prefers the
// node: rebuilt pods return to their nodes; with one node cordoned its
// pods land elsewhere instead of hanging. The generated object follows
// the annotations and goes with the StatefulSet.
func TestPersistentPodStatePreferredNode(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	sts := statefulSet(ns, "web", 3)
	sts.Annotations = map[string]string{appsv1alpha1.AnnotationAutoGeneratePersistentPodState: "true",
		appsv1alpha1.AnnotationPreferredPersistentTopology: corev1.LabelHostname}
	create(t, sts)
	pods := []string{"web-0", "web-1", "web-2"}
	pps := waitRecords(t, ns, "web", pods...)
	if owner := metav1.GetControllerOf(pps); owner == nil || owner.Kind != "StatefulSet" || owner.Name != "web" ||
		len(pps.Spec.PreferredPersistentTopology) != 1 || pps.Spec.PreferredPersistentTopology[0].Weight != 100 {
		t.Fatalf("generated %+v owned by %v", pps.Spec, owner)
	}
	for name, pod := range rebuild(t, ns, pods) {
		recorded := pps.Status.PodStates[name].NodeName
		var preferred []corev1.PreferredSchedulingTerm
		if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil {
			preferred = a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution
		}
		if pod.Spec.NodeName != recorded || len(preferred) != 1 || preferred[0].Weight != 100 ||
			preferred[0].Preference.MatchExpressions[0].Values[0] != recorded || pod.Annotations[appsv1alpha1.InjectedPersistentPodStateKey] != "web" {
			t.Errorf("%s came back on %s, recorded %s, preferring %+v", name, pod.Spec.NodeName, recorded, preferred)
		}
	}
	// Cordon web-0's node: web-0 lands elsewhere.
	node := readPod(t, ns, "web-0").Spec.NodeName
	if _, err := client.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, []byte(`{"spec":{"unschedulable":true}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = client.CoreV1().Nodes().Patch(context.Background(), node, types.MergePatchType, []byte(`{"spec":{"unschedulable":false}}`), metav1.PatchOptions{})
	})
	if moved := rebuild(t, ns, []string{"web-0"})["web-0"]; moved.Spec.NodeName == node {
		t.Errorf("web-0 came back on cordoned %s", node)
	}

	// The annotations change: the spec follows.
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, appsv1alpha1.AnnotationRequiredPersistentTopology, corev1.LabelTopologyZone)
	if _, err := client.AppsV1().StatefulSets(ns).Patch(ctx, "web", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "the spec follows the annotations", func(ctx context.Context) (bool, string, error) {
		if err := k8s.Get(ctx, ctrlclient.ObjectKeyFromObject(pps), pps); err != nil {
			return false, err.Error(), nil
		}
		return pps.Spec.RequiredPersistentTopology != nil, fmt.Sprintf("%+v", pps.Spec), nil
	})
	// Deleted with the StatefulSet (the garbage collector, by owner).
	if err := client.AppsV1().StatefulSets(ns).Delete(ctx, "web", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "the generated PersistentPodState gone", func(ctx context.Context) (bool, string, error) {
		err := k8s.Get(ctx, ctrlclient.ObjectKeyFromObject(pps), &appsv1alpha1.PersistentPodState{})
		return apierrors.IsNotFound(err), fmt.Sprint(err), nil
	})
}

// TestPersistentPodStateRetention: WhenScaled drops the records of the
// ordinals a scale-down removed; WhenDeleted keeps them until the
// StatefulSet is deleted, and then says why it has none.
func TestPersistentPodStateRetention(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	for _, c := range []struct {
		name   string
		policy appsv1alpha1.PersistentPodStateRetentionPolicyType
		after  []string
	}{
		{"scaled", appsv1alpha1.PersistentPodStateRetentionPolicyWhenScaled, []string{"scaled-0", "scaled-1"}},
		{"kept", appsv1alpha1.PersistentPodStateRetentionPolicyWhenDeleted, []string{"kept-0", "kept-1", "kept-2", "kept-3"}},
	} {
		create(t, statefulSet(ns, c.name, 4))
		create(t, &appsv1alpha1.PersistentPodState{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: c.name}, Spec: appsv1alpha1.PersistentPodStateSpec{
			TargetReference:                   appsv1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: c.name},
			RequiredPersistentTopology:        &appsv1alpha1.NodeTopologyTerm{NodeTopologyKeys: []string{corev1.LabelTopologyZone}},
			PersistentPodStateRetentionPolicy: c.policy}})
		waitRecords(t, ns, c.name, c.name+"-0", c.name+"-1", c.name+"-2", c.name+"-3")
		if _, err := client.AppsV1().StatefulSets(ns).Patch(ctx, c.name, types.MergePatchType, []byte(`{"spec":{"replicas":2}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		waitNoPods(t, ns, "statefulset.kubernetes.io/pod-name in ("+c.name+"-2,"+c.name+"-3)")
		eventually(t, time.Minute, c.name+" records after the scale-down", func(ctx context.Context) (bool, string, error) {
			pps := &appsv1alpha1.PersistentPodState{}
			if err := k8s.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: c.name}, pps); err != nil {
				return false, err.Error(), nil
			}
			return len(pps.Status.PodStates) == len(c.after), fmt.Sprint(len(pps.Status.PodStates), " records"), nil
		})
	}
	if err := client.AppsV1().StatefulSets(ns).Delete(ctx, "kept", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "records dropped with the StatefulSet, and why", func(ctx context.Context) (bool, string, error) {
		pps := &appsv1alpha1.PersistentPodState{}
		if err := k8s.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: "kept"}, pps); err != nil {
			return false, err.Error(), nil
		}
		c := findCondition(pps.Status.Conditions, "TargetReady")
		return len(pps.Status.PodStates) == 0 && c != nil && c.Reason == "NotFound", fmt.Sprintf("%+v", pps.Status), nil
	})
}

// TestPersistentPodStateValidation: each rule, with its field path, all
// errors at once; a PersistentPodState for a StatefulSet that does not
// exist yet, or for an Advanced StatefulSet, is accepted and says why it
// records nothing.
func TestPersistentPodStateValidation(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	bad := &appsv1alpha1.PersistentPodState{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bad"}, Spec: appsv1alpha1.PersistentPodStateSpec{
		TargetReference:             appsv1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "x"},
		PreferredPersistentTopology: []appsv1alpha1.PreferredTopologyTerm{{Weight: 0, Preference: appsv1alpha1.NodeTopologyTerm{NodeTopologyKeys: []string{""}}}},
	}}
	err := k8s.Create(ctx, bad)
	for _, want := range []string{"spec.targetRef.kind", "must be StatefulSet", "spec.preferredPersistentTopology[0].weight", "spec.preferredPersistentTopology[0].preference.nodeTopologyKeys[0]"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in %v", want, err)
		}
	}
	none := &appsv1alpha1.PersistentPodState{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "none"}, Spec: appsv1alpha1.PersistentPodStateSpec{
		TargetReference: appsv1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "later"}}}
	if err := k8s.Create(ctx, none); err == nil || !strings.Contains(err.Error(), "TopologyConstraint and TopologyPreference cannot be empty at the same time") {
		t.Errorf("no topology: %v", err)
	}
	for _, c := range []struct{ name, apiVersion, reason string }{{"later", "apps/v1", "NotFound"}, {"advanced", "apps.kruise.io/v1beta1", "NotFound"}} {
		pps := &appsv1alpha1.PersistentPodState{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: c.name}, Spec: appsv1alpha1.PersistentPodStateSpec{
			TargetReference:            appsv1alpha1.TargetReference{APIVersion: c.apiVersion, Kind: "StatefulSet", Name: c.name},
			RequiredPersistentTopology: &appsv1alpha1.NodeTopologyTerm{NodeTopologyKeys: []string{corev1.LabelTopologyZone}}}}
		create(t, pps)
		eventually(t, time.Minute, c.name+" condition", func(ctx context.Context) (bool, string, error) {
			if err := k8s.Get(ctx, ctrlclient.ObjectKeyFromObject(pps), pps); err != nil {
				return false, err.Error(), nil
			}
			cond := findCondition(pps.Status.Conditions, "TargetReady")
			return cond != nil && cond.Status == metav1.ConditionFalse && cond.Reason == c.reason, fmt.Sprintf("%+v", pps.Status.Conditions), nil
		})
	}
	// A second one for the same target conflicts; the target cannot change.
	twin := &appsv1alpha1.PersistentPodState{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "twin"}, Spec: appsv1alpha1.PersistentPodStateSpec{
		TargetReference:            appsv1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "later"},
		RequiredPersistentTopology: &appsv1alpha1.NodeTopologyTerm{NodeTopologyKeys: []string{corev1.LabelTopologyZone}}}}
	if err := k8s.Create(ctx, twin); err == nil || !strings.Contains(err.Error(), "targetRef is in conflict with other PersistentPodState later") {
		t.Errorf("a second for the same target: %v", err)
	}
	later := &appsv1alpha1.PersistentPodState{}
	if err := k8s.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: "later"}, later); err != nil {
		t.Fatal(err)
	}
	later.Spec.TargetReference.Name = "other"
	if err := k8s.Update(ctx, later); err == nil || !strings.Contains(err.Error(), "targetRef cannot be modified") {
		t.Errorf("changing the target: %v", err)
	}
}

func findCondition(conditions []metav1.Condition, t string) *metav1.Condition {
	for i := range conditions {
		if conditions[i].Type == t {
			return &conditions[i]
		}
	}
	return nil
}

// TestPersistentPodStateStatefulSetLike: a custom workload the test
// defines (Shard) and drives, whitelisted in OpenKruise's ConfigMap
// format, annotated as OpenKruise's StatefulSets are: its
// PersistentPodState is generated from the annotations, its pods are
// recorded, and a pod its controller rebuilds comes back in its recorded
// zone.
func TestPersistentPodStateStatefulSetLike(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	installCRD(t, "Shard", "shards", false)
	whitelist := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "lifeline-system", Name: "kruise-configuration"},
		Data: map[string]string{"PPS_Watch_Custom_Workload_WhiteList": `{"workloads":[{"Group":"example.lifeline.dev","Version":"v1","Kind":"Shard"}]}`}}
	create(t, whitelist)
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), whitelist) })
	// A whitelisted kind is read by name, with a grant the user gives
	// (the chart's features.persistentPodState.workloads): the manager's
	// own role reads no kind it does not know.
	grant := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "lifeline-manager-pps-workloads"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"example.lifeline.dev"}, Resources: []string{"shards"}, Verbs: []string{"get", "list", "watch"}}}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "lifeline-manager-pps-workloads"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: grant.Name},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "lifeline-manager"}}}
	create(t, grant)
	create(t, binding)
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), binding); _ = k8s.Delete(context.Background(), grant) })

	shard := &unstructured.Unstructured{}
	shard.SetGroupVersionKind(schema.GroupVersionKind{Group: "example.lifeline.dev", Version: "v1", Kind: "Shard"})
	shard.SetNamespace(ns)
	shard.SetName("shard")
	_ = unstructured.SetNestedField(shard.Object, int64(3), "spec", "replicas")
	shard.SetAnnotations(map[string]string{appsv1alpha1.AnnotationAutoGeneratePersistentPodState: "true",
		appsv1alpha1.AnnotationRequiredPersistentTopology: corev1.LabelTopologyZone})
	create(t, shard)
	newPod := func(i int) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("shard-%d", i), Labels: map[string]string{"app": "shard"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "example.lifeline.dev/v1", Kind: "Shard", Name: "shard", UID: shard.GetUID(), Controller: ptr.To(true)}}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "nginx:1.27"}}}}
	}
	for i := 0; i < 3; i++ {
		create(t, newPod(i))
	}
	// The whitelist is reread every few seconds, and the kind watched
	// from then on.
	want := appsv1alpha1.TargetReference{APIVersion: "example.lifeline.dev/v1", Kind: "Shard", Name: "shard"}
	eventually(t, time.Minute, "a PersistentPodState generated for the whitelisted kind", func(ctx context.Context) (bool, string, error) {
		got := &appsv1alpha1.PersistentPodState{}
		if err := k8s.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: "shard"}, got); err != nil {
			return false, err.Error(), nil
		}
		owner := metav1.GetControllerOf(got)
		return got.Spec.TargetReference == want && owner != nil && owner.UID == shard.GetUID(), fmt.Sprintf("%+v owned by %+v", got.Spec, owner), nil
	})
	recorded := waitRecords(t, ns, "shard", "shard-0", "shard-1", "shard-2")
	// The shard's controller (the test) rebuilds shard-0.
	if err := client.CoreV1().Pods(ns).Delete(ctx, "shard-0", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "shard-0 gone", func(context.Context) (bool, string, error) { return readPod(t, ns, "shard-0") == nil, "", nil })
	create(t, newPod(0))
	zone := recorded.Status.PodStates["shard-0"].NodeTopologyLabels[corev1.LabelTopologyZone]
	pod := waitPod(t, ns, "shard-0", "rebuilt and Ready", func(p *corev1.Pod) bool { return podCondition(p, corev1.PodReady) == corev1.ConditionTrue })
	if zone == "" || pod.Spec.NodeSelector[corev1.LabelTopologyZone] != zone || nodeZone(t, pod.Spec.NodeName) != zone {
		t.Errorf("shard-0 came back on %s with selector %v, recorded zone %q", pod.Spec.NodeName, pod.Spec.NodeSelector, zone)
	}
}
