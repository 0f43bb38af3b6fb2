package state

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
)

const zone, host = "topology.kubernetes.io/zone", "kubernetes.io/hostname"

var spec = appsv1alpha1.PersistentPodStateSpec{
	RequiredPersistentTopology:  &appsv1alpha1.NodeTopologyTerm{NodeTopologyKeys: []string{zone}},
	PreferredPersistentTopology: []appsv1alpha1.PreferredTopologyTerm{{Weight: 10, Preference: appsv1alpha1.NodeTopologyTerm{NodeTopologyKeys: []string{host}}}},
	PersistentPodAnnotations:    []appsv1alpha1.PersistentPodAnnotation{{Key: "ip"}},
}

func node(name, z string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{zone: z, host: name}}}
}

func pod(name, nodeName string, ready bool) *corev1.Pod {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{"ip": "10.0.0." + name[len(name)-1:]}},
		Spec:   corev1.PodSpec{NodeName: nodeName},
		Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}}}
}

func TestStatusRecordsReadyPlacedPods(t *testing.T) {
	nodes := map[string]*corev1.Node{"n1": node("n1", "a"), "n2": node("n2", "b")}
	s := Snapshot{Spec: spec, Generation: 2, Replicas: 4, Nodes: nodes, Pods: map[string]*corev1.Pod{
		"db-0": pod("db-0", "n1", true),
		"db-1": pod("db-1", "n2", false), // not ready: not yet
		"db-2": pod("db-2", "", true),    // no node: not yet
		"db-3": pod("db-3", "n9", true),  // node unknown: not yet
	}}
	got, changes := Status(s)
	want := map[string]appsv1alpha1.PodState{"db-0": {NodeName: "n1", NodeTopologyLabels: map[string]string{zone: "a", host: "n1"}, Annotations: map[string]string{"ip": "10.0.0.0"}}}
	if !reflect.DeepEqual(got.PodStates, want) || got.ObservedGeneration != 2 || len(changes) != 1 {
		t.Fatalf("states %+v, changes %+v", got.PodStates, changes)
	}
	// Nothing changed: nothing rewritten.
	s.Status = got
	if again, changes := Status(s); len(changes) != 0 || !reflect.DeepEqual(again, got) {
		t.Errorf("a second pass changed %+v", changes)
	}
	// Moved to another node: rewritten.
	s.Pods["db-0"] = pod("db-0", "n2", true)
	if moved, changes := Status(s); len(changes) != 1 || moved.PodStates["db-0"].NodeName != "n2" {
		t.Errorf("after a move: %+v", moved.PodStates)
	}
}

func TestStatusRetention(t *testing.T) {
	recorded := map[string]appsv1alpha1.PodState{"db-0": {NodeName: "n1"}, "db-3": {NodeName: "n1"}, "db-4": {NodeName: "n1"}, "odd": {NodeName: "n1"}}
	for name, c := range map[string]struct {
		policy   appsv1alpha1.PersistentPodStateRetentionPolicyType
		replicas int32
		start    int
		reserved map[int]bool
		pods     []string
		gone     bool
		want     []string
	}{
		"scaled to 3 drops 3 and 4":          {"", 3, 0, nil, nil, false, []string{"db-0", "odd"}},
		"a pod still running keeps its":      {appsv1alpha1.PersistentPodStateRetentionPolicyWhenScaled, 3, 0, nil, []string{"db-4"}, false, []string{"db-0", "db-4", "odd"}},
		"reserved ordinals shift the range":  {"", 3, 0, map[int]bool{1: true}, nil, false, []string{"db-0", "db-3", "odd"}},
		"WhenDeleted keeps all while scaled": {appsv1alpha1.PersistentPodStateRetentionPolicyWhenDeleted, 1, 0, nil, nil, false, []string{"db-0", "db-3", "db-4", "odd"}},
		"workload gone drops all":            {appsv1alpha1.PersistentPodStateRetentionPolicyWhenDeleted, 5, 0, nil, nil, true, nil},
		// OpenKruise counts from 0: db-3 and db-4 would go.
		"ordinals.start shifts the range": {"", 2, 3, nil, nil, false, []string{"db-3", "db-4", "odd"}},
	} {
		s := Snapshot{Spec: spec, Status: appsv1alpha1.PersistentPodStateStatus{PodStates: recorded}, Replicas: c.replicas, Start: c.start, Reserved: c.reserved,
			WorkloadGone: c.gone, Pods: map[string]*corev1.Pod{}}
		s.Spec.PersistentPodStateRetentionPolicy = c.policy
		for _, p := range c.pods {
			s.Pods[p] = pod(p, "", false)
		}
		got, _ := Status(s)
		var names []string
		for _, n := range []string{"db-0", "db-3", "db-4", "odd"} {
			if _, ok := got.PodStates[n]; ok {
				names = append(names, n)
			}
		}
		if !reflect.DeepEqual(names, c.want) {
			t.Errorf("%s: kept %v, want %v", name, names, c.want)
		}
	}
	if len(recorded) != 4 {
		t.Error("Status changed the status it was given")
	}
}

