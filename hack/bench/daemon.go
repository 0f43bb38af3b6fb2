package main

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
)

// The nodes of the DaemonSet suites: registered for each suite, labelled
// for its node selector (every one; every other one for the last step),
// and tainted so that no other pod goes there.
const (
	daemonLabel = "lifeline.dev/bench-daemon"
	daemonKeep  = "lifeline.dev/bench-daemon-keep"
)

func isDaemon(s suite) bool { return s.workload == "DaemonSet" || s.workload == "AdvancedDaemonSet" }

// runDaemonSuite puts a DaemonSet through its three steps on nodes of its
// own: a pod on each node, a rolling update with maxUnavailable 10% (in
// place or not), and half the nodes leaving its node selector.
func (b *bench) runDaemonSuite(ctx context.Context, s suite) error {
	n := b.o.daemonNodes
	names, err := b.daemonNodes(ctx, s.name, n)
	if err != nil {
		return err
	}
	defer b.dropDaemonNodes(context.Background(), names)
	ns, err := b.namespace(ctx, "bench-"+s.name)
	if err != nil {
		return err
	}
	w := workload{suite: s, ns: ns}
	half := (n + 1) / 2
	for _, st := range []struct {
		step, about string
		change      func(context.Context) error
		desired     int
		pods        int
	}{
		{stepUp, fmt.Sprintf("a pod on each of %d nodes", n), func(ctx context.Context) error { return w.createDaemon(ctx, b.k8s) }, n, n},
		{stepUpdate, fmt.Sprintf("of %d, maxUnavailable 10%%", n), func(ctx context.Context) error { return w.setImage(ctx, b.k8s, "nginx:1.28") }, n, n},
		{stepDown, fmt.Sprintf("%d→%d nodes selected", n, half), func(ctx context.Context) error {
			return w.patch(ctx, b.k8s, fmt.Sprintf(`{"spec":{"template":{"spec":{"nodeSelector":{%q:"true"}}}}}`, daemonKeep))
		}, half, n - half},
	} {
		fmt.Printf("%s: %s %s\n", s.label(), st.step, st.about)
		r, err := b.measure(ctx, s, ns, st.pods, st.change, func(ctx context.Context) (bool, error) { return w.daemonSettled(ctx, b.k8s, int32(st.desired)) })
		if err != nil {
			return fmt.Errorf("%s: %w", st.step, err)
		}
		r.Step, r.StepDetail = st.step, st.about
		b.report.Rollouts = append(b.report.Rollouts, r)
	}
	return b.dropNamespace(ctx, ns)
}

// daemonNodes registers n simulated nodes for a DaemonSet suite and waits
// until they are Ready with only the suite's taint left.
func (b *bench) daemonNodes(ctx context.Context, suite string, n int) ([]string, error) {
	var names []string
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("%s-%03d", suite, i)
		labels := map[string]string{corev1.LabelHostname: name, "type": "kwok", daemonLabel: "true"}
		if i%2 == 0 {
			labels[daemonKeep] = "true"
		}
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"}},
			Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: daemonLabel, Effect: corev1.TaintEffectNoSchedule}}}}
		if _, err := b.client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return names, err
		}
		names = append(names, name)
	}
	return names, wait.PollUntilContextTimeout(ctx, time.Second, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := b.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: daemonLabel + "=true"})
		if err != nil {
			return false, nil
		}
		ready := 0
		for _, node := range list.Items {
			if len(node.Spec.Taints) == 1 {
				ready++
			}
		}
		return ready == n, nil
	})
}

// dropDaemonNodes deletes a suite's nodes and waits until they are gone,
// so that the next suite does not pay for their removal.
func (b *bench) dropDaemonNodes(ctx context.Context, names []string) {
	for _, name := range names {
		_ = b.client.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{})
	}
	_ = wait.PollUntilContextTimeout(ctx, time.Second, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := b.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: daemonLabel + "=true"})
		return err == nil && len(list.Items) == 0, nil
	})
}

// createDaemon creates the suite's DaemonSet over its nodes: the template
// every suite uses, maxUnavailable 10%.
func (w workload) createDaemon(ctx context.Context, k8s ctrlclient.Client) error {
	labels := map[string]string{"app": "bench"}
	tmpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "bench"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "nginx:1.27"}},
			NodeSelector: map[string]string{daemonLabel: "true"},
			Tolerations:  []corev1.Toleration{{Key: daemonLabel, Operator: corev1.TolerationOpExists}}},
	}
	ten := intstr.FromString("10%")
	meta := metav1.ObjectMeta{Namespace: w.ns, Name: "bench"}
	selector := &metav1.LabelSelector{MatchLabels: labels}
	if w.workload == "DaemonSet" {
		return k8s.Create(ctx, &appsv1.DaemonSet{ObjectMeta: meta, Spec: appsv1.DaemonSetSpec{Selector: selector, Template: tmpl,
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: &ten}}}})
	}
	typ := appsv1beta1.StandardRollingUpdateType
	if w.inPlace {
		typ = appsv1beta1.InplaceRollingUpdateType
	}
	return k8s.Create(ctx, &appsv1beta1.DaemonSet{ObjectMeta: meta, Spec: appsv1beta1.DaemonSetSpec{Selector: selector, Template: tmpl,
		UpdateStrategy: appsv1beta1.DaemonSetUpdateStrategy{Type: appsv1beta1.RollingUpdateDaemonSetStrategyType,
			RollingUpdate: &appsv1beta1.RollingUpdateDaemonSet{Type: typ, MaxUnavailable: &ten}}}})
}

// daemonSettled: the status says each of desired nodes runs an available
// pod of the update revision, and no other pod is left in the namespace.
func (w workload) daemonSettled(ctx context.Context, k8s ctrlclient.Client, desired int32) (bool, error) {
	obj := w.object()
	if err := k8s.Get(ctx, ctrlclient.ObjectKeyFromObject(obj), obj); err != nil {
		return false, nil
	}
	var gen, observed int64
	var st [5]int32 // desired, current, updated, available, misscheduled
	switch o := obj.(type) {
	case *appsv1.DaemonSet:
		s := o.Status
		gen, observed, st = o.Generation, s.ObservedGeneration, [5]int32{s.DesiredNumberScheduled, s.CurrentNumberScheduled, s.UpdatedNumberScheduled, s.NumberAvailable, s.NumberMisscheduled}
	case *appsv1beta1.DaemonSet:
		s := o.Status
		gen, observed, st = o.Generation, s.ObservedGeneration, [5]int32{s.DesiredNumberScheduled, s.CurrentNumberScheduled, s.UpdatedNumberScheduled, s.NumberAvailable, s.NumberMisscheduled}
	}
	if gen != observed || st != [5]int32{desired, desired, desired, desired, 0} {
		return false, nil
	}
	list := &corev1.PodList{}
	if err := k8s.List(ctx, list, ctrlclient.InNamespace(w.ns)); err != nil {
		return false, nil
	}
	return len(list.Items) == int(desired), nil
}