// The reference's example: required zone, preferred host with weight 10.
func TestPlacementFor(t *testing.T) {
	st := appsv1alpha1.PodState{NodeName: "node-x", NodeTopologyLabels: map[string]string{zone: "cn-beijing-a", host: "node-x"}}
	p, ok := PlacementFor(spec, st)
	if !ok || !reflect.DeepEqual(p.NodeSelector, map[string]string{zone: "cn-beijing-a"}) || len(p.Preferred) != 1 ||
		p.Preferred[0].Weight != 10 || p.Preferred[0].Preference.MatchExpressions[0].Values[0] != "node-x" {
		t.Fatalf("placement %+v", p)
	}
	existing := corev1.PreferredSchedulingTerm{Weight: 1, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "disk", Operator: corev1.NodeSelectorOpExists}}}}
	target := &corev1.Pod{Spec: corev1.PodSpec{NodeSelector: map[string]string{"os": "linux", zone: "old"},
		Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{existing}}}}}
	p.Apply(target)
	if target.Spec.NodeSelector[zone] != "cn-beijing-a" || target.Spec.NodeSelector["os"] != "linux" ||
		len(target.Spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution) != 2 {
		t.Errorf("applied %+v", target.Spec)
	}
	if _, ok := PlacementFor(spec, appsv1alpha1.PodState{NodeName: "n"}); ok {
		t.Error("a record without topology placed a pod")
	}
	if p, ok := PlacementFor(spec, appsv1alpha1.PodState{NodeTopologyLabels: map[string]string{host: "n"}}); !ok || p.NodeSelector != nil || len(p.Preferred) != 1 {
		t.Errorf("only the host recorded: %+v", p)
	}
}

func TestGenerated(t *testing.T) {
	target := appsv1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db"}
	on := func(kv ...string) map[string]string {
		m := map[string]string{appsv1alpha1.AnnotationAutoGeneratePersistentPodState: "true"}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	spec, wanted, complete := Generated(on(appsv1alpha1.AnnotationRequiredPersistentTopology, zone,
		appsv1alpha1.AnnotationPreferredPersistentTopology, host+",rack", appsv1alpha1.AnnotationPersistentPodAnnotations, "ip"), target)
	if !wanted || !complete || spec.TargetReference != target || spec.RequiredPersistentTopology.NodeTopologyKeys[0] != zone ||
		spec.PreferredPersistentTopology[0].Weight != 100 || len(spec.PreferredPersistentTopology[0].Preference.NodeTopologyKeys) != 2 ||
		spec.PersistentPodAnnotations[0].Key != "ip" {
		t.Errorf("generated %+v", spec)
	}
	if _, wanted, complete := Generated(on(), target); !wanted || complete {
		t.Error("no topology: generation must wait, not delete")
	}
	if _, wanted, _ := Generated(map[string]string{appsv1alpha1.AnnotationAutoGeneratePersistentPodState: "True"}, target); wanted {
		t.Error(`only "true" turns generation on`)
	}
}

func TestOrdinal(t *testing.T) {
	for name, want := range map[string]int{"db-0": 0, "my-db-12": 12, "db": -1, "db-x": -1, "db-1a": -1, "db-": -1} {
		got, ok := Ordinal(name)
		if (want < 0) == ok || (ok && got != want) {
			t.Errorf("%s: %d %v, want %d", name, got, ok, want)
		}
	}
}
